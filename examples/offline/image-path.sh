#!/usr/bin/env bash
# The whole image path of the cpu target on one machine, offline but for Debian's package
# archive (the base's packages): a base image made here from Debian packages (cpu_base.sh), a
# registry (Debian's docker-registry) and a Python package index
# (tests/servers/pypi_server.py --demo) on loopback, then `trainlock lock`, `image build` (two
# builds, one digest, pushed and recorded in the lock), skopeo reading the pushed digest back
# from the registry, `validate --image` (the validator inside the image, the report bound to
# the digest buildah resolved and signed) and `gate`. Loopback registries are plain HTTP and
# buildah's storage is the project's .trainlock/containers, so no TLS or storage option is
# given. The CpuImage test (tests/image_cpu_e2e_test.cc) runs this script.
#
# Usage: examples/offline/image-path.sh [--project DIR] [--work DIR] [--bin DIR] [--cache DIR]
#        examples/offline/image-path.sh --recheck WORK [--bin DIR]
#   --project DIR  the project (default: a copy of examples/tiny in WORK); its cpu target's
#                  base and python-index lines are pointed at the loopback registry and index
#   --work DIR     where the registry data, key and report go (default: a new temporary one)
#   --bin DIR      where trainlock and trainlock-validate are (default: build/bin, where
#                  ci/demo.sh builds them)
#   --cache DIR    cpu_base.sh's cache (default: BIN/../test-images, the CpuImage test's)
#   --recheck WORK later, in a new shell: serves WORK's registry and index again on the ports
#                  the lock names (WORK/serve.env) and runs `trainlock image build PROJECT
#                  --target cpu --check`, which rebuilds from the lock alone (its recorded
#                  SOURCE_DATE_EPOCH and validator) and compares with the digest it records;
#                  exits with that command's code
# Prints each step and `registry: HOST:PORT`, `index: URL`, `pushed: DIGEST` lines; stops the
# registry and index when it ends. Exit 0 when the gate passes, 3 when a tool is missing
# (named with the Debian packages to install for this path), else the failing step's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
project='' work='' bin="$source_dir/build/bin" cache='' recheck=''
while [ $# -gt 0 ]; do
  case "$1" in
    --project) project=$2; shift 2;;
    --work) work=$2; shift 2;;
    --bin) bin=$2; shift 2;;
    --cache) cache=$2; shift 2;;
    --recheck) recheck=$2; shift 2;;
    *) echo "usage: $0 [--project DIR] [--work DIR] [--bin DIR] [--cache DIR] | --recheck WORK [--bin DIR]" >&2
       exit 2;;
  esac
done
cache=${cache:-$bin/../test-images}

# The tools this path runs, each with its Debian package: a missing one is named with the
# packages to install for this path alone (ci/deps.sh installs the whole suite's tools).
declare -A package_of=([buildah]=buildah [docker-registry]=docker-registry [skopeo]=skopeo
  [python3]=python3 [mmdebstrap]=mmdebstrap [dpkg]=dpkg [flock]=util-linux)
missing=() packages=()
for tool in buildah docker-registry skopeo python3 mmdebstrap dpkg flock; do
  if ! command -v "$tool" >/dev/null; then
    missing+=("$tool")
    packages+=("${package_of[$tool]}")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "$0: not installed: ${missing[*]}; install them (this path's tools only): apt-get install ${packages[*]}" >&2
  exit 3
fi
for program in trainlock trainlock-validate; do
  if [ ! -x "$bin/$program" ]; then
    echo "$0: no $bin/$program: build it (bash ci/demo.sh builds build/bin) or give --bin DIR" >&2
    exit 3
  fi
done
trainlock() { "$bin/trainlock" "$@"; }
step() { echo "== $* ($(( $(date +%s) - started )) s)"; }
started=$(date +%s)
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_http() {
  for _ in $(seq 150); do
    python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=1)" "$1" \
      2>/dev/null && return 0
    sleep 0.2
  done
  echo "$0: $1 did not answer" >&2
  return 3
}

