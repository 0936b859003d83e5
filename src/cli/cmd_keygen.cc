// `trainlock keygen PREFIX`: an Ed25519 key pair for signing reports (PREFIX.key, mode 0600)
// and verifying them (PREFIX.pub).
#include <sys/stat.h>

#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "cli/commands.h"
#include "report/report_signing.h"

namespace trainlock::cli {
namespace {

namespace fs = std::filesystem;

struct KeygenOptions {
  std::string prefix;
  bool force = false;
  bool json = false;
};

int RunKeygen(const KeygenOptions& options, const GlobalOptions& global) {
  const fs::path private_path = options.prefix + ".key";
  const fs::path public_path = options.prefix + ".pub";
  // PREFIX names where the keys go: a directory in it that is missing is the user's to fix.
  const fs::path dir = fs::path(options.prefix).parent_path();
  std::error_code ec;
  if (!dir.empty() && !fs::is_directory(dir, ec)) {
    throw InputError(
        Diagnostic{dir.string(), {}, "is not a directory", "PREFIX names where the key files go"});
  }
  for (const fs::path& p : {private_path, public_path}) {
    if (fs::exists(p) && !options.force) {
      throw InputError(Diagnostic{p.string(),
                                  {},
                                  "already exists; refusing to overwrite a key",
                                  "choose another PREFIX or pass --force"});
    }
  }
  KeyPair pair = GenerateEd25519KeyPair();
  // The private key is written readable by its owner only, before any byte of it lands.
  const mode_t old_mask = ::umask(077);
  WriteFileAtomically(private_path, pair.private_pem);
  ::umask(old_mask);
  fs::permissions(private_path, fs::perms::owner_read | fs::perms::owner_write);
  WriteFileAtomically(public_path, pair.public_pem);
  const std::string key_id = PublicKeyId(pair.public_pem);
  if (options.json) {
    std::cout << DumpJsonOutput(nlohmann::json{{"private_key", private_path.string()},
                                               {"public_key", public_path.string()},
                                               {"key_id", key_id}})
              << "\n";
  } else {
    // -q: the key id is the result; which files were written is chatter.
    if (!global.quiet())
      std::cout << "wrote " << private_path.string() << " (private, mode 0600) and "
                << public_path.string() << "\n";
    std::cout << "key id " << key_id << "\n";
  }
  return kExitOk;
}

}  // namespace

Command RegisterKeygen(CLI::App& app, const GlobalOptions& global) {
  auto options = std::make_shared<KeygenOptions>();
  CLI::App* cmd = app.add_subcommand(
      "keygen",
      "Generate an Ed25519 key pair: PREFIX.key signs reports (trainlock-validate --sign),\n"
      "PREFIX.pub verifies them (trainlock gate --key). Exit 0, or 2 when a file exists.");
  cmd->add_option("PREFIX", options->prefix, "Path prefix of the two key files")->required();
  cmd->add_flag("--force", options->force, "Overwrite existing key files");
  cmd->add_flag("--json", options->json, "Print the written paths and key id as JSON");
  return [options, &global] { return RunKeygen(*options, global); };
}

}  // namespace trainlock::cli
