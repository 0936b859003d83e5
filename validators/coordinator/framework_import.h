// env.packages when the engine's framework does not import in a locked image's own interpreter:
// a broken image (the image installed the lock's closure; the lock pins that framework), never
// "install it in that interpreter". It is judged on the import's own words: the file the loader
// or the interpreter could not use (a .so it could not open, a module file that failed) is what
// the check names. A function of its own so that env.packages can combine it with the
// comparison of the installed packages (checks/python_packages.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"

namespace trainlock::validate {

// The file an import error's text names: "libtorch_cpu.so" in "libtorch_cpu.so: cannot open
// shared object file: No such file or directory", ".../torch/__init__.py" in "cannot import
// name 'x' from 'torch' (.../torch/__init__.py)". The first word that is a shared library or a
// Python file, read from the first 8 KiB, at most 4096 bytes, terminal-safe; "" when the text
// names none ("No module named 'torch'").
std::string ImportErrorFile(std::string_view import_error);

// env.packages failing: the image's interpreter `python` cannot import `module` (the engine
// probe's "a|b": neither did) for `import_error` (the interpreter's words, untrusted: bounded
// and terminal-safe here), naming the file it failed on, else the module.
CheckResult FrameworkImportFailure(const std::string& python, const std::string& module,
                                   const std::string& import_error);

// train.step, train.roundtrip, train.eval and ckpt.portable not run because `packages` (that
// failure) found the engine's framework does not import; "not selected (--only)" for one that
// `only` leaves out.
std::vector<CheckResult> RoundTripNotRun(const CheckResult& packages,
                                         const std::vector<std::string>& only);

}  // namespace trainlock::validate
