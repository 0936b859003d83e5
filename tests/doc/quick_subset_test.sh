#!/usr/bin/env bash
# README's quick test subset fails when a test fails: its own `ctest --test-dir build -L quick`
# line, run against a copy of this build's test lists whose trainlock binaries are planted
# broken, exits non-zero naming the failed doc-tests; and run against a build directory without
# tests (what ci/demo.sh's build was before it registered the doc-tests, where ctest printed
# "No tests were found!!!" and exited 0) it exits non-zero too.
# Usage: quick_subset_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$1
build_dir=$2
line=$(grep -m1 -E '^\$ ctest --test-dir build -L quick' "$source_dir/README.md") || {
  echo "FAIL: README.md shows no \`ctest --test-dir build -L quick\` line"
  exit 1
}
command=${line#\$ }
command=${command%%#*}
read -ra words <<<"$command"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# The README's command with `--test-dir build` pointed at $1; its output in $out, exit in $rc.
run_readme() {
  local args=() i=0
  while [ "$i" -lt "${#words[@]}" ]; do
    if [ "${words[i]}" = "--test-dir" ]; then
      args+=(--test-dir "$1")
      i=$((i + 2))
    else
      args+=("${words[i]}")
      i=$((i + 1))
    fi
  done
  rc=0
  out=$("${args[@]}" 2>&1) || rc=$?
}

# The planted build: the same test lists, with the binaries' directory replaced by one whose
# trainlock and trainlock-validate exit 70 whatever they are asked.
mkdir -p "$dir/bin"
for program in trainlock trainlock-validate; do
  printf '#!/bin/sh\necho "planted: a broken %s" >&2\nexit 70\n' "$program" >"$dir/bin/$program"
  chmod +x "$dir/bin/$program"
done
(cd "$build_dir" && find . -name CTestTestfile.cmake -not -path './fuzz/*') |
  while read -r list; do
    mkdir -p "$dir/build/$(dirname "$list")"
    sed "s|\"$build_dir/bin\"|\"$dir/bin\"|g" "$build_dir/$list" >"$dir/build/$list"
  done
grep -rq "\"$dir/bin\"" "$dir/build" || {
  echo "FAIL: no test in $build_dir passes the binaries' directory $build_dir/bin"
  exit 1
}

failures=0
run_readme "$dir/build"
if [ "$rc" -eq 0 ]; then
  echo "FAIL: the quick subset passed with broken binaries:"
  echo "$out"
  failures=$((failures + 1))
fi
for test in doc.README doc.commands doc.names; do
  grep -Eq "[0-9]+ - $test \(Failed\)" <<<"$out" || {
    echo "FAIL: $test is not named as failed:"
    echo "$out"
    failures=$((failures + 1))
  }
done
# The runner's own rules need no binary: they still pass, so the failures are the plant's.
grep -Eq "doc\.runner \.+ +Passed" <<<"$out" || {
  echo "FAIL: doc.runner did not pass beside the broken binaries:"
  echo "$out"
  failures=$((failures + 1))
}

mkdir "$dir/empty"
run_readme "$dir/empty"
if [ "$rc" -eq 0 ]; then
  echo "FAIL: the quick subset passed in a build directory without tests:"
  echo "$out"
  failures=$((failures + 1))
fi
grep -q "No tests were found" <<<"$out" || {
  echo "FAIL: an empty selection is not reported: $out"
  failures=$((failures + 1))
}

[ "$failures" -eq 0 ] || exit 1
echo "quick subset: fails with broken binaries and with no tests"
