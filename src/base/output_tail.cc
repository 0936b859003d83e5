// A bounded tail of output lines; see output_tail.h.
#include "base/output_tail.h"

namespace trainlock {

void OutputTail::Add(const char* data, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    if (data[i] != '\n') {
      if (current_.size() < max_line_bytes_) current_ += data[i];
      continue;
    }
    lines_.push_back(std::move(current_));
    current_.clear();
    ++total_;
    if (lines_.size() > max_lines_) lines_.pop_front();
  }
}

std::string OutputTail::Text() const {
  // An unfinished last line takes the place of the oldest kept one, as if it had ended.
  const bool partial = !current_.empty();
  size_t skip = partial && lines_.size() + 1 > max_lines_ ? 1 : 0;
  std::string out;
  for (const std::string& line : lines_) {
    if (skip > 0) {
      --skip;
      continue;
    }
    out += line + "\n";
  }
  if (partial && max_lines_ > 0) out += current_ + "\n";
  return out;
}

}  // namespace trainlock
