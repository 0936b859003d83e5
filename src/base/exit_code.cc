// Failure-to-exit-code mapping; see exit_code.h.
#include "base/exit_code.h"

#include <exception>
#include <iostream>

#include "base/diagnostic.h"

namespace trainlock {

int RunWithExitCodes(std::string_view program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const InputError& e) {
    PrintDiagnostics(e.diagnostics(), std::cerr);
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << program << ": error: " << e.what() << "\n";
    return kExitEnvironment;
  }
}

}  // namespace trainlock