pids=()
stop_servers() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap stop_servers EXIT
# serve PORT INDEX_PORT: the registry (WORK/registry-data) and the demo index on loopback.
serve() {
  printf 'version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' \
    "$work/registry-data" "$1" > "$work/registry.yml"
  docker-registry serve "$work/registry.yml" > "$work/registry.log" 2>&1 &
  pids+=($!)
  python3 "$source_dir/tests/servers/pypi_server.py" "$2" --demo > "$work/index.log" 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:$1/v2/"
  wait_http "http://127.0.0.1:$2/simple/"
}

if [ -n "$recheck" ]; then
  work=$(cd "$recheck" && pwd)
  [ -f "$work/serve.env" ] || { echo "$0: $work/serve.env: missing (not a work directory of this script)" >&2; exit 2; }
  registry_port=$(sed -n 's/^registry_port=//p' "$work/serve.env")
  index_port=$(sed -n 's/^index_port=//p' "$work/serve.env")
  project=$(sed -n 's/^project=//p' "$work/serve.env")
  step "serving $work's registry and index again on ports $registry_port and $index_port"
  serve "$registry_port" "$index_port"
  step "trainlock image build --check: the lock alone, rebuilt and compared"
  status=0
  trainlock image build "$project" --target cpu --container-engine buildah --check || status=$?
  exit "$status"
fi

work=${work:-$(mktemp -d)}
mkdir -p "$work"
work=$(cd "$work" && pwd)

step "base image: Debian packages and the validator's libraries (cpu_base.sh, cached)"
seeded=$(bash "$here/cpu_base.sh" "$bin/trainlock-validate" "$cache")
rm -rf "$work/registry-data"
cp -al "$seeded/registry" "$work/registry-data"

step "a registry and a package index on loopback"
port=$(free_port)
index_port=$(free_port)
serve "$port" "$index_port"
registry=127.0.0.1:$port
index=http://127.0.0.1:$index_port/simple
echo "registry: $registry"
echo "index: $index"

if [ -z "$project" ]; then
  project=$work/tiny
  rm -rf "$project"
  cp -r "$source_dir/examples/tiny" "$project"
fi
sed -i -e "s#^base = .*#base = \"$registry/trainlock/bookworm-validator:1\"#" \
  -e "s#^python-index = .*#python-index = [\"$index\"]#" "$project/trainlock.toml"
project=$(cd "$project" && pwd)
# What --recheck needs to serve the same registry and index where the lock names them.
printf 'registry_port=%s\nindex_port=%s\nproject=%s\n' "$port" "$index_port" "$project" > "$work/serve.env"

export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1764460800}
step "trainlock lock: the base's digest from the registry, the closure from the index"
trainlock lock "$project"
step "trainlock image build: two builds, one digest, pushed and recorded in the lock"
trainlock image build "$project" --target cpu --container-engine buildah \
  --push "$registry/trainlock/tiny:1" --verify-reproducible
step "skopeo reads the pushed digest back from the registry"
# (skopeo, unlike trainlock and docker, does not take a loopback registry for plain HTTP.)
pushed=$(skopeo inspect --tls-verify=false --format '{{.Digest}}' \
  "docker://$registry/trainlock/tiny:1")
if ! grep -qF "digest = '$pushed'" "$project/trainlock.lock"; then
  echo "$0: the registry has $pushed, which the lock's [images.cpu] does not record" >&2
  exit 1
fi
echo "pushed: $pushed"
step "trainlock validate --image: the validator inside the image, the report signed here"
trainlock keygen "$work/key"
trainlock validate "$project" --image "$registry/trainlock/tiny:1" --container-engine buildah \
  --sign "$work/key.key" --out "$work/report.json"
step "trainlock gate: the signed report against the lock"
trainlock gate "$work/report.json" --lock "$project" --key "$work/key.pub"
step "done: $work/report.json (later: $0 --recheck $work rebuilds from the lock and compares)"
