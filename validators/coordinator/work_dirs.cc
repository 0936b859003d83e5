// Work and checkpoint directories; see work_dirs.h.
#include "coordinator/work_dirs.h"

#include <string>

#include "base/safe_paths.h"

namespace trainlock::validate {
namespace fs = std::filesystem;

fs::path MakeWorkDir(const ValidateOptions& o, const std::optional<RankEnv>& rank) {
  if (!o.work_dir.empty()) {
    fs::path dir = o.work_dir;
    if (rank && rank->world_size > 1) dir /= "rank-" + std::to_string(rank->rank);
    fs::create_directories(dir);
    return dir;
  }
  return CreateUniqueDirectory(fs::temp_directory_path(), "trainlock-validate-");
}

fs::path CheckpointRoot(const ValidateOptions& o, const Project& project, const fs::path& work) {
  const Spec& lock = *project.lock;
  fs::path root = o.checkpoint_dir.empty() ? (lock.validate.checkpoint_dir.empty()
                                                  ? work / "checkpoints"
                                                  : fs::path(lock.validate.checkpoint_dir))
                                           : o.checkpoint_dir;
  if (root.is_relative() && o.checkpoint_dir.empty() && !lock.validate.checkpoint_dir.empty())
    root = project.dir / root;
  // A run of its own under shared checkpoint storage, so concurrent validations never mix. Its
  // name is random, not the process id: in containers every validator may be PID 1.
  if (root != work / "checkpoints") root = CreateUniqueDirectory(root, "trainlock-validate-");
  return root;
}

}  // namespace trainlock::validate
