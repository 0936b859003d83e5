// A bounded fan-out for I/O-heavy work (checkpoint shards): run task(i) for i in [0, count)
// on up to `threads` threads, wait for all of them, and rethrow the exception of the lowest
// failing index, so the error is deterministic (the first bad shard in file order). Tasks
// above a failed index that have not started yet are skipped.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace trainlock::validate {

// Threads for checkpoint I/O: every core up to 16 (SHA-256 and page-cache copies are CPU
// work; more threads than that only contend for the disk).
inline size_t IoThreads() {
  return std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
}

template <typename Task>
void ParallelFor(size_t count, size_t threads, Task task) {
  std::atomic<size_t> next{0};
  std::atomic<size_t> lowest_failed{count};
  std::vector<std::exception_ptr> errors(count);
  auto drain = [&] {
    for (size_t i = next++; i < count; i = next++) {
      if (i > lowest_failed) continue;  // a lower task failed: this one's result is moot
      try {
        task(i);
      } catch (...) {
        errors[i] = std::current_exception();
        size_t seen = lowest_failed;
        while (i < seen && !lowest_failed.compare_exchange_weak(seen, i)) {
        }
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min(threads, count); ++t) pool.emplace_back(drain);
  drain();
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace trainlock::validate
