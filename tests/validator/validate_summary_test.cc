// The validator's terminal summary (validators/coordinator/validate_summary.h): what it prints
// from outside trainlock (an engine's probe answer, an interpreter path, the project's path) is
// shown escaped, one line each, never acted on by the terminal.
#include "coordinator/validate_summary.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace trainlock::validate {
namespace {

// What PrintSummary writes to stdout for `report`.
std::string SummaryOf(const Report& report, const ValidateOptions& o) {
  std::ostringstream captured;
  std::streambuf* was = std::cout.rdbuf(captured.rdbuf());
  PrintSummary(report, o, std::string(64, 'a'), std::nullopt);
  std::cout.rdbuf(was);
  return captured.str();
}

// Issue #61: "engine ddp: torch T in PYTHON" printed the probe's answer and --python raw.
TEST(ValidateSummary, AnEnginesProbeAnswerAndInterpreterPathAreShownEscaped) {
  Report report;
  report.engine = ReportEngine{};
  report.engine->name = "ddp";
  report.engine->torch = "2.11\x1b]0;pwned\x07";
  report.engine->python = "/opt/py\n  PASS  train.roundtrip   forged";
  ValidateOptions o;
  o.project = "/work/\x1b[2Jproject";
  o.out = "report.json";
  const std::string out = SummaryOf(report, o);
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(out.find('\x07'), std::string::npos) << out;
  EXPECT_EQ(out.find("\n  PASS  train.roundtrip   forged"), std::string::npos) << out;
  EXPECT_NE(out.find("engine ddp: torch 2.11\\x1b]0;pwned\\x07 in /opt/py\\x0a  PASS"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace trainlock::validate
