// Durations and timestamps as people and reports write them: "36h", "7d", "1h30m"; RFC 3339.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainlock {

// Seconds in a duration made of <integer><unit> parts, units w d h m s ("7d", "1h30m",
// "90s"); nullopt for anything else (no sign, no fraction, no bare number, no repeated unit).
std::optional<int64_t> ParseDurationSeconds(std::string_view text);

// Seconds since the Unix epoch of an RFC 3339 timestamp ("2026-11-30T03:09:17Z",
// "2026-11-30T04:09:17.5+01:00"; fractions are dropped); nullopt when it is not one.
std::optional<int64_t> ParseRfc3339(std::string_view text);

// Now as RFC 3339 in UTC, to the second: "2026-12-01T10:02:11Z" (reports, progress lines).
std::string NowRfc3339();

// "3d 4h", "2h 5m", "42s": a duration for messages, to its two largest units.
std::string FormatDuration(int64_t seconds);

}  // namespace trainlock
