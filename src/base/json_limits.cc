// The limit scan of untrusted JSON; see json_limits.h.
#include "base/json_limits.h"

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "base/diagnostic.h"

namespace trainlock {
namespace {

// One open array or object. In an object the strings alternate key, value: a string is a key
// after '{' or ',' and a value after ':'.
struct Frame {
  bool object = false;
  bool expect_key = false;
  std::set<std::string> keys;
};

// The index of the quote that closes the string opened at `open`, or npos when the text ends
// first (the parser then refuses it).
size_t StringEnd(std::string_view text, size_t open) {
  for (size_t i = open + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return i;
    }
  }
  return std::string_view::npos;
}

// A key as the parser decodes it, so that "a" and "\u0061" are the same name.
std::string KeyName(std::string_view quoted) {
  if (quoted.find('\\') == std::string_view::npos)
    return std::string(quoted.substr(1, quoted.size() - 2));
  nlohmann::json decoded = nlohmann::json::parse(quoted, nullptr, /*allow_exceptions=*/false);
  return decoded.is_string() ? decoded.get<std::string>() : std::string(quoted);
}

bool IsNumberChar(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// The end of the number starting at `begin`; sets *breach when it overflows a double.
size_t ScanNumber(std::string_view text, size_t begin, std::optional<JsonLimitBreach>* breach) {
  size_t end = begin;
  while (end < text.size() && IsNumberChar(text[end])) ++end;
  const std::string token(text.substr(begin, end - begin));
  if (std::isinf(std::strtod(token.c_str(), nullptr)))
    *breach =
        JsonLimitBreach{begin, "number " + Quoted(token) + " is beyond the range of a double"};
  return end;
}

}  // namespace

std::optional<JsonLimitBreach> FindJsonLimitBreach(std::string_view text) {
  std::vector<Frame> open;
  std::optional<JsonLimitBreach> breach;
  for (size_t i = 0; i < text.size() && !breach; ++i) {
    const char c = text[i];
    if (c == '"') {
      const size_t end = StringEnd(text, i);
      if (end == std::string_view::npos) break;
      if (!open.empty() && open.back().object && open.back().expect_key) {
        Frame& frame = open.back();
        frame.expect_key = false;
        if (!frame.keys.insert(KeyName(text.substr(i, end + 1 - i))).second) {
          breach = JsonLimitBreach{i, "member " + Quoted(text.substr(i + 1, end - i - 1)) +
                                          " appears twice in one object"};
        }
      }
      i = end;
    } else if (c == '{' || c == '[') {
      if (open.size() == static_cast<size_t>(kMaxJsonDepth)) {
        breach = JsonLimitBreach{i, "JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                                        " levels of arrays and objects"};
      }
      open.push_back({c == '{', c == '{', {}});
    } else if (c == '}' || c == ']') {
      if (!open.empty()) open.pop_back();
    } else if (c == ',') {
      if (!open.empty() && open.back().object) open.back().expect_key = true;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      i = ScanNumber(text, i, &breach) - 1;
    }
  }
  return breach;
}

}  // namespace trainlock
