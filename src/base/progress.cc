// Terminal progress lines; see progress.h.
#include "base/progress.h"

#include <unistd.h>

#include <cstdio>

namespace trainlock {

Progress::Progress(bool enabled) : enabled_(enabled) {}

Progress Progress::ForStderr() {
  return Progress(::isatty(STDERR_FILENO) == 1);
}

Progress::~Progress() {
  End();
}

void Progress::Begin(const std::string& what) {
  if (!enabled_) return;
  End();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    what_ = what;
    start_ = std::chrono::steady_clock::now();
    Draw(false);
  }
  running_ = true;
  ticker_ = std::thread([this] { Tick(); });
}

void Progress::End() {
  if (!enabled_ || !running_) return;
  running_ = false;
  if (ticker_.joinable()) ticker_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  Draw(true);
}

void Progress::Tick() {
  while (running_) {
    for (int i = 0; i < 10 && running_; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::lock_guard<std::mutex> lock(mutex_);
    if (running_) Draw(false);
  }
}

void Progress::Draw(bool final_line) {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // \r and erase-line redraw in place; the final line ends with a newline.
  std::fprintf(stderr, "\r\033[K%s %s (%.1f s)%s", final_line ? "done" : "....", what_.c_str(),
               elapsed, final_line ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace trainlock
