// Text from untrusted sources made safe to show; see terminal_text.h.
#include "base/terminal_text.h"

#include <cstdint>
#include <cstdio>

#include "base/redact.h"

namespace trainlock {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence at the start of `s` (1-4), or 0 when it is not one
// (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, truncated).
size_t Utf8SequenceLength(std::string_view s) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  auto continuation = [&](size_t i) { return i < s.size() && (byte(i) & 0xC0) == 0x80; };
  unsigned char b = byte(0);
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return continuation(1) ? 2 : 0;
  if (b >= 0xE0 && b <= 0xEF) {
    if (!continuation(1) || !continuation(2)) return 0;
    if (b == 0xE0 && byte(1) < 0xA0) return 0;   // overlong
    if (b == 0xED && byte(1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (b == 0xF0 && byte(1) < 0x90) return 0;   // overlong
    if (b == 0xF4 && byte(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

// True for the sequences XML forbids or terminals act on: C1 controls (U+0080-U+009F) and the
// noncharacters U+FFFE, U+FFFF.
bool IsForbiddenSequence(std::string_view seq) {
  if (seq.size() == 2)
    return static_cast<unsigned char>(seq[0]) == 0xC2 && static_cast<unsigned char>(seq[1]) < 0xA0;
  return seq == "\xEF\xBF\xBE" || seq == "\xEF\xBF\xBF";
}

// The code point of a bidirectional formatting character (embeddings, overrides, isolates and
// the marks), which make a terminal show text in another order than it is stored; 0 otherwise.
uint32_t BidiControl(std::string_view seq) {
  auto low6 = [&](size_t i) { return static_cast<unsigned char>(seq[i]) & 0x3Fu; };
  uint32_t cp = 0;
  if (seq.size() == 2) cp = (static_cast<unsigned char>(seq[0]) & 0x1Fu) << 6 | low6(1);
  if (seq.size() == 3)
    cp = (static_cast<unsigned char>(seq[0]) & 0x0Fu) << 12 | low6(1) << 6 | low6(2);
  const bool mark = cp == 0x200E || cp == 0x200F || cp == 0x061C;
  const bool embedding = cp >= 0x202A && cp <= 0x202E;
  const bool isolate = cp >= 0x2066 && cp <= 0x2069;
  return mark || embedding || isolate ? cp : 0;
}

}  // namespace

std::string CleanText(std::string_view raw) {
  const std::string redacted = RedactCredentials(raw);
  const std::string_view text = redacted;
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t n = Utf8SequenceLength(text.substr(i));
    std::string_view seq = text.substr(i, n);
    unsigned char b = static_cast<unsigned char>(text[i]);
    bool control = n == 1 && (b < 0x20 || b == 0x7F) && b != '\t' && b != '\n' && b != '\r';
    if (b == '\r') {
      // A carriage return rewrites a line when the markup's text is shown or copied into a
      // terminal: CR LF becomes LF, a lone CR a line break.
      if (i + 1 >= text.size() || text[i + 1] != '\n') out += '\n';
      i += 1;
    } else if (n == 0 || control || IsForbiddenSequence(seq)) {
      out += kReplacement;
      i += n == 0 ? 1 : n;
    } else if (uint32_t bidi = BidiControl(seq)) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u%04x", bidi);  // shown, never obeyed
      out += buf;
      i += n;
    } else {
      out += seq;
      i += n;
    }
  }
  return out;
}

std::string TerminalText(std::string_view text) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find('\n', start);
    out +=
        TerminalLine(text.substr(start, end == std::string_view::npos ? text.npos : end - start));
    if (end == std::string_view::npos) break;
    out += '\n';
    start = end + 1;
  }
  return out;
}

std::string TerminalLine(std::string_view raw) {
  const std::string redacted = RedactCredentials(raw);
  const std::string_view text = redacted;
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t n = Utf8SequenceLength(text.substr(i));
    const std::string_view seq = text.substr(i, n == 0 ? 1 : n);
    const unsigned char b = static_cast<unsigned char>(text[i]);
    char buf[16];
    if (n == 1 && (b < 0x20 || b == 0x7F)) {
      std::snprintf(buf, sizeof buf, "\\x%02x", b);
      out += buf;
    } else if (n == 0 || IsForbiddenSequence(seq)) {
      out += kReplacement;
    } else if (uint32_t bidi = BidiControl(seq)) {
      std::snprintf(buf, sizeof buf, "\\u%04x", bidi);
      out += buf;
    } else {
      out += seq;
    }
    i += seq.size();
  }
  return out;
}

std::string EscapeJsonForTerminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const size_t n = Utf8SequenceLength(text.substr(i));
    const std::string_view seq = text.substr(i, n == 0 ? 1 : n);
    uint32_t escape = 0;
    if (n == 2 && IsForbiddenSequence(seq)) {
      escape = (static_cast<unsigned char>(seq[0]) & 0x1Fu) << 6 |
               (static_cast<unsigned char>(seq[1]) & 0x3Fu);
    } else if (seq == "\xE2\x80\xA8" || seq == "\xE2\x80\xA9") {
      escape = seq[2] == '\xA8' ? 0x2028 : 0x2029;
    } else {
      escape = BidiControl(seq);
    }
    if (escape) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u%04x", escape);
      out += buf;
    } else if (n == 0) {
      out += kReplacement;  // not from nlohmann's replace handler; kept valid anyway
    } else {
      out += seq;
    }
    i += seq.size();
  }
  return out;
}

}  // namespace trainlock
