// `trainlock report REPORT [--format text|markdown|html|junit|intoto] [--key KEY] [--out FILE]
// [--color MODE]`:
// renders a report.json for people and CI systems. Reads and checks the (untrusted) report,
// then hands it to the renderers of report_render.h; it renders, it does not gate, so the
// exit code is 0 whatever the verdict.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/failure.h"
#include "base/file_io.h"
#include "cli/commands.h"
#include "report/report_attestation.h"
#include "report/report_file.h"
#include "report/report_render.h"
#include "report/report_signing.h"

namespace trainlock::cli {
namespace {

struct ReportOptions {
  std::string report;
  std::string format = "text";
  std::string out;
  std::string color = "auto";
  std::string key;  // --key: the Ed25519 private key for --format intoto
};

ColorMode ColorModeOf(const std::string& name) {
  if (name == "always") return ColorMode::kAlways;
  if (name == "never") return ColorMode::kNever;
  return ColorMode::kAuto;
}

// --format intoto: the signed report's exact bytes in an in-toto statement, in a DSSE envelope
// signed with the same key (report_attestation.h).
std::string AttestReport(const ReportOptions& o) {
  if (o.key.empty()) {
    throw InputError(Diagnostic{"--key",
                                {},
                                "--format intoto signs: it needs --key PRIVATE.key",
                                "give the .key file from `trainlock keygen`"});
  }
  const std::string private_pem = ReadInputFile(o.key, o.key);
  try {
    return ReportAttestation(ReadInputFile(o.report, o.report), private_pem);
  } catch (const KeyError& e) {
    throw InputError(Diagnostic{o.key, {}, e.what(), "give the .key file from keygen"});
  } catch (const Failure& e) {
    throw InputError(Diagnostic{o.report, {}, e.what(), ""});
  }
}

int RunReport(ReportOptions o) {
  o.report = ReportPathOf(o.report);
  // Bad JSON and schema violations are bad input (exit 2), each named with file:line:column.
  nlohmann::json report = ReadReportFile(o.report, o.report);
  if (o.format == "intoto") {
    const std::string envelope = AttestReport(o);
    if (o.out.empty()) {
      std::cout << envelope << std::flush;
    } else {
      WriteFileAtomically(o.out, envelope);
    }
    return kExitOk;
  }
  ReportFormat format = ParseReportFormat(o.format).value_or(ReportFormat::kText);
  bool to_terminal = o.out.empty() && ::isatty(STDOUT_FILENO) == 1;
  bool color = ShouldUseColor(ColorModeOf(o.color), to_terminal, std::getenv("NO_COLOR"),
                              std::getenv("TERM"));
  std::string rendered = RenderReport(report, format, color);
  if (o.out.empty()) {
    std::cout << rendered << std::flush;
  } else {
    WriteFileAtomically(o.out, rendered);
  }
  return kExitOk;
}

}  // namespace

Command RegisterReport(CLI::App& app, const GlobalOptions&) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Render a report.json (trainlock.report/v2) for people and CI systems: text for a\n"
      "terminal, a GitHub-flavoured markdown table, one self-contained HTML page with charts\n"
      "(loss of the resume round trip, peak memory, time per check), JUnit XML, or an in-toto\n"
      "attestation of the image in a DSSE envelope (intoto, signed with --key). The report\n"
      "is checked against its schema first (exit 2 listing every violation); exit 0 whatever\n"
      "its verdict: this command renders, `trainlock gate` decides.");
  cmd->add_option("REPORT", options->report,
                  "The report.json to render, or a project directory for the one `trainlock "
                  "validate` wrote there (default: ./.trainlock/reports/report.json)");
  cmd->add_option("--format", options->format, "Output format")
      ->check(CLI::IsMember({"text", "markdown", "html", "junit", "intoto"}))
      ->capture_default_str();
  cmd->add_option("--key", options->key,
                  "Ed25519 private key (PEM, from `trainlock keygen`) that signed the report:\n"
                  "--format intoto signs the in-toto attestation with it");
  cmd->add_option("--out", options->out,
                  "Write to FILE (atomically: a complete file or the old one) instead of stdout");
  cmd->add_option("--color", options->color,
                  "ANSI colour in text output: auto (when stdout is a terminal, unless NO_COLOR\n"
                  "is set to a non-empty value or TERM=dumb), always (wins over NO_COLOR: you\n"
                  "asked for it), never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  return [options] { return RunReport(*options); };
}

}  // namespace trainlock::cli
