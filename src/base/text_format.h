// Numbers, durations, sizes and digests as people read them in reports, plans and messages.
// One definition each, so that the same value reads the same everywhere.
#pragma once

#include <string>
#include <string_view>

namespace trainlock {

// `value` with exactly `decimals` digits after the point: Fixed(3.14159, 2) is "3.14".
std::string Fixed(double value, int decimals);

// `value` in its shortest usual form (printf's %g): "0.9", "80", "1e+09".
std::string ShortNumber(double value);

// "0.071 s", "3.42 s", "1 min 25 s"; "?" for a non-finite or negative value.
std::string FormatSeconds(double seconds);

// "171.9 MiB", "69.3 GiB"; "?" for a non-finite or negative value.
std::string FormatBytes(double bytes);

// The short form of a SHA-256 for headers and facts: its first 12 hex characters.
std::string ShortSha(std::string_view sha);

}  // namespace trainlock
