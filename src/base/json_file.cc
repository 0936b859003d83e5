// JSON input with limits and positioned errors; see json_file.h.
#include "base/json_file.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "base/file_io.h"
#include "base/json_limits.h"
#include "base/redact.h"
#include "base/terminal_text.h"

namespace trainlock {
namespace {

// The 1-based line and column of byte `offset` of `text`.
SourcePos PositionOf(std::string_view text, size_t offset) {
  SourcePos pos{1, 1};
  for (size_t i = 0; i < std::min(offset, text.size()); ++i) {
    if (text[i] == '\n') {
      ++pos.line;
      pos.column = 1;
    } else {
      ++pos.column;
    }
  }
  return pos;
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1,
// column 2: " prefix, which repeats the position the diagnostic carries anyway.
std::string LibraryMessage(const nlohmann::json::exception& e) {
  std::string message = e.what();
  if (size_t bracket = message.find("] "); bracket != std::string::npos)
    message = message.substr(bracket + 2);
  if (message.starts_with("parse error")) {
    if (size_t colon = message.find(": "); colon != std::string::npos)
      message = message.substr(colon + 2);
  }
  return message;
}

// The parse, or the refusal with its position (line 0 when there is none).
std::optional<nlohmann::json> Parse(std::string_view text, Diagnostic* refusal) {
  if (std::optional<JsonLimitBreach> breach = FindJsonLimitBreach(text)) {
    *refusal = Diagnostic{"", PositionOf(text, breach->offset), breach->message, ""};
    return std::nullopt;
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    *refusal = JsonParseDiagnostic("", std::string(text), e);
  } catch (const nlohmann::json::exception& e) {
    *refusal = Diagnostic{"", {}, "not valid JSON: " + LibraryMessage(e), ""};
  }
  return std::nullopt;
}

}  // namespace

Diagnostic JsonParseDiagnostic(const std::string& display, const std::string& text,
                               const nlohmann::json::parse_error& error) {
  // error.byte is 1-based and points one past the offending character.
  const SourcePos pos = PositionOf(text, error.byte > 0 ? error.byte - 1 : 0);
  return Diagnostic{display, pos, "not valid JSON: " + LibraryMessage(error), ""};
}

nlohmann::json ParseJsonText(std::string_view text, const std::string& display) {
  Diagnostic refusal;
  std::optional<nlohmann::json> json = Parse(text, &refusal);
  if (!json) {
    refusal.path = display;
    throw InputError(refusal);
  }
  return std::move(*json);
}

std::optional<nlohmann::json> TryParseJsonText(std::string_view text, std::string* problem) {
  Diagnostic refusal;
  std::optional<nlohmann::json> json = Parse(text, &refusal);
  if (!json && problem) {
    *problem = refusal.message;
    if (refusal.pos.known())
      *problem += " at line " + std::to_string(refusal.pos.line) + ", column " +
                  std::to_string(refusal.pos.column);
  }
  return json;
}

std::optional<nlohmann::json> TryReadJsonFile(const std::filesystem::path& file,
                                              std::string* problem) {
  std::string text;
  try {
    text = ReadInputFile(file, file.string());  // regular files only, capped: never a FIFO
  } catch (const InputError& e) {
    if (problem) *problem = e.what();
    return std::nullopt;
  }
  return TryParseJsonText(text, problem);
}

nlohmann::json ReadJsonFile(const std::filesystem::path& file, const std::string& display) {
  return ParseJsonText(ReadInputFile(file, display), display);
}

namespace {

// `value` with every string, member names included, through RedactCredentials: --json output
// quotes reports and registry answers trainlock did not write, as the text output does.
nlohmann::json Redacted(const nlohmann::json& value) {
  if (value.is_string()) return RedactCredentials(value.get_ref<const std::string&>());
  if (value.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const nlohmann::json& element : value) out.push_back(Redacted(element));
    return out;
  }
  if (value.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, member] : value.items()) out[RedactCredentials(key)] = Redacted(member);
    return out;
  }
  return value;
}

}  // namespace

std::string DumpJsonOutput(const nlohmann::json& value, int indent) {
  return EscapeJsonForTerminal(
      Redacted(value).dump(indent, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace trainlock
