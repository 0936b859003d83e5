// TOML parsing with positioned errors; see toml_document.h.
#include "base/toml_document.h"

#include <optional>

#include "base/diagnostic.h"
#include "base/toml_fields.h"

namespace trainlock {
namespace {

// toml++ 3.3 limits the nesting of inline arrays and tables (256) but not of dotted keys or
// table headers, and recurses once per level: `a.a.a...(35000 levels) = 1` overflows the
// stack. Count the dots of each key and header outside strings and comments first.
constexpr int kMaxKeyDepth = 256;

std::optional<Diagnostic> DeepKey(std::string_view text, const std::string& path) {
  constexpr std::string_view kBasicMulti = R"(""")", kLiteralMulti = "'''";
  int line = 1, column = 0, dots = 0;
  bool in_key = true;      // in the key or header part of a statement
  char quote = 0;          // inside a single-line string
  std::string_view multi;  // inside a multi-line string: its delimiter
  bool comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
      comment = false;
      if (!quote && multi.empty()) {
        in_key = true;
        dots = 0;
      }
      continue;
    }
    if (comment) continue;
    if (!multi.empty()) {
      if (text.substr(i, 3) == multi) {
        i += 2;
        multi = {};
      } else if (c == '\\' && multi == kBasicMulti) {
        ++i;
      }
      continue;
    }
    if (quote) {
      if (c == '\\' && quote == '"') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (text.substr(i, 3) == kBasicMulti || text.substr(i, 3) == kLiteralMulti) {
      multi = text.substr(i, 3);
      i += 2;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      comment = true;
    } else if (in_key && (c == '=' || c == ']')) {
      in_key = false;
    } else if (in_key && c == '.' && ++dots > kMaxKeyDepth) {
      return Diagnostic{
          path,
          {line, column},
          "invalid TOML: key nested deeper than " + std::to_string(kMaxKeyDepth) + " levels",
          {}};
    }
  }
  return std::nullopt;
}

}  // namespace

toml::table ParseTomlDocument(std::string_view text, const std::string& path) {
  // toml++ rejects embedded NUL bytes with a positioned error of its own, but reports them as
  // "unterminated" at odd places; name binary input plainly instead.
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    int line = 1, column = 1;
    for (size_t i = 0; i < nul; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw InputError(Diagnostic{
        path, {line, column}, "not a TOML file: contains a NUL byte", "is this a binary file?"});
  }
  if (auto deep = DeepKey(text, path)) throw InputError(*deep);
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    std::string message(e.description());
    throw InputError(Diagnostic{path, PosOf(e.source()), "invalid TOML: " + message, {}});
  }
}

}  // namespace trainlock
