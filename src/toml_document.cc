// TOML parsing with positioned errors; see toml_document.h.
#include "toml_document.h"

#include "diagnostic.h"
#include "toml_fields.h"

namespace trainlock {

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
    throw InputError(Diagnostic{path, {line, column}, "not a TOML file: contains a NUL byte",
                                "is this a binary file?"});
  }
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    std::string message(e.description());
    throw InputError(Diagnostic{path, PosOf(e.source()), "invalid TOML: " + message, {}});
  }
}

}  // namespace trainlock
