// Choosing and calling the container tool; see container_tool.h.
#include "image/container_tool.h"

#include <cstdio>
#include <cstdlib>

#include "base/failure.h"
#include "base/program_path.h"
#include "base/refs.h"
#include "base/subprocess.h"

namespace trainlock {
namespace {

std::string InstallHint(const std::string& tool) {
  if (tool == "docker") return "apt-get install docker.io on Debian/Ubuntu";
  return "apt-get install " + tool + " on Debian/Ubuntu, dnf install " + tool + " on Fedora/RHEL";
}

// The tool's own words when `args` fails: its last line of output, or why it did not start.
std::string Fails(const std::vector<std::string>& args) {
  SpawnOptions spawn;
  spawn.argv = args;
  spawn.null_stdin = true;
  spawn.tail_lines = 5;
  const ProcessRun r =
      RunContainerTool(spawn, ContainerToolCall::kQuery, "`" + args[0] + " " + args[1] + "`");
  if (r.exit_code == 0) return "";
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  const size_t nl = out.rfind('\n');
  out = nl == std::string::npos ? out : out.substr(nl + 1);
  return out.empty() ? "exit " + std::to_string(r.exit_code) : out;
}

}  // namespace

double ContainerToolTimeoutS(ContainerToolCall call) {
  if (const char* set = std::getenv(kContainerToolTimeoutVariable); set && *set) {
    char* end = nullptr;
    const double s = std::strtod(set, &end);
    if (*end != '\0' || !(s > 0) || s > 1e9) {
      throw Failure(std::string(kContainerToolTimeoutVariable) + "=" + set +
                        " is not a positive number of seconds",
                    kExitBadInput);
    }
    return s;
  }
  switch (call) {
    case ContainerToolCall::kQuery:
      return 120;
    case ContainerToolCall::kTransfer:
      return 3600;
    case ContainerToolCall::kBuild:
      return 6 * 3600;
    case ContainerToolCall::kRun:
      return 24 * 3600;
  }
  return 0;
}

ProcessRun RunContainerTool(SpawnOptions spawn, ContainerToolCall call, const std::string& what) {
  // Every call runs in a group of its own, so that the limit stops everything the tool started:
  // a child of `podman run` that kept our stderr (a CI log's pipe) would otherwise hold it open
  // after we exit. The run's group is out of the terminal's foreground group, so a Ctrl-C or a
  // SIGTERM to us is forwarded to it (podman and docker stop and remove the container on it);
  // the others die with us instead.
  spawn.own_group = true;
  if (call == ContainerToolCall::kRun) {
    spawn.forward_stop_signals = true;
  } else {
    spawn.die_with_parent = true;
  }
  RunLimits limits;
  limits.timeout_s = ContainerToolTimeoutS(call);
  ProcessRun r = RunProcess(spawn, limits);
  if (r.timed_out) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", limits.timeout_s);
    throw Failure(what + " did not finish within " + limit + " s and was stopped (" +
                      kContainerToolTimeoutVariable + " sets the limit of every engine command)",
                  kExitEnvironment);
  }
  return r;
}

std::string ContainerToolProblem(const std::string& tool, ContainerToolUse use) {
  if (!OnPath(tool)) return tool + " is not installed (" + InstallHint(tool) + ")";
  if (tool != "docker") {
    const std::string why = Fails({tool, "--version"});
    return why.empty() ? "" : tool + " does not run (`" + tool + " --version`: " + why + ")";
  }
  // docker's client alone cannot build or run: builds and runs go through the daemon.
  std::string why = Fails({"docker", "version", "--format", "{{.Server.Version}}"});
  if (!why.empty()) {
    return "docker cannot reach its daemon (" + why +
           "): start it (systemctl start docker) or use buildah (apt-get install buildah on "
           "Debian/Ubuntu)";
  }
  if (use == ContainerToolUse::kBuild && !(why = Fails({"docker", "buildx", "version"})).empty()) {
    return "docker has no buildx plugin (" + why +
           "), which a reproducible build needs (`docker build --provenance=false`): install it "
           "(apt-get install docker-buildx on Debian 13/Ubuntu 24.04, docker-buildx-plugin from "
           "Docker's repository) or use buildah (apt-get install buildah on Debian/Ubuntu)";
  }
  return "";
}

std::string PickContainerTool(const std::string& wanted, ContainerToolUse use) {
  if (!wanted.empty()) {
    if (wanted != "buildah" && wanted != "podman" && wanted != "docker") {
      throw Failure("--container-engine must be buildah, podman or docker, not '" + wanted + "'",
                    kExitBadInput);
    }
    const std::string problem = ContainerToolProblem(wanted, use);
    if (!problem.empty()) throw Failure(problem, kExitEnvironment);
    return wanted;
  }
  std::string problems;
  for (const char* tool : {"buildah", "podman", "docker"}) {
    const std::string problem = ContainerToolProblem(tool, use);
    if (problem.empty()) return tool;
    problems += "\n  " + problem;
  }
  throw Failure("no image engine can work here (buildah, podman or docker):" + problems,
                kExitEnvironment);
}

std::filesystem::path DefaultStorageRoot(const std::filesystem::path& project_dir) {
  return project_dir / ".trainlock" / "containers";
}

void CheckStorageDriver(const std::string& driver) {
  if (driver != "vfs" && driver != "overlay")
    throw Failure("--storage-driver must be vfs or overlay, not '" + driver + "'", kExitBadInput);
}

std::vector<std::string> ContainerToolCommand(const std::string& tool,
                                              const ContainerToolStorage& storage) {
  std::vector<std::string> argv = {tool};
  if (tool != "docker" && !storage.root.empty()) {
    argv.insert(argv.end(), {"--root", (storage.root / "root").string(), "--runroot",
                             (storage.root / "run").string(), "--storage-driver", storage.driver});
  }
  return argv;
}

bool PlainHttpRegistry(const std::string& ref, bool tls_verify) {
  if (!tls_verify) return true;
  std::string error;
  const std::optional<ImageRef> parsed = ParseImageRef(ref, &error);
  return parsed && IsLoopbackRegistry(parsed->registry);
}

}  // namespace trainlock
