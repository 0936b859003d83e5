// Specification of durations and RFC 3339 timestamps as the gate reads them.
#include <gtest/gtest.h>

#include "base/time_text.h"

namespace trainlock {
namespace {

TEST(Duration, UnitsLargestFirstAddUp) {
  EXPECT_EQ(ParseDurationSeconds("90s"), 90);
  EXPECT_EQ(ParseDurationSeconds("1h30m"), 5400);
  EXPECT_EQ(ParseDurationSeconds("7d"), 7 * 86400);
  EXPECT_EQ(ParseDurationSeconds("2w1d"), 15 * 86400);
}

TEST(Duration, AnythingElseIsRejected) {
  for (const char* bad : {"", "7", "d", "-1h", "1.5h", "30m1h", "1h1h", "7 d", "1y", "h1"})
    EXPECT_FALSE(ParseDurationSeconds(bad).has_value()) << bad;
}

TEST(Rfc3339, UtcAndOffsetsMeanTheSameInstant) {
  EXPECT_EQ(ParseRfc3339("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(ParseRfc3339("2026-11-30T03:09:17Z"), 1796008157);
  EXPECT_EQ(ParseRfc3339("2026-11-30T04:09:17.25+01:00"), 1796008157);
}

TEST(Rfc3339, MalformedTimestampsAreRejected) {
  for (const char* bad : {"2026-11-30", "2026-11-30 03:09:17Z", "2026-13-01T00:00:00Z",
                          "2026-11-30T25:00:00Z", "2026-11-30T03:09:17"})
    EXPECT_FALSE(ParseRfc3339(bad).has_value()) << bad;
}

TEST(Rfc3339, AnOffsetOutsideADayIsRejected) {
  for (const char* bad : {"2026-11-30T03:09:17+25:00", "2026-11-30T03:09:17-24:61",
                          "2026-11-30T03:09:17+00:60", "2026-11-30T03:09:17-99:99"})
    EXPECT_FALSE(ParseRfc3339(bad).has_value()) << bad;
  EXPECT_EQ(ParseRfc3339("2026-11-30T03:09:17+23:59"), 1796008157 - 23 * 3600 - 59 * 60);
  EXPECT_EQ(ParseRfc3339("2026-11-30T03:09:17-23:59"), 1796008157 + 23 * 3600 + 59 * 60);
}

TEST(Rfc3339, ADayThatTheMonthDoesNotHaveIsRejected) {
  for (const char* bad : {"2026-02-29T00:00:00Z", "2026-02-31T00:00:00Z", "2026-04-31T00:00:00Z",
                          "2026-00-10T00:00:00Z", "2100-02-29T00:00:00Z"})
    EXPECT_FALSE(ParseRfc3339(bad).has_value()) << bad;
  EXPECT_TRUE(ParseRfc3339("2028-02-29T00:00:00Z").has_value());
  EXPECT_TRUE(ParseRfc3339("2000-02-29T00:00:00Z").has_value());
}

TEST(Rfc3339, AHugeFractionIsRejectedWithoutRecursingThroughIt) {
  std::string huge = "2026-11-30T03:09:17." + std::string(3 << 20, '0') + "Z";
  EXPECT_FALSE(ParseRfc3339(huge).has_value());
}

TEST(FormatDuration, TwoLargestUnits) {
  EXPECT_EQ(FormatDuration(42), "42s");
  EXPECT_EQ(FormatDuration(125), "2m 5s");
  EXPECT_EQ(FormatDuration(3 * 86400 + 4 * 3600 + 59), "3d 4h");
  EXPECT_EQ(FormatDuration(3600), "1h 0m");
}

}  // namespace
}  // namespace trainlock
