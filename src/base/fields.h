// What the TOML and YAML field readers (toml_fields.h, yaml_fields.h) share: whether a field
// must be there, and the wording of the problems both find, so that a wrong type, a value out
// of range or a misspelt key reads the same in trainlock.toml and in a training config.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trainlock {

enum class Need { kRequired, kOptional };

// "'training.seq_len' must be an integer, not a mapping".
std::string WrongTypeMessage(std::string_view field, std::string_view expected,
                             std::string_view found);

// "'training.seq_len' = 0 is out of range"; `value` as the message should show it.
std::string OutOfRangeMessage(std::string_view field, std::string_view value);

// The hint beside OutOfRangeMessage: "expected 1 to 1048576", "expected 0 to 0.9" (doubles
// as ShortNumber writes them).
std::string ExpectedRangeHint(int64_t min, int64_t max);
std::string ExpectedRangeHint(double min, double max);

// "unknown key 'rope_thetta' in 'model'"; `where` says which table or mapping
// ("at the top level" for the root, see kTopLevel).
std::string UnknownKeyMessage(std::string_view key, std::string_view where);

inline constexpr std::string_view kTopLevel = "at the top level";

}  // namespace trainlock
