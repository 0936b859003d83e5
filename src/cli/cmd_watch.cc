// `trainlock watch --replay FILE [--json]`: replays a saved kernel log through the GPU event
// table (lockfiles/compat/gpu-events.toml) and prints what each NVIDIA event would mean for the
// node: revoke, revalidate or info. Exit 0 when nothing would revoke, 1 when something would.
// The long-running watch (reading /dev/kmsg and NVML as they happen, draining through the
// scheduler) is not built yet: docs/watch.md.
#include <iostream>

#include "base/exit_code.h"
#include "base/json_file.h"
#include "base/terminal_text.h"
#include "cli/commands.h"
#include "watch/replay.h"

namespace trainlock::cli {
namespace {

struct WatchOptions {
  std::string replay;
  bool json = false;
};

int RunWatch(const WatchOptions& options, const GlobalOptions& global) {
  const Catalog catalog = LoadCatalog(global);
  const ReplayResult result = ReplayKernelLogFile(options.replay, catalog.gpu_events());
  if (options.json) {
    std::cout << DumpJsonOutput(ReplayJson(result, options.replay), 2) << "\n";
  } else {
    // The file name is the user's; a decision quotes the log's own text (its PCI address).
    for (const Decision& d : result.decisions) std::cout << TerminalLine(DecisionLine(d)) << "\n";
    if (!global.quiet())
      std::cout << TerminalLine(options.replay) << ": " << ReplaySummary(result) << "\n";
  }
  return result.revoked() ? kExitVerdict : kExitOk;
}

}  // namespace

Command RegisterWatch(CLI::App& app, const GlobalOptions& global) {
  auto options = std::make_shared<WatchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "watch",
      "Decide what a node's kernel log means for its validity: each NVIDIA Xid and NVSwitch SXid\n"
      "is a revoke (the node's pass no longer holds), a revalidate (re-validate within 60 s,\n"
      "never drain) or info, from lockfiles/compat/gpu-events.toml. Today it replays a saved\n"
      "log (--replay); the long-running watch is not built yet (docs/watch.md).\n"
      "Exit codes: 0 nothing would revoke, 1 something would, 2 bad input or usage.");
  cmd->add_option("--replay", options->replay,
                  "A saved kernel log: /dev/kmsg records, dmesg or journalctl -k output")
      ->required()
      ->type_name("FILE");
  cmd->add_flag("--json", options->json, "Print the decisions and counts as JSON");
  return [options, &global] { return RunWatch(*options, global); };
}

}  // namespace trainlock::cli
