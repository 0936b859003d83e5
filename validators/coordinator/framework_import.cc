// A framework that does not import in a locked image; see framework_import.h.
#include "coordinator/framework_import.h"

#include "base/terminal_text.h"
#include "report/check_metrics.h"
#include "report/pass_rules.h"
#include "support/check_selection.h"

namespace trainlock::validate {
namespace {

constexpr size_t kImportErrorRead = 8192;  // bytes of the interpreter's words looked at
constexpr size_t kFileNameMax = 4096;      // PATH_MAX
constexpr size_t kShownReason = 1000;      // bytes of the words the summary shows

// "libc10.so", "libcudnn.so.9", "_C.cpython-312-x86_64-linux-gnu.so", "torch/__init__.py".
bool IsLibraryOrPythonFile(std::string_view word) {
  if (word.size() > kFileNameMax) return false;
  if (word.ends_with(".py")) return word.size() > 3;
  const size_t so = word.find(".so");
  if (so == std::string_view::npos || so == 0) return false;
  const std::string_view rest = word.substr(so + 3);  // "" or ".9", ".9.1"
  if (rest.empty()) return true;
  if (rest.front() != '.') return false;
  return rest.find_first_not_of("0123456789.") == std::string_view::npos;
}

std::string Shown(std::string_view text) {
  return TerminalLine(text.substr(0, kShownReason)) + (text.size() > kShownReason ? "..." : "");
}

}  // namespace

std::string ImportErrorFile(std::string_view import_error) {
  const std::string_view text = import_error.substr(0, kImportErrorRead);
  constexpr std::string_view kBetweenWords = " \t\r\n:()'\",;";
  size_t at = 0;
  while ((at = text.find_first_not_of(kBetweenWords, at)) != std::string_view::npos) {
    const size_t end = text.find_first_of(kBetweenWords, at);
    const std::string_view word = text.substr(at, end == std::string_view::npos ? end : end - at);
    if (IsLibraryOrPythonFile(word)) return TerminalLine(word);
    if (end == std::string_view::npos) break;
    at = end;
  }
  return "";
}

CheckResult FrameworkImportFailure(const std::string& python, const std::string& module,
                                   const std::string& import_error) {
  const std::string name = module.substr(0, module.find('|'));
  const std::string file = ImportErrorFile(import_error);
  const std::string where = file.empty() ? "module " + TerminalLine(name) : file;
  const std::string summary = "the image's Python (" + TerminalLine(python) + ") cannot import " +
                              TerminalLine(name) + ", which the lock installs in it: " +
                              (import_error.empty() ? "no reason given" : Shown(import_error));
  PackagesMetrics m;
  m.python_problem = summary;  // what the rule fails on: the framework did not import
  return Judged("env.packages", ToJson(m), summary,
                "the image is broken at " + where +
                    ": rebuild it from the lock (`trainlock image build`) or pull it again by its "
                    "digest");
}

std::vector<CheckResult> RoundTripNotRun(const CheckResult& packages,
                                         const std::vector<std::string>& only) {
  std::vector<CheckResult> skipped;
  for (const char* id : {"train.step", "train.roundtrip", "train.eval", "ckpt.portable"}) {
    skipped.push_back(RunSelected(only, id, [&] {
      return Skip(id, "not run: env.packages failed: the engine's framework does not import",
                  packages.remedy);
    }));
  }
  return skipped;
}

}  // namespace trainlock::validate
