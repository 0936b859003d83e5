// Parsing and formatting of durations and RFC 3339 timestamps; see time_text.h.
#include "base/time_text.h"

#include <ctime>
#include <regex>
#include <string>

namespace trainlock {
namespace {

int64_t UnitSeconds(char unit) {
  switch (unit) {
    case 'w':
      return 7 * 86400;
    case 'd':
      return 86400;
    case 'h':
      return 3600;
    case 'm':
      return 60;
    case 's':
      return 1;
  }
  return 0;
}

// Days in month `month` (0-11) of `year`: timegm would quietly turn February 31 into March 3.
int DaysInMonth(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 1 && leap ? 29 : kDays[month];
}

}  // namespace

std::optional<int64_t> ParseDurationSeconds(std::string_view text) {
  // Units must appear largest first and at most once, so "1h30m" is accepted and "30m1h" is
  // not: a typo should not silently mean something.
  static constexpr std::string_view kOrder = "wdhms";
  size_t next_unit = 0;
  int64_t total = 0;
  size_t i = 0;
  if (text.empty()) return std::nullopt;
  while (i < text.size()) {
    size_t start = i;
    int64_t value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (value > (int64_t{1} << 40)) return std::nullopt;
      value = value * 10 + (text[i] - '0');
      ++i;
    }
    if (i == start || i == text.size()) return std::nullopt;
    size_t unit = kOrder.find(text[i], next_unit);
    if (unit == std::string_view::npos) return std::nullopt;
    total += value * UnitSeconds(text[i]);
    next_unit = unit + 1;
    ++i;
  }
  return total;
}

std::optional<int64_t> ParseRfc3339(std::string_view text) {
  static const std::regex kPattern(
      R"(^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|([+-])(\d{2}):(\d{2}))$)");
  std::cmatch m;
  // std::regex recurses per character: a megabyte of digits must not reach it.
  if (text.size() > 64) return std::nullopt;
  if (!std::regex_match(text.begin(), text.end(), m, kPattern)) return std::nullopt;
  auto field = [&](int k) { return std::stoi(m[k].str()); };
  std::tm tm{};
  tm.tm_year = field(1) - 1900;
  tm.tm_mon = field(2) - 1;
  tm.tm_mday = field(3);
  tm.tm_hour = field(4);
  tm.tm_min = field(5);
  tm.tm_sec = field(6);
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 ||
      tm.tm_mday > DaysInMonth(field(1), tm.tm_mon) || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60) {
    return std::nullopt;
  }
  int64_t seconds = static_cast<int64_t>(timegm(&tm));
  if (m[9].matched) {
    // RFC 3339's time-numoffset: hours 00-23, minutes 00-59. "+25:00" or "-24:61" is not a
    // zone; read as arithmetic it would move a report's age by more than a day.
    if (field(10) > 23 || field(11) > 59) return std::nullopt;
    int64_t offset = field(10) * 3600 + field(11) * 60;
    seconds -= m[9].str() == "+" ? offset : -offset;
  }
  return seconds;
}

std::string FormatDuration(int64_t seconds) {
  static constexpr const char* kNames[] = {"d", "h", "m", "s"};
  static constexpr int64_t kSizes[] = {86400, 3600, 60, 1};
  const bool negative = seconds < 0;
  if (negative) seconds = -seconds;
  int k = 0;
  while (k < 3 && seconds < kSizes[k]) ++k;
  std::string out = std::to_string(seconds / kSizes[k]) + kNames[k];
  if (k < 3) out += " " + std::to_string(seconds % kSizes[k] / kSizes[k + 1]) + kNames[k + 1];
  return negative ? "-" + out : out;
}

std::string NowRfc3339() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

}  // namespace trainlock
