// JSON input files with positioned errors; see json_file.h.
#include "base/json_file.h"

#include <algorithm>

#include "base/file_io.h"

namespace trainlock {

Diagnostic JsonParseDiagnostic(const std::string& display, const std::string& text,
                               const nlohmann::json::parse_error& error) {
  // error.byte is 1-based and points one past the offending character.
  size_t offset = std::min(text.size(), error.byte > 0 ? error.byte - 1 : 0);
  SourcePos pos{1, 1};
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++pos.line;
      pos.column = 1;
    } else {
      ++pos.column;
    }
  }
  // nlohmann's message repeats the byte offset; keep the part after "parse error ...: ".
  std::string message = error.what();
  if (size_t colon = message.find(": ", message.find("parse error")); colon != std::string::npos)
    message = message.substr(colon + 2);
  return Diagnostic{display, pos, "not valid JSON: " + message, ""};
}

nlohmann::json ReadJsonFile(const std::filesystem::path& file, const std::string& display) {
  const std::string text = ReadInputFile(file, display);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(JsonParseDiagnostic(display, text, e));
  }
}

}  // namespace trainlock
