#!/usr/bin/env bash
# ci/format.sh --check, planted: it names a misformatted file and exits 1, and passes a file
# that is formatted as .clang-format says.
set -euo pipefail
format=$(cd "$(dirname "$0")/.." && pwd)/ci/format.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf 'int  main( ){return 0;}\n' >"$dir/bad.cc"
printf 'int main() {\n  return 0;\n}\n' >"$dir/good.cc"
if out=$(bash "$format" --check "$dir/bad.cc" "$dir/good.cc"); then
  echo "FAIL: a misformatted file passed: $out"; exit 1
fi
grep -q "^$dir/bad.cc: differs" <<<"$out" || { echo "FAIL: bad.cc not named: $out"; exit 1; }
if grep -q "good.cc" <<<"$out"; then echo "FAIL: good.cc named: $out"; exit 1; fi
bash "$format" --check "$dir/good.cc" >/dev/null || { echo "FAIL: a formatted file failed"; exit 1; }
echo "format check: 2 passed, 0 failed"
