// The lock against its project's files; see lock_check.h.
#include "lock/lock_check.h"

#include <set>
#include <sstream>

#include "base/exit_code.h"
#include "base/failure.h"
#include "base/file_io.h"
#include "base/strings.h"
#include "base/toml_document.h"
#include "lock/lock_rederive.h"
#include "lock/pin_consistency.h"
#include "project/lockfile_loader.h"
#include "project/project.h"

namespace trainlock {
namespace {

// The lines of `now` that `before` lacks, what re-locking would change, for the message; each
// under the table it stands in and the entry's name (its path, file, name or library), so that
// "sha256 = ..." says which file: "[[dataset.files]] path = 'a.bin': sha256 = '...'".
std::vector<std::string> ChangedLines(const std::string& before, const std::string& now) {
  std::set<std::string> old_lines;
  std::istringstream in(before);
  for (std::string line; std::getline(in, line);) old_lines.insert(line);
  std::vector<std::string> changed;
  std::istringstream out(now);
  std::string table, entry;
  for (std::string line; std::getline(out, line);) {
    const std::string text = TrimBlanks(line);
    if (text.starts_with("[")) {
      table = text;
      entry.clear();
    } else if (table.starts_with("[[")) {  // an entry of a list: name it by its identity
      for (const char* key : {"path =", "file =", "name =", "library ="})
        if (text.starts_with(key)) entry = text;
    }
    if (old_lines.count(line) || text.empty()) continue;
    std::string where = table;
    if (!entry.empty() && entry != text) where += (where.empty() ? "" : " ") + entry;
    changed.push_back(where.empty() ? text : where + ": " + text);
  }
  return changed;
}

// The lock and the manifest as specs; ResolveLock has read both files already, so they load.
std::pair<Lockfile, Lockfile> LockAndManifest(const std::filesystem::path& dir) {
  const std::filesystem::path manifest = dir / kManifestFile, lock = dir / kLockFile;
  return {LoadLockfile(ReadInputFile(lock, lock.string()), lock.string(), LockfileKind::kLock),
          LoadLockfile(ReadInputFile(manifest, manifest.string()), manifest.string(),
                       LockfileKind::kManifest)};
}

}  // namespace

LockCheckResult CheckLockAgainstFiles(const std::filesystem::path& dir, const LockOptions& o) {
  LockCheckResult result;
  // A lock that does not load is bad input at its position (exit 2), not a stale one:
  // ResolveLock passes over it so that `trainlock lock` can replace it.
  const std::filesystem::path lock_path = dir / kLockFile;
  if (std::error_code ec; std::filesystem::exists(lock_path, ec))
    LoadLockfile(ReadInputFile(lock_path, lock_path.string()), lock_path.string(),
                 LockfileKind::kLock);
  ResolvedLock lock;
  try {
    lock = ResolveLock(dir, o);
  } catch (const Failure& e) {
    if (e.exit_code() != kExitVerdict || !o.offline) throw;
    // Offline resolution names what the lock does not pin: the manifest asks for something new.
    result.problem = std::string("stale: ") + e.what();
    return result;
  }
  result.lock_sha256 = lock.existing_lock_sha256;
  std::vector<LockFieldDifference> pins;
  if (!lock.existing_lock_sha256.empty()) {
    const auto [locked, manifest] = LockAndManifest(dir);
    // The pins that do not follow from the manifest (pin_consistency.h), and, offline, those
    // that nothing offline can check.
    pins = PinConsistencyProblems(locked, manifest);
    if (o.offline) result.not_checked_offline = PinsNotCheckedOffline(locked, manifest);
  }
  if (lock.existing_lock_sha256.empty()) {
    result.problem = "missing";
  } else if (!pins.empty() && lock.existing_lock_sha256 == lock.lock_sha256) {
    result.problem = "edited: the lock's pins do not follow from trainlock.toml";
  } else if (lock.existing_lock_sha256 != lock.lock_sha256) {
    result.problem = "stale: the manifest and config now lock to lock-sha256 " +
                     lock.lock_sha256.substr(0, 12) + "..., the lock has " +
                     lock.existing_lock_sha256.substr(0, 12) + "...";
    const std::filesystem::path path = dir / kLockFile;
    const std::string text = ReadInputFile(path, path.string());
    for (const LockFieldDifference& d : LockFieldDifferences(
             ParseTomlDocument(text, path.string()), ParseTomlDocument(lock.text, path.string())))
      result.fields.push_back(d.Describe());
    result.would_change = ChangedLines(text, lock.text);
  } else {
    result.up_to_date = true;
  }
  for (const LockFieldDifference& d : pins) result.fields.push_back(d.Describe());
  return result;
}

}  // namespace trainlock
