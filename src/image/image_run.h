// Running a command inside an image through an engine, and learning from the engine which
// image that is: the manifest digest the engine resolved the reference to (after pulling it
// when it is not local) and the trainlock target it was built for. buildah runs a working
// container with chroot isolation (what works unprivileged and in CI); podman and docker run
// --rm. The GPUs of the image's target are passed through where the node has them: NVIDIA by
// CDI (`--device nvidia.com/gpu=all`, when a CDI spec exists) or docker's `--gpus all`, AMD as
// /dev/kfd and /dev/dri.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "image/container_tool.h"

namespace trainlock {

struct ImageRunOptions {
  std::string engine;            // "" = the first found
  ContainerToolStorage storage;  // buildah/podman storage; no root = the engine's default
  bool tls_verify = true;        // false: plain HTTP to any registry (loopback ones always are)
};

struct EngineImage {
  std::string engine;
  std::string ref;     // as asked
  std::string digest;  // "sha256:...", the manifest digest the engine resolved
  std::string target;  // the io.trainlock.target label; "" when the image has none
};

// Throws a Failure: exit 3 when the engine cannot pull or inspect the image, 1 when `ref` pins
// a digest that is not the one the engine has.
EngineImage ResolveEngineImage(const std::string& ref, const ImageRunOptions& options);

struct Mount {
  std::filesystem::path host;
  std::string container;
  bool read_only = true;
};

// Refuses (InputError, exit 2, naming it) a host path that a mount cannot carry as it is: the
// engines' `--volume HOST:CONTAINER:ro` splits at ':' (a project in /p:colon would mount /p
// at "colon"), and `--mount`'s comma-separated fields split at ',' (podman and buildah read no
// quoting there). `what` says what the path is ("the project directory").
void CheckMountableHostPath(const std::filesystem::path& host, const std::string& what);

// Runs argv (argv[0] a path inside the image) in a fresh container of `image`, its output on
// this process's stdout and stderr (stdout into `stdout_file` when one is given), and returns
// its exit code. Throws a Failure (exit 3) when the engine cannot start it, and InputError for a
// mount's host path CheckMountableHostPath refuses.
int RunInImage(const EngineImage& image, const ImageRunOptions& options,
               const std::vector<Mount>& mounts, const std::map<std::string, std::string>& env,
               const std::vector<std::string>& argv, const std::filesystem::path& stdout_file = {});

// The validator's output in the container with the report paths it names there
// (kReportMountInContainer/report.json, .../report.rank-N.json) replaced by where `trainlock
// validate --image` writes them on the host: `host_report` and, beside it, its stem with the
// rank's suffix.
std::string WithHostReportPaths(std::string text, const std::filesystem::path& host_report);

// The engine options that pass this node's GPUs of `target` ("cuda" or "rocm") into a
// container; empty when the node has none (or the target is cpu).
std::vector<std::string> GpuPassthrough(const std::string& engine, const std::string& target);

}  // namespace trainlock
