// Failure-to-exit-code mapping; see exit_code.h.
#include "base/exit_code.h"

#include <exception>
#include <filesystem>
#include <iostream>

#include "base/diagnostic.h"
#include "base/failure.h"
#include "base/terminal_text.h"

namespace trainlock {

int RunWithExitCodes(std::string_view program, const std::function<int()>& body,
                     std::string_view command) {
  try {
    return body();
  } catch (const InputError& e) {
    PrintDiagnostics(e.diagnostics(), std::cerr);
    return kExitBadInput;
  } catch (const Failure& e) {
    // Messages quote what outside sources sent (a registry's header, a package's METADATA, a
    // file name): TerminalText escapes their controls and redacts credentials.
    const std::string_view prefix = command.empty() ? program : command;
    // Bad input in the one error format (base/usage_error.h): "trainlock CMD: error: ...".
    const char* kind = e.exit_code() == kExitBadInput ? "error: " : "";
    std::cerr << prefix << ": " << kind << TerminalText(e.what()) << "\n";
    // A note is one line (failure.h): a newline in what it quotes (a layer's file name) is
    // shown escaped, never as a line of its own without the prefix.
    for (const std::string& note : e.notes())
      std::cerr << prefix << ": " << TerminalLine(note) << "\n";
    return e.exit_code();
  } catch (const std::filesystem::filesystem_error& e) {
    // Our own words for a file operation that failed: the path and the system's reason, not
    // the library's "filesystem error: cannot ...: ..." text.
    std::cerr << program << ": error: " << TerminalLine(e.path1().string()) << ": "
              << e.code().message() << "\n";
    return kExitEnvironment;
  } catch (const std::exception& e) {
    std::cerr << program << ": error: " << TerminalText(e.what()) << "\n";
    return kExitEnvironment;
  }
}

}  // namespace trainlock
