// The limits untrusted JSON must keep before nlohmann builds a tree of it: nesting depth,
// numbers a double can hold, and each member named once per object. nlohmann parses without
// recursion, but copying, dumping and comparing a tree recurse once per level, so a
// 100,000-deep document read from a report, a registry or a checkpoint would overflow the
// stack later; and it throws out_of_range (not parse_error) for 1e999 and silently keeps the
// last of two equal keys. A scan of the text finds all three, with their position, first.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace trainlock {

// Arrays and objects may nest this deep (the top-level value is depth 1). Every format
// trainlock reads nests fewer than 10 levels.
inline constexpr int kMaxJsonDepth = 64;

// Where the text breaks a limit: byte offset (0-based) and what is wrong.
struct JsonLimitBreach {
  size_t offset = 0;
  std::string message;  // e.g. "JSON nested deeper than 64 levels of arrays and objects"
};

// The first place in `text` that nests deeper than kMaxJsonDepth, holds a number outside a
// double's range, or repeats a member name within one object; nullopt when there is none.
// Text that is not JSON at all is left for the parser to refuse: this scan never reads past
// the end and is linear in the text's size.
std::optional<JsonLimitBreach> FindJsonLimitBreach(std::string_view text);

}  // namespace trainlock
