// `trainlock lock DIR [--check] [--offline]`: resolve the manifest into trainlock.lock.
#include <iostream>

#include <nlohmann/json.hpp>

#include "base/exit_code.h"
#include "base/file_io.h"
#include "cli/commands.h"
#include "lock/lock_resolver.h"
#include "project/project.h"

namespace trainlock::cli {
namespace {

struct LockCommandOptions {
  std::string dir = ".";
  bool check = false;
  bool offline = false;
  bool python_only = false;
  bool skip_python = false;
  bool json = false;
  long timeout_s = 30;
};

int RunLock(const LockCommandOptions& options) {
  const std::filesystem::path dir = options.dir;
  LockOptions o;
  o.offline = options.offline;
  o.python_only = options.python_only;
  o.skip_python = options.skip_python;
  o.index.timeout_s = options.timeout_s;
  o.registry.timeout_s = options.timeout_s;
  o.hub.timeout_s = options.timeout_s;  // the Hub too: a stalled Hub must not hold CI for minutes
  const ResolvedLock lock = ResolveLock(dir, o);
  const std::filesystem::path path = dir / kLockFile;
  if (options.check) {
    const std::string& current = lock.existing_lock_sha256;
    if (current.empty()) {
      std::cerr << path.string() << ": error: missing or invalid; run `trainlock lock`\n";
      return kExitVerdict;
    }
    if (current != lock.lock_sha256) {
      std::cerr << path.string() << ": error: stale: resolving the manifest now gives lock-sha256 "
                << lock.lock_sha256.substr(0, 12) << "..., the lock has " << current.substr(0, 12)
                << "...; run `trainlock lock`\n";
      return kExitVerdict;
    }
    if (options.json) {
      std::cout << nlohmann::json{{"lock", path.string()},
                                  {"up_to_date", true},
                                  {"lock_sha256", current}}
                       .dump(2)
                << "\n";
    } else {
      std::cout << path.string() << ": up to date (lock-sha256 " << current << ")\n";
    }
    return kExitOk;
  }
  WriteFileAtomically(path, lock.text);
  if (options.json) {
    std::cout << nlohmann::json{{"lock", path.string()},
                                {"written", true},
                                {"lock_sha256", lock.lock_sha256},
                                {"pinned", lock.pinned}}
                     .dump(2)
              << "\n";
    return kExitOk;
  }
  for (const std::string& line : lock.pinned) std::cout << "  " << line << "\n";
  std::cout << "wrote " << path.string() << " (lock-sha256 " << lock.lock_sha256 << ")\n";
  return kExitOk;
}

}  // namespace

Command RegisterLock(CLI::App& app, const GlobalOptions&) {
  auto options = std::make_shared<LockCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "lock",
      "Resolve DIR/trainlock.toml into DIR/trainlock.lock: base images to the digests their\n"
      "registries serve (each platform's manifest digest too), Hugging Face revisions to\n"
      "commits with every file's size and SHA-256, local files and custom-op sources hashed,\n"
      "each target's Python closure (torch, [python] and every dependency) to one wheel each\n"
      "with its SHA-256 from the target's package indexes. Every body is verified against its\n"
      "digest; nothing is written unless everything resolves. Exit 1 when content does not\n"
      "match its digest or a closure cannot be satisfied (or, with --check, the lock is\n"
      "stale), 3 when a registry, the Hub or an index cannot answer. Credentials: TRAINLOCK_REGISTRY_USERNAME/PASSWORD or\n"
      "~/.docker/config.json; HF_TOKEN; HF_ENDPOINT for another Hub.");
  cmd->add_option("DIR", options->dir, "Project directory")->capture_default_str();
  cmd->add_flag("--check", options->check,
                "Write nothing; exit 1 when the lock is missing, stale or not what the manifest "
                "resolves to");
  cmd->add_flag("--offline", options->offline,
                "Never touch the network: use only what the manifest or the existing lock pins");
  cmd->add_flag("--python-only", options->python_only,
                "Ask only the package indexes; base images and Hub revisions as with --offline");
  cmd->add_flag("--skip-python", options->skip_python,
                "Never ask the package indexes: keep the existing lock's closures where the request "
                "is unchanged, leave the others unresolved (`image generate` then refuses them)");
  cmd->add_flag("--json", options->json,
                "Print the lock's path, lock-sha256 and what was pinned as JSON");
  cmd->add_option("--timeout", options->timeout_s, "Seconds per network request")
      ->capture_default_str()
      ->check(CLI::Range(1L, 3600L));
  return [options] { return RunLock(*options); };
}

}  // namespace trainlock::cli
