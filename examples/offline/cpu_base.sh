#!/usr/bin/env bash
# The base image of the cpu image (examples/offline/image-path.sh and the CpuImage test), made
# here from Debian 12 packages (no prebuilt image is downloaded): mmdebstrap --variant=minbase
# of bookworm from deb.debian.org with python3 and python3-venv, plus exactly the shared
# libraries VALIDATOR loads (as ldd resolves them on this machine: LibTorch 1.13 and what it
# links, the sanitizer runtimes of an ASan/UBSan build), copied from this machine's Debian
# packages after `dpkg --verify` has checked them unchanged. Not the packages themselves:
# Debian's libtorch1.13 depends on opencv, gdal, qt5 and ffmpeg packages whose data, plugins
# and further dependencies (Mesa's drivers, fonts, proj and gdal data) the validator never
# loads; installed whole they make a root file system of about 960 MB instead of about 640 MB
# (bench/results/2026-12-02-cpu-base-size/). The root file system is committed with buildah
# and pushed into a docker-registry data directory as trainlock/bookworm-validator:1.
#
# Usage: cpu_base.sh VALIDATOR CACHE_DIR
# Prints the directory that holds registry/ (the seeded data directory, to copy with `cp -al`
# and serve). The work is done once per library set and cached under CACHE_DIR (the build
# directory's test-images/); concurrent callers wait on a lock instead of building it twice.
set -euo pipefail
# Descriptors inherited from the caller are closed, and mmdebstrap runs without this script's
# own: it hands apt the next free descriptor and apt's hooks run under dash, which reads only
# single-digit ones ("Bad fd number").
for fd in "/proc/$$/fd"/*; do
  fd=${fd##*/}
  if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done
validator=$1
cache=$2
mkdir -p "$cache"

# The validator's libraries: "SONAME => PATH" as ldd resolves them here, each PATH a file or a
# link to one. Files of merged-/usr packages are registered under /lib, so that spelling is
# asked of dpkg too (dpkg -S names the owners of the paths it knows).
libs=$(ldd "$validator" | awk '/=> \//{print $3}' | sort -u)
files=$(echo "$libs" | xargs -r readlink -f | sort -u)
mapfile -t file_list <<<"$files"
owners=$(
  { dpkg -S "${file_list[@]}" 2>/dev/null || true; dpkg -S "${file_list[@]#/usr}" 2>/dev/null || true; } |
    cut -d: -f1 | sort -u
)
mapfile -t owner_list <<<"$owners"
# The bytes copied in are Debian's: dpkg --verify names every file of the owners whose md5sum
# differs from the package's.
changed=$(dpkg --verify "${owner_list[@]}" 2>/dev/null | awk '$1 ~ /5/ {print $NF}' | grep -xF "$files" || true)
if [ -n "$changed" ]; then
  echo "cpu_base.sh: these libraries differ from their Debian packages: $changed" >&2
  exit 1
fi
packages=python3,python3-venv
key=$( (echo "$packages"; echo "$libs"; cat "$0") | sha256sum | cut -c1-16)
dir="$cache/cpu-base-$key"

exec 9>"$cache/cpu-base.lock"
flock 9
if [ -f "$dir/done" ]; then
  echo "$dir"
  exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
log="$dir/build.log"
# Everything below goes to the log; a failing step prints it and exits (set -e holds here,
# unlike in a `{ ...; } || handler` list, where bash ignores it).
exec 3>&1 4>&2 >"$log" 2>&1
on_error() {
  local status=$?
  exec 1>&3 2>&4
  cat "$log" >&2
  exit "$status"
}
trap on_error ERR
echo "packages: $packages"
echo "libraries of $validator, from: $(paste -sd, - <<<"$owners")"
start=$(date +%s)
hooks=()
if command -v eatmydata >/dev/null && [ -d /usr/share/mmdebstrap/hooks/eatmydata ]; then
  hooks=(--hook-dir=/usr/share/mmdebstrap/hooks/eatmydata)
fi
# Each library the minbase and python3 do not already hold goes in at the path ldd found it
# (its content: an alternatives link such as liblapack.so.3 becomes the file), then ldconfig.
echo "$libs" > "$dir/libraries"
# The host's apt cache (ci/deps.sh filled it with most of these) saves the downloads. The hooks
# are single-quoted on purpose: mmdebstrap's shell expands "$1" (the root being built).
# shellcheck disable=SC2016
mmdebstrap --variant=minbase --include="$packages" "${hooks[@]}" \
  --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
  --setup-hook='sync-in /var/cache/apt/archives/ /var/cache/apt/archives/' \
  --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
  --customize-hook="while read -r lib; do [ -e \"\$1\$lib\" ] || install -D -m 644 \"\$lib\" \"\$1\$lib\"; done < '$dir/libraries'" \
  --customize-hook='chroot "$1" ldconfig' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  bookworm "$dir/rootfs.tar" http://deb.debian.org/debian 3>&- 4>&- 9>&-
echo "rootfs: $(( $(date +%s) - start )) s, $(du -b "$dir/rootfs.tar" | cut -f1) bytes as a tar;" \
  "$(tar -tvf "$dir/rootfs.tar" | awk '{n++; s+=$3} END {print n " entries, " s " bytes of files"}')"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' \
  "$dir/registry" "$port" > "$dir/registry.yml"
docker-registry serve "$dir/registry.yml" > "$dir/registry.log" 2>&1 &
registry=$!
trap 'kill "$registry" 2>/dev/null || true' EXIT
python3 - "$port" <<'PY'
import sys, time, urllib.request
for _ in range(100):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/v2/", timeout=1)
        break
    except Exception:
        time.sleep(0.2)
PY
b=(buildah --root "$dir/storage/root" --runroot "$dir/storage/run" --storage-driver vfs)
c=$("${b[@]}" from scratch)
"${b[@]}" add "$c" "$dir/rootfs.tar" / > /dev/null
"${b[@]}" config --arch amd64 --os linux \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$c"
"${b[@]}" commit --timestamp 0 "$c" bookworm-validator > /dev/null
"${b[@]}" push --disable-compression --tls-verify=false bookworm-validator \
  "docker://127.0.0.1:$port/trainlock/bookworm-validator:1"
kill "$registry"
wait "$registry" 2>/dev/null || true
trap - EXIT
"${b[@]}" rm --all > /dev/null
rm -rf "$dir/storage" "$dir/rootfs.tar"
echo "seeded: $(( $(date +%s) - start )) s; blobs (bytes):" \
  "$(find "$dir/registry" -path '*/blobs/*' -name data -printf '%s\n' | sort -n | paste -sd' ' -)"
trap - ERR
exec 1>&3 2>&4 3>&- 4>&-
touch "$dir/done"
echo "$dir"
