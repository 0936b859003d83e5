// What the `trainlock` subcommands share; see commands.h.
#include "cli/commands.h"

#include <filesystem>

#include "base/diagnostic.h"
#include "project/project.h"

namespace trainlock::cli {

std::string LockDirOf(const std::string& lock_option) {
  const std::filesystem::path path = lock_option;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec) || !std::filesystem::exists(path, ec)) {
    return lock_option;  // a directory, or a missing one that loading reports
  }
  if (path.filename() != kLockFile) {
    throw InputError(Diagnostic{lock_option, {}, "is not a trainlock.lock",
                                "give the lock file or the project directory holding it"});
  }
  return path.has_parent_path() ? path.parent_path().string() : ".";
}

Catalog LoadCatalog(const GlobalOptions& global) {
  return global.catalog_dir.empty() ? Catalog::Embedded()
                                    : Catalog::FromDirectory(global.catalog_dir);
}

}  // namespace trainlock::cli
