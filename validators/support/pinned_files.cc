// The worker's record of the pinned files it verified; see pinned_files.h.
#include "support/pinned_files.h"

#include <mutex>

#include "base/sha256.h"
#include "run/engine_spec.h"

namespace trainlock::validate {
namespace {

std::mutex& LogMutex() {
  static std::mutex m;
  return m;
}

std::vector<ArtifactRow>& Log() {
  static std::vector<ArtifactRow> rows;
  return rows;
}

}  // namespace

ArtifactMismatch::ArtifactMismatch(const std::string& path, const std::string& measured,
                                   const std::string& pinned, const std::string& pinned_by,
                                   const std::string& why)
    : Failure(path + ": sha256 " + measured + " (measured by the worker reading it) is not " +
                  pinned_by + " sha256 " + pinned + ": " + why,
              kExitVerdict) {}

void VerifyPinned(const std::string& path, const std::string& measured, uint64_t bytes,
                  const std::string& pinned) {
  ArtifactRow row;
  row.path = path;
  row.sha256 = measured;
  row.bytes = static_cast<int64_t>(bytes);
  row.verified_by = "worker";
  {
    std::lock_guard<std::mutex> lock(LogMutex());
    Log().push_back(row);
  }
  if (!pinned.empty() && measured != pinned) throw ArtifactMismatch(path, measured, pinned);
}

std::vector<ArtifactRow> VerifiedArtifacts() {
  std::lock_guard<std::mutex> lock(LogMutex());
  return Log();
}

CoordinatorSpec ReadCoordinatorSpec(const std::filesystem::path& file,
                                    const std::string& want_sha256, const std::string& what) {
  CoordinatorSpec spec;
  spec.text = ReadSpecFile(file, what);
  spec.sha256 = Sha256Hex(spec.text);
  if (spec.sha256 != want_sha256)
    throw ArtifactMismatch(file.string(), spec.sha256, want_sha256, "the coordinator's",
                           "the " + what + " changed after the coordinator wrote it");
  return spec;
}

}  // namespace trainlock::validate
