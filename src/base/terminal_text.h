// Text trainlock did not write (a report's summaries, a device or library name, a command's
// output or argv, a registry's answer) made safe for where it is shown. One function for
// terminals and one for markup and XML, so that every caller escapes the same way.
#pragma once

#include <string>
#include <string_view>

namespace trainlock {

// `text` as valid UTF-8 without control characters other than tab, newline and carriage
// return: invalid sequences, C0/C1 controls and noncharacters become U+FFFD. XML forbids them,
// and HTML and terminals misbehave on them.
std::string CleanText(std::string_view text);

// One line as a terminal may show it: C0 controls and DEL (an escape sequence smuggled into a
// summary, OSC/CSI, a carriage return or backspace that overwrites what was printed, a newline
// that breaks one-line-per-item output) become \xNN, bidirectional formatting characters
// (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C) become \uNNNN, C1 controls and
// invalid UTF-8 become U+FFFD.
std::string TerminalLine(std::string_view text);

// Several lines for a terminal: TerminalLine on each, the newlines between them kept.
std::string TerminalText(std::string_view text);

}  // namespace trainlock
