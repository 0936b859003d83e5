// Engine selection; see engine.h.
#include "image/engine.h"

#include <cstdio>
#include <cstdlib>

#include "base/failure.h"
#include "base/program_path.h"
#include "base/refs.h"
#include "base/subprocess.h"

namespace trainlock {
namespace {

std::string InstallHint(const std::string& engine) {
  if (engine == "docker") return "apt-get install docker.io on Debian/Ubuntu";
  return "apt-get install " + engine + " on Debian/Ubuntu, dnf install " + engine +
         " on Fedora/RHEL";
}

// The engine's own words when `args` fails: its last line of output, or why it did not start.
std::string Fails(const std::vector<std::string>& args) {
  SpawnOptions spawn;
  spawn.argv = args;
  spawn.null_stdin = true;
  spawn.tail_lines = 5;
  const ProcessRun r = RunEngine(spawn, EngineCall::kQuery, "`" + args[0] + " " + args[1] + "`");
  if (r.exit_code == 0) return "";
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  const size_t nl = out.rfind('\n');
  out = nl == std::string::npos ? out : out.substr(nl + 1);
  return out.empty() ? "exit " + std::to_string(r.exit_code) : out;
}

}  // namespace

double EngineTimeoutS(EngineCall call) {
  if (const char* set = std::getenv(kEngineTimeoutVariable); set && *set) {
    char* end = nullptr;
    const double s = std::strtod(set, &end);
    if (*end != '\0' || !(s > 0) || s > 1e9) {
      throw Failure(
          std::string(kEngineTimeoutVariable) + "=" + set + " is not a positive number of seconds",
          kExitBadInput);
    }
    return s;
  }
  switch (call) {
    case EngineCall::kQuery:
      return 120;
    case EngineCall::kTransfer:
      return 3600;
    case EngineCall::kBuild:
      return 6 * 3600;
    case EngineCall::kRun:
      return 24 * 3600;
  }
  return 0;
}

ProcessRun RunEngine(SpawnOptions spawn, EngineCall call, const std::string& what) {
  // The run in the image keeps this process's group, so a Ctrl-C reaches the engine as before.
  if (call != EngineCall::kRun) {
    spawn.own_group = true;
    spawn.die_with_parent = true;
  }
  RunLimits limits;
  limits.timeout_s = EngineTimeoutS(call);
  ProcessRun r = RunProcess(spawn, limits);
  if (r.timed_out) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", limits.timeout_s);
    throw Failure(what + " did not finish within " + limit + " s and was stopped (" +
                      kEngineTimeoutVariable + " sets the limit of every engine command)",
                  kExitEnvironment);
  }
  return r;
}

std::string EngineProblem(const std::string& engine, EngineUse use) {
  if (!OnPath(engine)) return engine + " is not installed (" + InstallHint(engine) + ")";
  if (engine != "docker") {
    const std::string why = Fails({engine, "--version"});
    return why.empty() ? "" : engine + " does not run (`" + engine + " --version`: " + why + ")";
  }
  // The client alone is not an engine: builds and runs go through the daemon.
  std::string why = Fails({"docker", "version", "--format", "{{.Server.Version}}"});
  if (!why.empty()) {
    return "docker cannot reach its daemon (" + why +
           "): start it (systemctl start docker) or use buildah (apt-get install buildah on "
           "Debian/Ubuntu)";
  }
  if (use == EngineUse::kBuild && !(why = Fails({"docker", "buildx", "version"})).empty()) {
    return "docker has no buildx plugin (" + why +
           "), which a reproducible build needs (`docker build --provenance=false`): install it "
           "(apt-get install docker-buildx on Debian 13/Ubuntu 24.04, docker-buildx-plugin from "
           "Docker's repository) or use buildah (apt-get install buildah on Debian/Ubuntu)";
  }
  return "";
}

std::string PickEngine(const std::string& wanted, EngineUse use) {
  if (!wanted.empty()) {
    if (wanted != "buildah" && wanted != "podman" && wanted != "docker") {
      throw Failure("--container-engine must be buildah, podman or docker, not '" + wanted + "'",
                    kExitBadInput);
    }
    const std::string problem = EngineProblem(wanted, use);
    if (!problem.empty()) throw Failure(problem, kExitEnvironment);
    return wanted;
  }
  std::string problems;
  for (const char* engine : {"buildah", "podman", "docker"}) {
    const std::string problem = EngineProblem(engine, use);
    if (problem.empty()) return engine;
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

std::vector<std::string> EngineCommand(const std::string& engine, const EngineStorage& storage) {
  std::vector<std::string> argv = {engine};
  if (engine != "docker" && !storage.root.empty()) {
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
