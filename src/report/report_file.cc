// Reading a report file; see report_file.h.
#include "report/report_file.h"

#include <algorithm>

#include "base/diagnostic.h"
#include "base/json_file.h"
#include "report/report.h"

namespace trainlock {

nlohmann::json ReadReportFile(const std::filesystem::path& file, const std::string& display,
                              size_t max_lines) {
  nlohmann::json report = ReadJsonFile(file, display);
  if (std::string other = ReportSchemaVersionProblem(report); !other.empty())
    throw InputError(Diagnostic{display, {}, other, ""});
  std::vector<std::string> violations = ReportSchemaViolations(report);
  if (violations.empty()) return report;
  Diagnostics diags;
  const size_t listed = std::min(violations.size(), std::max<size_t>(max_lines, 1));
  for (size_t i = 0; i < listed; ++i) {
    const size_t more = i + 1 == listed ? violations.size() - listed : 0;
    diags.Error(display, {},
                std::string("not a ") + kReportSchema + " report: " + violations[i] +
                    (more ? " (and " + std::to_string(more) + " more)" : ""));
  }
  throw InputError(diags);
}
}  // namespace trainlock
