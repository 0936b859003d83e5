#!/usr/bin/env bash
# clang-format over the tree's C++, CUDA and HIP sources (.clang-format at the root), with
# Debian 12's clang-format 14 (ci/deps.sh installs it): another version formats some
# constructs differently. `ci/format.sh` rewrites the files in place; `ci/format.sh --check
# [FILE...]` changes nothing, names each file (of the tree, or those given) whose formatting
# differs and exits 1 if there is one. The tests format.tree and format.check_fails run it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-fix}
case "$mode" in fix|--check) ;; *) echo "usage: ci/format.sh [--check [FILE...]]" >&2; exit 2 ;; esac
command -v clang-format >/dev/null ||
  { echo "ci/format.sh: clang-format is not installed (apt-get install clang-format)" >&2; exit 2; }
shift || true
if [ $# -gt 0 ]; then
  files=("$@")
else
  cd "$root"
  mapfile -d '' files < <(find src validators tests examples \
    \( -name build -o -name '.trainlock' \) -prune -o \
    -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.hip' \) -print0 | sort -z)
fi
style="--style=file:$root/.clang-format"
if [ "$mode" = fix ]; then
  clang-format "$style" -i "${files[@]}"
  exit 0
fi
# One clang-format for every file: it prints "file:line:col: warning: ..." for each difference.
differ=$(clang-format "$style" --dry-run "${files[@]}" 2>&1 | grep -oE '^[^:]+:[0-9]+:[0-9]+: (warning|error)' | cut -d: -f1 | sort -u || true)
for f in $differ; do echo "$f: differs from .clang-format (run ci/format.sh)"; done
echo "format: ${#files[@]} files checked, $(printf '%s' "$differ" | grep -c . || true) differ"
[ -z "$differ" ]
