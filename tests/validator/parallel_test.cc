// ParallelFor: every task runs once, and a failure surfaces as the lowest failing index's
// exception after all started tasks finish.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/parallel.h"

namespace trainlock::validate {
namespace {

TEST(ParallelFor, RunsEveryTaskExactlyOnce) {
  std::vector<std::atomic<int>> runs(100);
  ParallelFor(runs.size(), 8, [&](size_t i) { ++runs[i]; });
  for (const auto& r : runs) EXPECT_EQ(r.load(), 1);
}

TEST(ParallelFor, MoreThreadsThanTasksAndZeroTasksAreFine) {
  std::atomic<int> runs{0};
  ParallelFor(3, 64, [&](size_t) { ++runs; });
  ParallelFor(0, 4, [&](size_t) { ++runs; });
  EXPECT_EQ(runs.load(), 3);
}

TEST(ParallelFor, RethrowsTheLowestFailingIndexsError) {
  try {
    ParallelFor(16, 4, [](size_t i) {
      if (i == 5 || i == 9) throw std::runtime_error("task " + std::to_string(i));
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "task 5");
  }
}

}  // namespace
}  // namespace trainlock::validate
