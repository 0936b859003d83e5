// `trainlock watch`: what a node's kernel log means for its validity (docs/watch.md).
//   --replay FILE [--json]   replays a saved log: exit 0 nothing would revoke, 1 something would
//   (no mode)                follows /dev/kmsg (--kmsg FILE) and NVML (--nvml), keeps the node's
//                            revocation record under --watch-state, revokes through --revoke
//   --once [--health-check]  prints the node's state: exit 0 not revoked, 1 revoked (a report
//                            would be refused; --health-check also drains it through Slurm)
// Exit 2 for bad input, a record that does not read included.
#include <chrono>
#include <iostream>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/json_file.h"
#include "base/program_path.h"
#include "base/rank_env.h"
#include "base/terminal_text.h"
#include "base/text_format.h"
#include "base/time_text.h"
#include "cli/commands.h"
#include "image/in_image_paths.h"
#include "watch/node_state.h"
#include "watch/nvml_state.h"
#include "watch/replay.h"
#include "watch/systemd_unit.h"
#include "watch/watch_daemon.h"

namespace trainlock::cli {
namespace {

struct WatchOptions {
  std::string replay;
  bool json = false;
  bool once = false;
  bool health_check = false;
  std::string kmsg = "/dev/kmsg";
  std::string state_dir = kWatchStateDir;
  std::string node;  // "" = this host's name as the validator names it
  std::string reports_dir;
  std::string revoke = "none";
  double breaker_fraction = 0.5;
  std::string breaker_window = "5m";
  std::string nvml = "auto";
  std::string nvml_interval = "10s";
  bool print_unit = false;
};

int RunReplay(const WatchOptions& options, const GlobalOptions& global) {
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

RevokeOptions RevokeOptionsOf(const WatchOptions& options) {
  RevokeOptions revoke;
  revoke.node = options.node.empty() ? HostName() : options.node;
  NodeRecordPath(options.state_dir, revoke.node);  // refuses a name that is no file name
  revoke.reports_dir = options.reports_dir;
  revoke.scheduler = options.revoke == "slurm" ? Scheduler::kSlurm
                     : options.revoke == "k8s" ? Scheduler::kKubernetes
                                               : Scheduler::kNone;
  if (options.health_check) revoke.scheduler = Scheduler::kSlurm;
  if (!(options.breaker_fraction > 0 && options.breaker_fraction <= 1)) {
    throw InputError(
        Diagnostic{"--breaker-fraction",
                   {},
                   "not a fraction in (0, 1]: " + std::to_string(options.breaker_fraction),
                   ""});
  }
  revoke.breaker_fraction = options.breaker_fraction;
  const std::optional<int64_t> window = ParseDurationSeconds(options.breaker_window);
  if (!window || *window <= 0) {
    throw InputError(Diagnostic{"--breaker-window",
                                {},
                                "not a positive duration: " + Quoted(options.breaker_window),
                                "e.g. 5m, 300s, 1h"});
  }
  revoke.breaker_window_s = *window;
  return revoke;
}

// --nvml-interval as milliseconds: a duration from 1 s to 1 h.
std::chrono::milliseconds NvmlIntervalOf(const WatchOptions& options) {
  const std::optional<int64_t> seconds = ParseDurationSeconds(options.nvml_interval);
  if (!seconds || *seconds < 1 || *seconds > 3600) {
    throw InputError(Diagnostic{"--nvml-interval",
                                {},
                                "not a duration from 1s to 1h: " + Quoted(options.nvml_interval),
                                "e.g. 10s, 1m"});
  }
  return std::chrono::milliseconds(*seconds * 1000);
}

NvmlMode NvmlModeOf(const WatchOptions& options) {
  return options.nvml == "off"       ? NvmlMode::kOff
         : options.nvml == "require" ? NvmlMode::kRequire
                                     : NvmlMode::kAuto;
}

// --once: the node's state (and NVML's readings); with --health-check a revoked node is
// drained through Slurm.
int RunOnce(const WatchOptions& options, const GlobalOptions& global) {
  const RevokeOptions revoke = RevokeOptionsOf(options);
  const NodeState state = DescribeNodeState({options.state_dir, revoke.node, options.reports_dir});
  std::cout << TerminalText(state.text);
  if (NvmlModeOf(options) != NvmlMode::kOff) {
    const Catalog catalog = LoadCatalog(global);
    std::cout << TerminalText(DescribeNvmlState(options.reports_dir, revoke.node,
                                                catalog.gpu_events(),
                                                NvmlModeOf(options) == NvmlMode::kRequire));
  }
  if (!state.revoked) return kExitOk;
  if (revoke.scheduler != Scheduler::kNone) {
    const std::optional<NodeRecord> record = ReadNodeRecord(options.state_dir, revoke.node);
    if (!record || !record->revoked) return kExitVerdict;  // rewritten since: the next run acts
    const RevokeOutcome outcome =
        RevokeThroughScheduler(revoke, *record->revoked, EventUtcMicros(std::nullopt));
    std::cout << "  " << TerminalLine(outcome.message) << "\n";
    if (outcome.breaker_tripped)
      std::cerr << "trainlock watch: " << TerminalLine(outcome.message) << "\n";
  }
  return kExitVerdict;
}

// --print-systemd-unit: the unit that runs this watch, with the options given here.
int PrintSystemdUnit(const WatchOptions& options) {
  RevokeOptionsOf(options);  // the same checks the daemon makes
  WatchUnitOptions unit;
  unit.trainlock = RunningExecutable().string();
  unit.state_dir = options.state_dir;
  unit.args = {"--watch-state", options.state_dir, "--revoke", options.revoke};
  if (options.kmsg != "/dev/kmsg") unit.args.insert(unit.args.end(), {"--kmsg", options.kmsg});
  if (!options.node.empty()) unit.args.insert(unit.args.end(), {"--node", options.node});
  if (!options.reports_dir.empty())
    unit.args.insert(unit.args.end(), {"--reports-dir", options.reports_dir});
  if (options.revoke != "none") {
    unit.args.insert(unit.args.end(), {"--breaker-fraction", ShortNumber(options.breaker_fraction),
                                       "--breaker-window", options.breaker_window});
  }
  NvmlIntervalOf(options);  // refused here as the daemon would refuse it
  if (options.nvml != "auto") unit.args.insert(unit.args.end(), {"--nvml", options.nvml});
  if (options.nvml_interval != "10s")
    unit.args.insert(unit.args.end(), {"--nvml-interval", options.nvml_interval});
  std::cout << WatchSystemdUnit(unit);
  return kExitOk;
}

int RunWatch(const WatchOptions& options, const GlobalOptions& global) {
  if (!options.replay.empty()) return RunReplay(options, global);
  if (options.print_unit) return PrintSystemdUnit(options);
  if (options.once) return RunOnce(options, global);
  const Catalog catalog = LoadCatalog(global);
  WatchDaemonOptions daemon;
  daemon.kmsg = options.kmsg;
  daemon.state_dir = options.state_dir;
  daemon.revoke = RevokeOptionsOf(options);
  daemon.nvml = NvmlModeOf(options);
  daemon.nvml_interval = NvmlIntervalOf(options);
  return RunWatchDaemon(daemon, catalog.gpu_events(), std::cout, std::cerr);
}

void AddDaemonOptions(CLI::App* cmd, WatchOptions& options) {
  cmd->add_option("--kmsg", options.kmsg,
                  "The kernel log to follow (default /dev/kmsg); a FIFO or file in kmsg or "
                  "dmesg form for tests: its end ends the watch")
      ->type_name("FILE");
  cmd->add_option("--watch-state", options.state_dir,
                  "Where the node's revocation record is kept (default " +
                      std::string(kWatchStateDir) + "; `trainlock gate --watch-state` reads it)")
      ->type_name("DIR");
  cmd->add_option("--node", options.node,
                  "The node's name (default TRAINLOCK_NODE_NAME, else the host name; Slurm's "
                  "NodeName, Kubernetes' node name)");
  cmd->add_option("--reports-dir", options.reports_dir,
                  "The node gates' reports directory: the node's report is DIR/NODE.json (its "
                  "sha256 goes into the drain reason; one that started after an event clears it)")
      ->type_name("DIR");
  cmd->add_option("--revoke", options.revoke,
                  "On a revoking event: none (the record only; the default), slurm (drain the "
                  "node) or k8s (label and taint the Node)")
      ->check(CLI::IsMember({"none", "slurm", "k8s"}));
  cmd->add_option("--breaker-fraction", options.breaker_fraction,
                  "Revoke nothing through the scheduler once more than this fraction of its GPU "
                  "nodes would be revoked by trainlock within --breaker-window (default 0.5)");
  cmd->add_option("--breaker-window", options.breaker_window,
                  "The circuit breaker's window (default 5m)")
      ->type_name("DURATION");
  cmd->add_option("--nvml", options.nvml,
                  "NVML's events and readings besides the kernel log: auto (when NVML loads; the "
                  "default), off, or require (exit 3 without it)")
      ->check(CLI::IsMember({"auto", "off", "require"}));
  cmd->add_option("--nvml-interval", options.nvml_interval,
                  "How often NVML's remapped rows, ECC counts and recovery action are read "
                  "(default 10s; 1s to 1h)")
      ->type_name("DURATION");
}

}  // namespace

Command RegisterWatch(CLI::App& app, const GlobalOptions& global) {
  auto options = std::make_shared<WatchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "watch",
      "Turn what a node's kernel log and NVML report into the validity the gate enforces: each\n"
      "NVIDIA Xid, NVSwitch SXid and NVML condition (ECC, row remapping, the recovery action,\n"
      "against the node's last passing report) is a revoke (the node's pass no longer holds), a\n"
      "revalidate or info, from lockfiles/compat/gpu-events.toml. Without --replay or --once it "
      "follows /dev/kmsg,\n"
      "keeps the node's revocation record under --watch-state (which `trainlock gate` reads) and\n"
      "revokes the node through --revoke slurm|k8s, behind a circuit breaker (docs/watch.md).\n"
      "Exit codes: --replay 0 nothing would revoke, 1 something would; --once 0 not revoked, 1\n"
      "revoked; following: 0 at the log's end, 128+N on signal N; 2 bad input or usage.");
  CLI::Option* replay =
      cmd->add_option("--replay", options->replay,
                      "A saved kernel log: /dev/kmsg records, dmesg or journalctl -k output")
          ->type_name("FILE");
  cmd->add_flag("--json", options->json, "With --replay: the decisions and counts as JSON")
      ->needs(replay);
  CLI::Option* once =
      cmd->add_flag("--once", options->once,
                    "Print the node's state (its record, last revoking event, whether a report "
                    "would be refused) and exit")
          ->excludes(replay);
  cmd->add_flag("--health-check", options->health_check,
                "With --once, as Slurm's HealthCheckProgram: drain a revoked node through Slurm")
      ->needs(once);
  cmd->add_flag("--print-systemd-unit", options->print_unit,
                "Print the systemd unit that runs this watch (with the options given) on the "
                "node, and exit")
      ->excludes(replay)
      ->excludes(once);
  AddDaemonOptions(cmd, *options);
  return [options, &global] { return RunWatch(*options, global); };
}

}  // namespace trainlock::cli
