// The last lines of a child's output, kept while it runs without holding all of it: what a
// failure message or a check's metrics show of a command that may print for hours.
#pragma once

#include <cstddef>
#include <deque>
#include <string>

namespace trainlock {

class OutputTail {
 public:
  // Keeps `max_lines` lines; a line longer than `max_line_bytes` is cut.
  explicit OutputTail(size_t max_lines, size_t max_line_bytes = 4096)
      : max_lines_(max_lines), max_line_bytes_(max_line_bytes) {}

  void Add(const char* data, size_t size);

  // The kept lines, each ending in a newline; an unfinished last line counts as one.
  std::string Text() const;
  // Finished (newline-ended) lines seen in all, kept or not.
  int total() const { return total_; }

 private:
  size_t max_lines_;
  size_t max_line_bytes_;
  std::deque<std::string> lines_;
  std::string current_;  // the line being read
  int total_ = 0;
};

}  // namespace trainlock
