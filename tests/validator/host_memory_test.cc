// A worker SIGKILLed by someone other than the validator: the OOM killer (the cgroup's
// oom_kill counter rose) is "host memory exhausted" with the RSS it reached; anything else is
// an outside SIGKILL. Peak RSS is read from /proc while a process lives.
#include "probes/host_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

namespace trainlock::validate {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(HostMemory, ARisingOomKillCounterIsHostMemoryExhausted) {
  const std::string why = DescribeOutsideKill("A", 22 * kGiB, 24 * kGiB, 3, 4);
  EXPECT_EQ(why,
            "host memory exhausted: the kernel's OOM killer ended process A at a peak RSS of "
            "22.0 GiB (host memory 24.0 GiB)");
}

TEST(HostMemory, ASigkillWithoutAnOomKillIsAnOutsideKill) {
  const std::string why = DescribeOutsideKill("C", 2 * kGiB, 24 * kGiB, 4, 4);
  EXPECT_EQ(why,
            "process C was killed by SIGKILL from outside the validator at a peak RSS of 2.0 GiB "
            "(host memory 24.0 GiB)");
}

TEST(HostMemory, WithoutACounterANearlyFullHostIsTakenForTheOomKiller) {
  EXPECT_NE(DescribeOutsideKill("A", 23 * kGiB, 24 * kGiB, std::nullopt, std::nullopt)
                .find("host memory exhausted"),
            std::string::npos);
  EXPECT_NE(DescribeOutsideKill("A", 1 * kGiB, 24 * kGiB, std::nullopt, std::nullopt)
                .find("from outside the validator"),
            std::string::npos);
}

TEST(HostMemory, ThisProcessHasAPeakRssAndTheHostHasMemory) {
  std::vector<char> touched(64 << 20, 1);
  const auto rss = PeakRssBytes(::getpid());
  ASSERT_TRUE(rss.has_value());
  EXPECT_GE(*rss, uint64_t{64} << 20);
  EXPECT_GT(HostMemoryBytes(), *rss);
  EXPECT_EQ(touched[12345], 1);
}

}  // namespace
}  // namespace trainlock::validate
