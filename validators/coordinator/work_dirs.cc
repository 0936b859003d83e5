// Work and checkpoint directories; see work_dirs.h.
#include "coordinator/work_dirs.h"

#include <unistd.h>

#include <string>
#include <system_error>

#include "base/diagnostic.h"
#include "base/safe_paths.h"

namespace trainlock::validate {
namespace fs = std::filesystem;

fs::path MakeWorkDir(const ValidateOptions& o, const std::optional<RankEnv>& rank) {
  if (o.work_dir.empty())
    return CreateUniqueDirectory(fs::temp_directory_path(), "trainlock-validate-");
  // Ranks of one node sharing --work-dir get a directory each: their round trips must not
  // share worker files. A rerun with the same --work-dir never meets the last run's files.
  std::string prefix = "trainlock-validate-";
  if (rank && rank->world_size > 1) prefix += "rank-" + std::to_string(rank->rank) + "-";
  return CreateUniqueDirectory(o.work_dir, prefix);
}

CheckpointStorage ChooseCheckpointStorage(const ValidateOptions& o, const Project& project) {
  if (!o.checkpoint_dir.empty()) return {o.checkpoint_dir, "option"};
  const std::string& locked = project.lock->validate.checkpoint_dir;
  if (locked.empty()) return {{}, "work-dir"};
  fs::path root = locked;
  if (root.is_relative()) root = project.dir / root;
  return {root, "lock"};
}

void RequireCheckpointStorage(const CheckpointStorage& storage, const Project& project) {
  if (storage.source == "work-dir") return;
  std::string problem;
  std::error_code ec;
  if (!fs::exists(storage.path, ec)) {
    problem = "does not exist";
  } else if (!fs::is_directory(storage.path, ec)) {
    problem = "is not a directory";
  } else if (::access(storage.path.c_str(), W_OK | X_OK) != 0) {
    problem = "is not writable by this process";
  }
  if (problem.empty()) return;
  const bool option = storage.source == "option";
  throw InputError(Diagnostic{
      option ? "--checkpoint-dir" : project.lock_path,
      {},
      std::string(option ? "" : "validate.checkpoint-dir: ") + Quoted(storage.path.string()) + " " +
          problem + " (the checkpoint storage under test is never created by the validator)",
      "give the storage the long run checkpoints to, mounted and writable here"});
}

void RequireStateDirectory(const fs::path& state_dir) {
  if (state_dir.empty()) return;
  std::error_code ec;
  std::string problem;
  if (!fs::is_directory(state_dir, ec))
    problem = fs::exists(state_dir, ec) ? "is not a directory" : "does not exist";
  else if (::access(state_dir.c_str(), W_OK | X_OK) != 0)
    problem = "is not writable by this process";
  if (problem.empty()) return;
  throw InputError(Diagnostic{"--state-dir",
                              {},
                              Quoted(state_dir.string()) + " " + problem,
                              "name an existing, writable directory, or leave --state-dir out"});
}

fs::path CheckpointRoot(const ValidateOptions& o, const Project& project, const fs::path& work) {
  const CheckpointStorage storage = ChooseCheckpointStorage(o, project);
  if (storage.source == "work-dir") return work / "checkpoints";
  RequireCheckpointStorage(storage, project);
  // A run of its own under shared checkpoint storage, so concurrent validations never mix. Its
  // name is random, not the process id: in containers every validator may be PID 1.
  return CreateUniqueDirectory(storage.path, "trainlock-validate-");
}

}  // namespace trainlock::validate
