// data.model / data.dataset; see data_checks.h.
#include "checks/data_checks.h"

#include <chrono>
#include <filesystem>

#include "base/sha256.h"
#include "project/artifact_paths.h"

namespace trainlock {
namespace fs = std::filesystem;

namespace {

struct FileProblem {
  std::string summary;  // "" when the file is the pinned one
  std::string remedy;
};

// Why `path` is not the pinned file; adds its size to `total` when it is.
FileProblem CheckPinnedFile(const fs::path& path, const PinnedFile& pinned, uint64_t& total) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return {path.string() + ": missing", "run `trainlock fetch` to download the pinned files"};
  uint64_t size = 0;
  const std::string sha = Sha256FileHex(path, &size);
  const char* not_pinned =
      "the file is not the pinned revision: re-fetch it, or re-lock if the change is intended";
  if (size != pinned.size) {
    return {path.string() + ": size " + std::to_string(size) + " but the lock pins " +
                std::to_string(pinned.size),
            not_pinned};
  }
  if (sha != pinned.sha256) {
    return {path.string() + ": sha256 " + sha.substr(0, 16) + "... but the lock pins " +
                pinned.sha256.substr(0, 16) + "...",
            not_pinned};
  }
  total += size;
  return {};
}

}  // namespace

CheckResult VerifyArtifact(const Project& project, const std::optional<ArtifactSource>& artifact,
                           const std::string& kind) {
  const std::string id = "data." + kind;
  if (!artifact || artifact->files.empty()) {
    return {id,
            CheckStatus::kSkip,
            0,
            kind == "model"
                ? "the lock pins no model files: seeded initialisation of the config's shape"
                : "the lock pins no dataset files: seeded synthetic token stream",
            "",
            nlohmann::json::object()};
  }
  const auto start = std::chrono::steady_clock::now();
  const fs::path dir = ArtifactDir(project.dir, *artifact, kind);
  CheckResult r{id, CheckStatus::kPass,
                0,  "",
                "", {{"dir", dir.string()}, {"files", artifact->files.size()}}};
  uint64_t total = 0;
  for (const PinnedFile& f : artifact->files) {
    FileProblem problem = CheckPinnedFile(dir / f.path, f, total);
    if (problem.summary.empty()) continue;
    r.status = CheckStatus::kFail;
    r.summary = std::move(problem.summary);
    r.remedy = std::move(problem.remedy);
    break;
  }
  r.metrics["bytes"] = total;
  r.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (r.status == CheckStatus::kPass) {
    r.summary = std::to_string(artifact->files.size()) + " pinned files verified (" +
                std::to_string(total) + " bytes)";
  }
  return r;
}

}  // namespace trainlock
