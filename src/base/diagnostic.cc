// Formatting of diagnostics; see diagnostic.h.
#include "base/diagnostic.h"

#include "base/redact.h"
#include "base/terminal_text.h"

namespace trainlock {

std::string Diagnostic::Format() const {
  std::string out = path;
  if (pos.known()) {
    out += ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column > 0 ? pos.column : 1);
  }
  out += ": error: " + message;
  if (!hint.empty()) out += "; " + hint;
  // Keep the promise of one line even when a message quotes user input with newlines.
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return RedactCredentials(out);
}

void Diagnostics::Error(std::string path, SourcePos pos, std::string message, std::string hint) {
  items_.push_back({std::move(path), pos, std::move(message), std::move(hint)});
}

void PrintDiagnostics(const Diagnostics& diags, std::ostream& out, size_t limit) {
  size_t shown = 0;
  for (const Diagnostic& d : diags.items()) {
    if (shown == limit) {
      const Diagnostic& first = diags.items().front();
      out << first.path << ": error: " << diags.size() - limit << " more errors not shown\n";
      break;
    }
    out << TerminalText(d.Format()) << "\n";  // it may quote what a hostile file holds
    ++shown;
  }
}

static std::string FirstLine(const Diagnostics& d) {
  return d.empty() ? std::string("invalid input") : d.items().front().Format();
}

InputError::InputError(Diagnostics diags) : std::runtime_error(FirstLine(diags)), diags_(diags) {}

InputError::InputError(Diagnostic diag)
    : InputError([&] {
        Diagnostics d;
        d.Add(std::move(diag));
        return d;
      }()) {}

std::string Quoted(std::string_view raw) {
  // Redacted before it is cut short: a cut could leave half a password that no longer looks
  // like one.
  const std::string value = RedactCredentials(raw);
  constexpr size_t kMax = 60;
  std::string out = "'";
  size_t shown = 0;
  for (unsigned char c : value) {
    if (shown == kMax) {
      out += "...";
      break;
    }
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
    ++shown;
  }
  out += "'";
  return out;
}

}  // namespace trainlock
