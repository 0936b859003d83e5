// Progress lines for terminals, logs and machines; see progress.h.
#include "base/progress.h"

#include <sys/stat.h>
#include <unistd.h>

#include <exception>

#include <nlohmann/json.hpp>

#include "base/json_file.h"
#include "base/terminal_text.h"
#include "base/time_text.h"

namespace trainlock {

std::optional<ProgressStyle> ParseProgressStyle(const std::string& name) {
  if (name == "auto") return Progress::AutoStyle();
  if (name == "terminal") return ProgressStyle::kTerminal;
  if (name == "log") return ProgressStyle::kLog;
  if (name == "json") return ProgressStyle::kJson;
  if (name == "none") return ProgressStyle::kNone;
  return std::nullopt;
}

namespace {

// Whether the descriptors are one terminal device (stderr and stdout of an interactive shell).
bool SameTerminal(int a, int b) {
  struct stat sa = {};
  struct stat sb = {};
  return a >= 0 && b >= 0 && ::isatty(a) == 1 && ::isatty(b) == 1 && ::fstat(a, &sa) == 0 &&
         ::fstat(b, &sb) == 0 && sa.st_rdev == sb.st_rdev;
}

}  // namespace

Progress::Progress(ProgressStyle style, std::string source, std::FILE* out, int results_fd)
    : style_(style),
      source_(std::move(source)),
      out_(out),
      checks_in_results_(style == ProgressStyle::kTerminal &&
                         SameTerminal(::fileno(out), results_fd)) {}

ProgressStyle Progress::AutoStyle() {
  return ::isatty(STDERR_FILENO) == 1 ? ProgressStyle::kTerminal : ProgressStyle::kLog;
}

Progress::~Progress() {
  // A phase still running when an exception unwinds past its owner did not finish: say so
  // instead of "done".
  stopped_ = std::uncaught_exceptions() > 0;
  End();
}

void Progress::SetSource(std::string source) {
  std::lock_guard<std::mutex> lock(mutex_);
  source_ = std::move(source);
}

void Progress::Begin(const std::string& what) {
  if (style_ == ProgressStyle::kNone) return;
  End();
  std::lock_guard<std::mutex> lock(mutex_);
  what_ = what;
  start_ = std::chrono::steady_clock::now();
  if (style_ != ProgressStyle::kTerminal) {
    WriteEvent("begin", what_, -1, "", "");
    running_ = true;
    return;
  }
  DrawTerminal(false);
  running_ = true;
  ticker_ = std::thread([this] { Tick(); });
}

void Progress::End() {
  if (style_ == ProgressStyle::kNone || !running_) return;
  running_ = false;
  if (ticker_.joinable()) ticker_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  EndLocked();
}

void Progress::EndLocked() {
  if (style_ == ProgressStyle::kTerminal) {
    DrawTerminal(true);
    return;
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  WriteEvent(stopped_ ? "stopped" : "end", what_, elapsed, "", "");
}

void Progress::Checked(const std::string& id, const std::string& status, double duration_s,
                       const std::string& summary) {
  if (style_ == ProgressStyle::kNone) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!announced_.insert(id).second) return;
  if (style_ != ProgressStyle::kTerminal) {
    if (style_ == ProgressStyle::kLog && checks_left_to_summary_) return;
    WriteEvent("check", id, duration_s, status, summary);
    return;
  }
  // The summary on this terminal lists every check; a second line for each is noise.
  if (checks_in_results_) return;
  // Above the phase line, which is redrawn below it while it runs.
  std::fprintf(out_, "\r\033[K  %-5s %-16s %7.2fs\n", status.c_str(), TerminalLine(id).c_str(),
               duration_s);
  if (running_) DrawTerminal(false);
  std::fflush(out_);  // the summary on stdout carries the check's text; this line stays short
}

void Progress::Tick() {
  while (running_) {
    for (int i = 0; i < 10 && running_; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::lock_guard<std::mutex> lock(mutex_);
    if (running_) DrawTerminal(false);
  }
}

void Progress::DrawTerminal(bool final_line) {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // \r and erase-line redraw in place; the final line ends with a newline.
  std::fprintf(out_, "\r\033[K%s %s (%.1f s)%s",
               final_line ? (stopped_ ? "stopped" : "done") : "....", TerminalLine(what_).c_str(),
               elapsed, final_line ? "\n" : "");
  std::fflush(out_);
}

// A log line or a JSON line: a phase that begins or ends (`text` the phase) or a check
// (`text` its id). `seconds` < 0: none (a phase that begins).
void Progress::WriteEvent(const char* event, const std::string& text, double seconds,
                          const std::string& status, const std::string& summary) {
  const std::string event_name = event;
  if (style_ == ProgressStyle::kJson) {
    nlohmann::json j = {{"time", NowRfc3339()}, {"source", source_}, {"event", event_name}};
    if (event_name == "check") {
      j["check"] = text;
      j["status"] = status;
      j["summary"] = summary;
    } else {
      j["phase"] = text;
    }
    if (seconds >= 0) j["seconds"] = seconds;
    // A check's summary quotes what an engine printed: masked and escaped as --json output is.
    std::fprintf(out_, "%s\n", DumpJsonOutput(j, -1).c_str());
  } else {
    char took[32] = "";
    if (seconds >= 0) std::snprintf(took, sizeof took, " (%.1f s)", seconds);
    std::string line = NowRfc3339() + " " + source_ + ": ";
    if (event_name == "begin") line += text;
    if (event_name == "end") line += "done " + text + took;
    if (event_name == "stopped") line += "stopped " + text + took;
    if (event_name == "check") line += "check " + text + " " + status + took + ": " + summary;
    std::fprintf(out_, "%s\n", TerminalLine(line).c_str());
  }
  std::fflush(out_);
}

}  // namespace trainlock
