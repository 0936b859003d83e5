// What the `trainlock` subcommands share; see commands.h.
#include "cli/commands.h"

#include <filesystem>

#include "base/diagnostic.h"
#include "project/artifact_paths.h"
#include "project/project.h"

namespace trainlock::cli {

std::string LockDirOf(const std::string& lock_option) {
  std::error_code ec;
  // --lock names the lock, so of the project's files only the lock; the rest is the one rule
  // every project argument follows (ProjectDirFromArgument).
  if (std::filesystem::is_regular_file(lock_option, ec) &&
      std::filesystem::path(lock_option).filename() != kLockFile) {
    throw InputError(Diagnostic{lock_option,
                                {},
                                "is not a trainlock.lock",
                                "give the lock file or the project directory holding it"});
  }
  std::string dir = lock_option;
  ProjectDirFromArgument(dir);  // a trainlock.lock: the directory holding it
  return dir;
}

CLI::Validator ProjectDirArgument() {
  return CLI::Validator(ProjectDirFromArgument, "DIR", "project directory");
}

std::string ReportPathOf(const std::string& argument) {
  std::error_code ec;
  const bool project = argument.empty() || std::filesystem::is_directory(argument, ec);
  if (!project) return argument;
  const std::string dir = argument.empty() ? "." : argument;
  const std::string path = DefaultReportPath(dir).string();
  // The project's own report is missing: say how it comes to be (a file the user named that
  // is missing gets the plain "no such file" where it is read).
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) {
    throw InputError(Diagnostic{
        path,
        {},
        "cannot read: no such file",
        "run `trainlock validate " + dir + "` first: it writes the report there (or give REPORT)"});
  }
  return path;
}

std::unique_ptr<Progress> MakeProgress(const GlobalOptions& global, const std::string& source) {
  // main.cc accepted only names ParseProgressStyle knows.
  ProgressStyle style = ParseProgressStyle(global.progress).value_or(ProgressStyle::kNone);
  if (global.quiet()) style = ProgressStyle::kNone;
  return std::make_unique<Progress>(style, source);
}

Catalog LoadCatalog(const GlobalOptions& global) {
  return global.catalog_dir.empty() ? Catalog::Embedded()
                                    : Catalog::FromDirectory(global.catalog_dir);
}

}  // namespace trainlock::cli
