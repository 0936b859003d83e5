// `trainlock plan REPORT`: the hardware plan for a validator report (plan.h): does the run fit
// with DDP, the fixes when it does not, which accelerator to book and for how long.
#include <iostream>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/json_file.h"
#include "base/terminal_text.h"
#include "cli/commands.h"
#include "plan/plan.h"
#include "report/report.h"
#include "report/report_file.h"

namespace trainlock::cli {
namespace {

struct PlanCliOptions {
  std::string report;
  std::string tokens;
  int64_t gpus = 0;
  std::vector<std::string> costs;
  bool json = false;
};

PlanOptions ParseOptions(const PlanCliOptions& o, const Catalog& catalog) {
  PlanOptions options;
  options.gpus = o.gpus;
  if (!o.tokens.empty()) {
    std::optional<double> tokens = ParseTokenCount(o.tokens);
    if (!tokens) {
      throw InputError(Diagnostic{"--tokens",
                                  {},
                                  Quoted(o.tokens) + " is not a token count",
                                  "a positive number with an optional K, M, B or T suffix, "
                                  "e.g. 10B or 1.5T"});
    }
    options.tokens = *tokens;
  }
  for (const std::string& text : o.costs) {
    std::string error;
    auto cost = ParseCostOverride(text, catalog, &error);
    if (!cost) throw InputError(Diagnostic{"--cost", {}, error, ""});
    options.costs[cost->first] = cost->second;
  }
  return options;
}

int RunPlan(PlanCliOptions o, const GlobalOptions& global) {
  o.report = ReportPathOf(o.report);
  Catalog catalog = LoadCatalog(global);
  PlanOptions options = ParseOptions(o, catalog);
  PlanInput input =
      PlanInputFromReport(ReadReportFile(o.report, o.report, /*max_lines=*/1), o.report);
  Plan plan = MakePlan(input, options, catalog);
  if (o.json) {
    std::cout << DumpJsonOutput(PlanJson(plan)) << "\n";
  } else {
    // The plan quotes the report (its device name): shown as text, never as escapes.
    std::cout << TerminalText(RenderPlanText(plan));
  }
  return kExitOk;
}

}  // namespace

Command RegisterPlan(CLI::App& app, const GlobalOptions& global) {
  auto options = std::make_shared<PlanCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "From a validator report's measured peak memory, step time and device capacity: whether\n"
      "the run fits with DDP, the fixes when it does not (activation checkpointing, a smaller\n"
      "micro-batch with grad accumulation, FSDP over N GPUs) with their memory arithmetic,\n"
      "which of A100-80GB, H100-80GB, H200 and MI300X fits at the lowest cost, and the\n"
      "wall-clock of a token budget against a 7-day pilot window, with every assumption\n"
      "printed. Exit 0 with a plan, 2 bad input.");
  cmd->add_option("REPORT", options->report,
                  "A report.json written by trainlock validate, or a project directory for the "
                  "one validate wrote there (default: ./.trainlock/reports/report.json)");
  cmd->add_option("--tokens", options->tokens,
                  "Token budget of the run, e.g. 10B, 500M, 1.5T (for the wall-clock)");
  cmd->add_option("--gpus", options->gpus,
                  "GPUs the run uses (default: the report's device count); also fixes FSDP's N")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--cost", options->costs,
                  "NAME=X: an accelerator's price per GPU-hour relative to an A100-80GB "
                  "(a,b or repeated; default: lockfiles/compat/gpus.toml)")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_flag("--json", options->json, "Print the plan as JSON");
  return [options, &global] { return RunPlan(*options, global); };
}

}  // namespace trainlock::cli
