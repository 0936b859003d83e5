// The one pass rule of every check: why a check's metrics are not a pass. One table keyed by
// check id (pass_rules.cc) holds each check's rule and the metrics it reads; the validator's
// judges only measure and build the metrics, summary and remedy, and the status of a measured
// check is its rule's answer (Judged); the gate runs the very same rules over a report
// (EvidenceContradictions). Nothing else decides that a check passes or fails
// (tests/pass_rules_test.cc scans src/ and validators/ for it). A judge still decides that a
// check was not measured: skipped (not selected, nothing to judge) or an error (the probe could
// not measure).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"
#include "report/report_view.h"

namespace trainlock {

// One reason the metrics are not a pass: the metric it reads, why (a sentence naming the metric
// and its value), and what to do about it ("" when the rule has no remedy of its own).
struct RuleFinding {
  std::string metric;
  std::string why;
  std::string remedy;
};

// What a rule may read beside the check's own metrics: train.step's rule reads the telemetry
// sampled while the round trip trained (train.roundtrip's `telemetry`, gpu_throttle.h).
struct RuleContext {
  nlohmann::json telemetry = nlohmann::json::object();
};

// Why check `id`'s `metrics` are not a pass; empty when they are one. An id without a rule
// (not in check_ids.h) is never a pass.
std::vector<RuleFinding> PassRuleFindings(std::string_view id, const nlohmann::json& metrics,
                                          const RuleContext& context = {});

// Whether check `id` has a rule; every id of check_ids.h has one.
bool HasPassRule(std::string_view id);

// The metrics check `id`'s rule reads (top-level members of its metrics); every other member is
// information only. Empty for an id without a rule.
const std::vector<std::string>& MetricsTheRuleReads(std::string_view id);

// A measured check, its status its rule's answer: pass when the rule finds nothing, else fail.
// `summary` and `remedy` are the judge's words. On a fail whose judge wrote no remedy (the judge
// described a measurement, not a failure), the summary leads with the rule's reasons and the
// remedy is the rule's. A pass keeps no remedy.
CheckResult Judged(std::string id, nlohmann::json metrics, std::string summary,
                   std::string remedy = {}, const RuleContext& context = {});

// A check a judge could not measure: `status` is skip or error (never pass or fail).
CheckResult NotMeasured(std::string id, CheckStatus status, std::string summary,
                        std::string remedy = {}, nlohmann::json metrics = nlohmann::json::object());

// The rule's reasons as one line: "why; why".
std::string FindingsText(const std::vector<RuleFinding>& findings);

// For the gate: one line per passing check whose own metrics its rule does not pass,
// "<check id>: pass, but <why>"; empty when every passing check's metrics are a pass. A report
// can be edited, and a validator can have a bug: the gate refuses either in every mode.
std::vector<std::string> EvidenceContradictions(const ReportView& report);

}  // namespace trainlock
