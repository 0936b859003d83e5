// Progress of long checks on stderr, for a person at a terminal: one line per phase whose
// elapsed seconds tick while it runs. Silent when stderr is not a TTY, so logs and CI output
// stay clean (the report and the summary carry the results).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

namespace trainlock {

class Progress {
 public:
  // `enabled` false makes every call a no-op; ForStderr() decides it from isatty(2).
  explicit Progress(bool enabled);
  static Progress ForStderr();
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Starts a phase ("train.roundtrip: train -> checkpoint -> SIGKILL -> resume"); ends the
  // previous one if it is still running.
  void Begin(const std::string& what);
  // Ends the current phase, leaving "<what> (12.3 s)" on its line.
  void End();

 private:
  void Tick();
  void Draw(bool final_line);

  bool enabled_;
  std::mutex mutex_;
  std::string what_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> running_{false};
  std::thread ticker_;
};

}  // namespace trainlock
