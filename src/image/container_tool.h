// The container tools trainlock drives to build, push, pull and run images (buildah, podman,
// docker; `--container-engine` on the command line, not the training engines of
// run/engine_spec.h): which one to use, and the command line every call starts with (buildah
// and podman with storage of their own when asked: vfs, which works unprivileged, or overlay,
// which is much faster where the kernel lets this user mount it). A tool that cannot work here (not
// installed, docker without a reachable daemon, or without buildx for a build) is refused before
// any work, with why and how to get one that works.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/subprocess.h"

namespace trainlock {

// What one container tool command does, for how long it may run.
enum class ContainerToolCall {
  kQuery,     // a version check, inspect, tag, starting or removing a container
  kTransfer,  // a pull or push
  kBuild,     // a build
  kRun,       // the validator's run in the image
};

// The environment variable that, set to a positive number of seconds, is the limit of every
// container tool command (for a machine where the defaults below do not fit, and for tests).
constexpr const char* kContainerToolTimeoutVariable = "TRAINLOCK_ENGINE_TIMEOUT";

// The longest one container tool command of `call` may run, in seconds: TRAINLOCK_ENGINE_TIMEOUT
// when set, else a query 120, a pull or push 3600, a build 21600 (6 h), a run in the image 86400.
// Failure (exit 2) when the variable is set to anything but a positive number.
double ContainerToolTimeoutS(ContainerToolCall call);

// Runs a container tool command to its end within ContainerToolTimeoutS(call), in a process group
// of its own: every call but kRun dies with this thread; kRun gets this process's SIGINT, SIGTERM
// and SIGHUP forwarded (ProcessRun::stop_signal says which came). What is kept of a piped output is
// the tail
// (`spawn.tail_lines` lines of at most `spawn.tail_line_bytes` bytes). A command that runs past its
// limit is stopped (its whole group) and is a Failure (exit 3) naming `what` and the limit; one
// that cannot start is returned as such (exit code 127, start_error).
ProcessRun RunContainerTool(SpawnOptions spawn, ContainerToolCall call, const std::string& what);

// What the container tool is for: building needs docker's buildx (`--provenance=false`); running
// does not.
enum class ContainerToolUse { kBuild, kRun };

// Why `tool` cannot do `use` on this machine, with how to fix it; "" when it can.
std::string ContainerToolProblem(const std::string& tool, ContainerToolUse use);

// `wanted` when given (Failure: exit 2 for an unknown name, 3 with ContainerToolProblem's words
// when it cannot work), else the first of buildah, podman, docker that can (exit 3 naming why each
// cannot when none can).
std::string PickContainerTool(const std::string& wanted, ContainerToolUse use);

// buildah/podman storage of trainlock's own; an empty root is the tool's default storage.
struct ContainerToolStorage {
  std::filesystem::path root;
  std::string driver = "vfs";  // vfs | overlay
};

// The storage used when --storage-root is not given: DIR/.trainlock/containers, so that
// neither /var/lib/containers nor the user's own container storage is written.
std::filesystem::path DefaultStorageRoot(const std::filesystem::path& project_dir);

// Failure (exit 2) for a driver other than vfs and overlay.
void CheckStorageDriver(const std::string& driver);

// {tool} plus --root/--runroot/--storage-driver under `storage.root` for buildah and podman
// when it is given.
std::vector<std::string> ContainerToolCommand(const std::string& tool,
                                              const ContainerToolStorage& storage);

// buildah/podman's --tls-verify=false where `ref` (an image reference) names a loopback
// registry or `tls_verify` is false; docker treats loopback registries as insecure itself.
bool PlainHttpRegistry(const std::string& ref, bool tls_verify);

}  // namespace trainlock
