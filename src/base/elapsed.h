// Seconds elapsed on the monotonic clock, for the durations that reports and progress show.
#pragma once

#include <chrono>

namespace trainlock {

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace trainlock
