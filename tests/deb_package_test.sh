#!/usr/bin/env bash
# Specification of the `trainlock` Debian package (docs/install.md), as an operator installs it:
# CPack builds it from BUILD_DIR (component cli); its Depends name the libraries the program
# loads; it installs with `apt-get install ./trainlock_*.deb` in a clean Debian 12 root that
# mmdebstrap makes from Debian's mirror; and there `trainlock gate` decides on a report with
# the lock alone beside it, as on a node (docs/fleet.md, "What each node needs"): a report of
# this lock passes, one of another config is refused.
#
# Usage: deb_package_test.sh BUILD_DIR SOURCE_DIR. Exit 77 (ctest's skip) without root (apt-get
# in the root needs it), mmdebstrap or dpkg-shlibdeps.
set -euo pipefail
build=$1
source=$2
skip() {
  echo "SKIP: $*"
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
[ "$(id -u)" -eq 0 ] || skip "needs root: mmdebstrap's root mode and apt-get in the new root"
for tool in cpack mmdebstrap dpkg-deb dpkg-shlibdeps chroot; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (ci/deps.sh installs it)"
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The package, built by the project's own build.
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/package" -D CPACK_COMPONENTS_ALL=cli \
  >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; fail "cpack could not build the package"; }
debs=("$work"/package/trainlock_*.deb)
[ -f "${debs[0]}" ] || fail "cpack wrote no trainlock_*.deb: $(ls "$work/package")"
deb=${debs[0]}
echo "built $(basename "$deb")"

# Its Depends: each library the program links, from dpkg-shlibdeps.
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libyaml-cpp0.7 libcurl4 libssl3 libtomlplusplus3 libstdc++6 libc6; do
  grep -q "\b$lib\b" <<<"$depends" || fail "Depends does not name $lib: $depends"
done
contents=$(dpkg-deb -c "$deb")
for file in ./usr/bin/trainlock ./usr/share/bash-completion/completions/trainlock \
  ./usr/share/doc/trainlock/README.md; do
  grep -q " $file\$" <<<"$contents" || fail "the package has no $file"
done

# What a node holds: the lock alone, and reports of it (the tiny example's, as the gate tests
# make them: the fixture with this lock's and config's hashes).
node="$work/node"
mkdir -p "$node/etc/trainlock/tiny" "$node/reports"
cp "$source/examples/tiny/trainlock.lock" "$node/etc/trainlock/tiny/"
python3 - "$source" "$node" <<'PY'
import hashlib, json, re, sys
source, node = sys.argv[1], sys.argv[2]
report = json.load(open(f"{source}/tests/fixtures/reports/tiny-report.json"))
config = open(f"{source}/examples/tiny/configs/tiny.yaml", "rb").read()
report["config_sha256"] = hashlib.sha256(config).hexdigest()
json.dump(report, open(f"{node}/reports/pass.json", "w"))
report["config_sha256"] = "a" * 64
json.dump(report, open(f"{node}/reports/other-config.json", "w"))
PY

# A clean Debian 12 root with apt; the package installed there from the file, its dependencies
# from the mirror (the host's apt cache first); then the gate, as a node runs it. The hooks'
# "$1" is the new root, expanded by mmdebstrap's shell.
hooks=()
if command -v eatmydata >/dev/null && [ -d /usr/share/mmdebstrap/hooks/eatmydata ]; then
  hooks=(--hook-dir=/usr/share/mmdebstrap/hooks/eatmydata)
fi
# shellcheck disable=SC2016
gate='ASAN_OPTIONS=detect_leaks=0 chroot "$1" trainlock gate /node/reports/REPORT --lock /node/etc/trainlock/tiny/trainlock.lock --allow-unsigned'
# shellcheck disable=SC2016
mmdebstrap --variant=apt "${hooks[@]}" \
  --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
  --setup-hook='sync-in /var/cache/apt/archives/ /var/cache/apt/archives/' \
  --customize-hook="copy-in $deb /tmp" \
  --customize-hook='mkdir -p "$1"/node' \
  --customize-hook="sync-in $node /node" \
  --customize-hook='chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y /tmp/'"$(basename "$deb")" \
  --customize-hook='chroot "$1" trainlock --version > '"$work/version.out" \
  --customize-hook="${gate/REPORT/pass.json} > $work/pass.out 2>&1; echo \$? > $work/pass.status" \
  --customize-hook="${gate/REPORT/other-config.json} > $work/other.out 2>&1; echo \$? > $work/other.status" \
  bookworm /dev/null http://deb.debian.org/debian >"$work/mmdebstrap.log" 2>&1 ||
  { tail -n 40 "$work/mmdebstrap.log"; fail "mmdebstrap could not make the root or install the package"; }

echo "installed: $(cat "$work/version.out")"
[ "$(cat "$work/pass.status")" = 0 ] || fail "the gate refused a report of this lock: $(cat "$work/pass.out")"
grep -q "^gate: pass: " "$work/pass.out" || fail "no pass line: $(cat "$work/pass.out")"
grep -q "relying on the report for " "$work/pass.out" ||
  fail "the pass does not name the files it relied on: $(cat "$work/pass.out")"
[ "$(cat "$work/other.status")" = 1 ] ||
  fail "a report of another config was not refused: $(cat "$work/other.status") $(cat "$work/other.out")"
echo "PASS: installed from the package in a clean Debian 12 root; the gate passed and refused there"
