// Failure-to-exit-code mapping; see exit_code.h.
#include "base/exit_code.h"

#include <exception>
#include <iostream>

#include "base/diagnostic.h"
#include "base/failure.h"
#include "base/redact.h"

namespace trainlock {

int RunWithExitCodes(std::string_view program, const std::function<int()>& body,
                     std::string_view command) {
  try {
    return body();
  } catch (const InputError& e) {
    PrintDiagnostics(e.diagnostics(), std::cerr);
    return kExitBadInput;
  } catch (const Failure& e) {
    const std::string_view prefix = command.empty() ? program : command;
    std::cerr << prefix << ": " << RedactCredentials(e.what()) << "\n";
    for (const std::string& note : e.notes())
      std::cerr << prefix << ": " << RedactCredentials(note) << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << program << ": error: " << RedactCredentials(e.what()) << "\n";
    return kExitEnvironment;
  }
}

}  // namespace trainlock
