// The `trainlock` subcommands: each registers its options on the CLI11 app and runs as a thin
// layer over the library.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>

#include "base/progress.h"

#include "compat/catalog.h"

namespace trainlock::cli {

// A registered subcommand's body; returns the process exit code.
using Command = std::function<int()>;

// Options every command shares.
struct GlobalOptions {
  std::string catalog_dir;        // --catalog / TRAINLOCK_CATALOG; "" = the embedded catalog
  int verbosity = 0;              // -q lowers it (results and errors only), -v raises it
  std::string progress = "auto";  // --progress: base/progress.h's styles
  bool quiet() const { return verbosity < 0; }
};

// The progress a command shows on stderr (--progress; none with -q), its lines naming
// `source` ("trainlock fetch").
std::unique_ptr<Progress> MakeProgress(const GlobalOptions& global, const std::string& source);

// The project directory a --lock option names: the lock file itself (its directory) or the
// directory holding it; throws InputError for a file that is not a trainlock.lock.
std::string LockDirOf(const std::string& lock_option);

// For a project DIR positional: the project's trainlock.lock or trainlock.toml may be given
// instead of the directory (the directory holding it is used), as --lock takes the lock file
// or its directory; any other file is refused as not a project directory.
CLI::Validator ProjectDirArgument();

// A REPORT argument: "" is the report `trainlock validate` writes for the project in the
// current directory, a directory is that project's report (DIR/.trainlock/reports/report.json),
// anything else the file itself.
std::string ReportPathOf(const std::string& argument);

// The catalog --catalog names, else the one compiled in.
Catalog LoadCatalog(const GlobalOptions& global);

Command RegisterInit(CLI::App& app, const GlobalOptions& global);
Command RegisterCheck(CLI::App& app, const GlobalOptions& global);
Command RegisterHash(CLI::App& app, const GlobalOptions& global);
Command RegisterValidate(CLI::App& app, const GlobalOptions& global);
Command RegisterInspect(CLI::App& app, const GlobalOptions& global);
Command RegisterArchs(CLI::App& app, const GlobalOptions& global);
Command RegisterLock(CLI::App& app, const GlobalOptions& global);
Command RegisterFetch(CLI::App& app, const GlobalOptions& global);
Command RegisterImage(CLI::App& app, const GlobalOptions& global);
Command RegisterPlan(CLI::App& app, const GlobalOptions& global);
Command RegisterGate(CLI::App& app, const GlobalOptions& global);
Command RegisterKeygen(CLI::App& app, const GlobalOptions& global);
Command RegisterReport(CLI::App& app, const GlobalOptions& global);
Command RegisterFleet(CLI::App& app, const GlobalOptions& global);
Command RegisterWatch(CLI::App& app, const GlobalOptions& global);

}  // namespace trainlock::cli
