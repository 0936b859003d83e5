// Text trainlock did not write (a report's summaries, a device or library name, a command's
// output or argv, a registry's answer) made safe for where it is shown. One function for
// terminals and one for markup and XML, so that every caller escapes the same way. Both redact
// credentials first (base/redact.h): text shown anywhere never shows a password.
#pragma once

#include <string>
#include <string_view>

namespace trainlock {

// `text` as valid UTF-8 without control characters other than tab and newline: invalid
// sequences, C0/C1 controls and noncharacters become U+FFFD (XML forbids them, and HTML and
// terminals misbehave on them); CR LF becomes LF and a lone CR a newline (a CR that rewrites a
// line of a report's text when it is copied to a terminal); the bidirectional formatting
// characters TerminalLine names become the visible text \uNNNN (a browser, an XML viewer or a
// markdown page would otherwise show a summary in another order than it is stored).
std::string CleanText(std::string_view text);

// One line as a terminal may show it: C0 controls and DEL (an escape sequence smuggled into a
// summary, OSC/CSI, a carriage return or backspace that overwrites what was printed, a newline
// that breaks one-line-per-item output) become \xNN, bidirectional formatting characters
// (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C) become \uNNNN, C1 controls and
// invalid UTF-8 become U+FFFD.
std::string TerminalLine(std::string_view text);

// Several lines for a terminal: TerminalLine on each, the newlines between them kept.
std::string TerminalText(std::string_view text);

// JSON text (as nlohmann dumps it: valid UTF-8, C0 controls already escaped) with the
// characters a terminal acts on or reorders escaped as JSON escapes: C1 controls
// (U+0080-U+009F, \u0085 ...), the bidirectional formatting characters TerminalLine names and
// the line and paragraph separators U+2028, U+2029. The JSON stays equal (a reader decodes the
// same strings); only its bytes become safe to print. Outside strings JSON is ASCII, so a
// pass over the bytes cannot touch its structure.
std::string EscapeJsonForTerminal(std::string_view json_text);

}  // namespace trainlock
