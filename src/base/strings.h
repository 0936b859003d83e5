// Small string helpers that several parsers and renderers share: one definition each, so
// that the library also builds as a few large translation units (TRAINLOCK_UNITY).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trainlock {

// `text` with ASCII letters lowered; other bytes unchanged (names, not prose).
std::string AsciiLower(std::string_view text);

// `text` without leading and trailing spaces and tabs.
std::string TrimBlanks(std::string_view text);

// The parts with `separator` between them: JoinStrings({"a", "b"}, ", ") is "a, b".
std::string JoinStrings(const std::vector<std::string>& parts, std::string_view separator);

// `text` as one single-quoted word of a POSIX shell ('it'\''s'): nothing in it is expanded.
// Generated Containerfile RUN lines write every value from a manifest or lock through it.
std::string SingleQuotedForShell(std::string_view text);

}  // namespace trainlock
