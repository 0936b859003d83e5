// Progress of long commands on stderr, in the form the reader needs: a person at a terminal
// sees each phase's elapsed seconds tick and each check as it completes (unless the summary
// goes to the same terminal: it lists every check, so each is printed once); a log (CI, `kubectl
// logs`, a Slurm .out file: stderr is not a terminal) gets one timestamped line per phase and
// per completed check (none when the summary lists them: LeaveChecksToSummary); a machine
// gets the same events as JSON lines (`--progress json`).
// Results stay on stdout (the summary) and in the report; progress never replaces them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

namespace trainlock {

enum class ProgressStyle {
  kNone,      // nothing (-q, --progress none)
  kTerminal,  // a line per phase redrawn in place while it runs; a line per completed check
  kLog,       // "2026-12-01T09:41:05Z SOURCE: ..." lines, one per phase start and end and check
  kJson,      // one JSON object per line: {"time", "source", "event", ...}; events are begin,
              // end, stopped (a phase an error cut short) and check
};

// "auto" (terminal when stderr is a TTY, else log), "terminal", "log", "json" or "none";
// nullopt for anything else.
std::optional<ProgressStyle> ParseProgressStyle(const std::string& name);

// The values ParseProgressStyle takes, for help texts and errors.
inline constexpr const char* kProgressStyleNames = "auto, terminal, log, json or none";

class Progress {
 public:
  // `source` names the writer in log and JSON lines ("trainlock-validate", "... rank 1").
  // `out` is where the lines go (stderr unless a test says otherwise); `results_fd` is where
  // the summary goes (stdout): when both are the same terminal, the summary's line per check
  // is the one a person reads, and a terminal progress shows only the phases.
  Progress(ProgressStyle style, std::string source, std::FILE* out = stderr, int results_fd = 1);
  // kTerminal when stderr is a TTY, else kLog.
  static ProgressStyle AutoStyle();
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  ProgressStyle style() const { return style_; }
  // A rank learned after start: later lines name it.
  void SetSource(std::string source);

  // Starts a phase ("train.roundtrip: train -> checkpoint -> SIGKILL -> resume"); ends the
  // previous one if it is still running.
  void Begin(const std::string& what);
  // Ends the current phase: "done <what> (12.3 s)". Destroyed while an exception unwinds, a
  // running phase ends as "stopped <what> (12.3 s)" (JSON event "stopped").
  void End();
  // The results on stdout (the summary) will list every check: a log then shows only the
  // phases, so that a CI log, where stdout and stderr meet, lists each check once (a terminal
  // already leaves them to a summary on the same terminal; JSON lines are for machines and keep
  // them).
  void LeaveChecksToSummary() { checks_left_to_summary_ = true; }
  // A check that completed, announced once per id (a second call for the same id is ignored,
  // so callers may announce everything they have so far).
  void Checked(const std::string& id, const std::string& status, double duration_s,
               const std::string& summary);

 private:
  void Tick();
  void DrawTerminal(bool final_line);
  void WriteEvent(const char* event, const std::string& text, double seconds,
                  const std::string& status, const std::string& summary);
  void EndLocked();

  ProgressStyle style_;
  std::string source_;
  std::FILE* out_;
  std::mutex mutex_;
  std::string what_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> running_{false};
  std::thread ticker_;
  std::set<std::string> announced_;
  bool stopped_ = false;                 // the phase ended by an exception, not by End()
  bool checks_in_results_ = false;       // kTerminal on the terminal the summary is printed to
  bool checks_left_to_summary_ = false;  // LeaveChecksToSummary()
};

}  // namespace trainlock
