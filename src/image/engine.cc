// Engine selection; see engine.h.
#include "image/engine.h"

#include "base/failure.h"
#include "base/program_path.h"

namespace trainlock {

std::string PickEngine(const std::string& wanted) {
  if (!wanted.empty()) {
    if (wanted != "buildah" && wanted != "podman" && wanted != "docker") {
      throw Failure("--engine must be buildah, podman or docker, not '" + wanted + "'",
                    kExitBadInput);
    }
    if (!OnPath(wanted)) throw Failure(wanted + " is not installed", kExitEnvironment);
    return wanted;
  }
  for (const char* engine : {"buildah", "podman", "docker"}) {
    if (OnPath(engine)) return engine;
  }
  throw Failure("no image engine found (buildah, podman or docker)", kExitEnvironment);
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

}  // namespace trainlock
