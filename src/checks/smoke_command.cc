// Running the project's smoke command with a timeout and a clean process group; see
// smoke_command.h.
#include "checks/smoke_command.h"

#include <chrono>
#include <sstream>

#include "base/redact.h"
#include "base/subprocess.h"
#include "base/terminal_text.h"
#include "report/check_metrics.h"
#include "report/pass_rules.h"

namespace trainlock {
namespace {

constexpr auto kTermGrace = std::chrono::seconds(2);
constexpr size_t kMaxLineBytes = 4096;  // a line longer than this is cut in the tail

}  // namespace

SmokeRun RunSmokeCommand(const ExtCommand& command, const std::filesystem::path& project_dir) {
  SmokeRun run;
  if (command.argv.empty()) {
    run.output_tail = "no command";
    return run;
  }
  SpawnOptions options;
  options.argv = command.argv;
  options.env = command.env;
  options.cwd = command.cwd.empty() ? project_dir : project_dir / command.cwd;
  // So that nothing the command started outlives the check: its group, and where the kernel
  // allows one a PID namespace, which also ends what left the group (setsid, a daemon).
  options.own_group = true;
  options.own_pid_namespace = true;
  options.null_stdin = true;
  options.tail_lines = static_cast<size_t>(command.tail_lines);
  options.tail_line_bytes = kMaxLineBytes;
  const ProcessRun p = RunProcess(options, {command.timeout_s, kTermGrace});
  if (!p.started) {
    run.output_tail = CleanText(p.start_error);
    return run;
  }
  run.started = true;
  run.containment = p.containment;
  run.exit_code = p.exit_code;
  run.timed_out = p.timed_out;
  run.duration_s = p.duration_s;
  // The command's bytes need not be UTF-8, and the tail may cut a character in two; the
  // report is JSON, which cannot hold either: such bytes become U+FFFD, the rest is kept.
  run.output_tail = CleanText(p.output);
  run.output_lines = p.output_lines;
  run.left_processes = p.left_processes;
  return run;
}

CheckResult SmokeCommandCheck(const ExtCommand& command, const SmokeRun& run) {
  // The report is shown and shared: a URL with credentials in argv is redacted there.
  std::vector<std::string> argv;
  std::string line;
  for (const std::string& a : command.argv) {
    argv.push_back(RedactCredentials(a));
    line += (line.empty() ? "" : " ") + argv.back();
  }
  const nlohmann::json metrics =
      ToJson(CommandMetrics{argv, command.cwd.empty() ? "." : command.cwd, run.exit_code,
                            run.timed_out, command.timeout_s, run.duration_s, run.output_lines,
                            run.output_tail, run.left_processes, run.containment});
  std::ostringstream s;
  s.precision(3);
  std::string remedy;
  if (!run.started) {
    s << "could not start `" << line << "`: " << run.output_tail;
  } else if (run.timed_out) {
    s << "`" << line << "` ran past its " << command.timeout_s
      << " s timeout and was killed with its process group";
    remedy =
        "see output_tail; make the smoke command finish in time (fewer steps) or raise "
        "[ext.command] timeout-s";
  } else if (run.exit_code != 0) {
    s << "`" << line << "` exited with " << run.exit_code << " after " << run.duration_s << " s";
    remedy = "see output_tail in the metrics for the command's last output";
  } else {
    s << "`" << line << "` exited 0 in " << run.duration_s << " s";
  }
  std::string summary = s.str();
  if (!summary.empty() && summary.back() == '\n') summary.pop_back();
  CheckResult c =
      run.started
          ? Judged("ext.command", metrics, std::move(summary), std::move(remedy))
          : NotMeasured("ext.command", CheckStatus::kError, std::move(summary),
                        "check [ext.command] argv in the lock and that the program exists in "
                        "the image",
                        metrics);
  c.duration_s = run.duration_s;
  return c;
}

}  // namespace trainlock
