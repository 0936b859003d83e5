// The table of pass rules, one per check id, and the two ways they are used: the validator's
// Judged and the gate's EvidenceContradictions; see pass_rules.h.
#include "report/pass_rules.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/pass_rules_internal.h"

namespace trainlock {
namespace pass_rules {

std::string NumberText(double value) {
  if (!std::isfinite(value)) return std::isnan(value) ? "NaN" : "infinite";
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

void MergedNodes(const Json& m, Findings& out) {
  const auto merged = ReadMetrics<NodeMergeMetrics>(m);
  if (Lists(merged.failed_ranks))
    Add(out, TRAINLOCK_METRIC_KEY(NodeMergeMetrics, failed_ranks),
        "failed_ranks names ranks whose own check failed " + merged.failed_ranks->dump(),
        "see the failing rank's own report (report.rank-N.json) and its stderr");
  if (!merged.nodes) return;
  if (!merged.nodes->is_array()) {
    Add(out, TRAINLOCK_METRIC_KEY(NodeMergeMetrics, nodes), "nodes is not a list");
    return;
  }
  for (const Json& node : *merged.nodes) {
    const auto status = node.is_object() ? node.find("status") : node.end();
    if (status == node.end() || !status->is_string()) {
      Add(out, TRAINLOCK_METRIC_KEY(NodeMergeMetrics, nodes), "a node states no status");
    } else if (*status == "fail" || *status == "error") {
      Add(out, TRAINLOCK_METRIC_KEY(NodeMergeMetrics, nodes),
          "nodes lists a node whose status is " + status->get<std::string>());
    }
  }
}

}  // namespace pass_rules

namespace {

using pass_rules::Findings;
using Rule = Findings (*)(const nlohmann::json&, const RuleContext&);

struct PassRule {
  const char* id;
  Rule rule;
  std::vector<std::string> reads;  // the metrics it reads: tests/pass_rules_test.cc moves each
};

#define K TRAINLOCK_METRIC_KEY

// One entry per check id of check_ids.h, in its order.
const std::vector<PassRule>& Table() {
  namespace r = pass_rules;
  static const std::vector<PassRule> table = {
      {"env.driver",
       r::Driver,
       {K(EnvVersionMetrics, driver_version), K(EnvVersionMetrics, driver_min)}},
      {"env.runtime",
       r::Runtime,
       {K(EnvVersionMetrics, cuda_runtime), K(EnvVersionMetrics, cuda_needed),
        K(EnvVersionMetrics, cuda_driver_supports)}},
      {"env.arch",
       r::Arch,
       {K(EnvDeviceMetrics, libraries), K(EnvDeviceMetrics, launches), K(EnvDeviceMetrics, gpu_sms),
        K(EnvDeviceMetrics, cuda_driver)}},
      {"env.versions",
       r::Versions,
       {K(EnvVersionMetrics, torch), K(EnvVersionMetrics, torch_locked),
        K(EnvVersionMetrics, engine_torch), K(EnvVersionMetrics, cuda_runtime),
        K(EnvVersionMetrics, cuda_locked), K(EnvVersionMetrics, nccl),
        K(EnvVersionMetrics, nccl_locked), K(EnvVersionMetrics, cudnn),
        K(EnvVersionMetrics, cudnn_locked)}},
      {"env.health",
       r::Health,
       {K(HealthMetrics, devices), K(HealthMetrics, unknown), K(HealthMetrics, open_faults)}},
      {"env.devices",
       r::Devices,
       {K(EnvDeviceMetrics, count), K(EnvDeviceMetrics, gpu_names),
        K(EnvDeviceMetrics, accelerators)}},
      {"env.packages",
       r::Packages,
       {K(PackagesMetrics, packages_locked),      K(PackagesMetrics, packages_installed),
        K(PackagesMetrics, packages_missing),     K(PackagesMetrics, packages_changed),
        K(PackagesMetrics, packages_added),       K(PackagesMetrics, packages_twice),
        K(PackagesMetrics, packages_malformed),   K(PackagesMetrics, files_problems),
        K(PackagesMetrics, files_changed),        K(PackagesMetrics, files_missing),
        K(PackagesMetrics, files_unowned),        K(PackagesMetrics, files_unreadable),
        K(PackagesMetrics, debs_locked),          K(PackagesMetrics, debs_missing),
        K(PackagesMetrics, debs_changed),         K(PackagesMetrics, python_problem),
        K(PackagesMetrics, python_files_added),   K(PackagesMetrics, python_files_changed),
        K(PackagesMetrics, python_files_missing), K(PackagesMetrics, python_files_refused)}},
      {"data.model",
       r::Data,
       {K(DataMetrics, files_pinned), K(DataMetrics, files_verified), K(DataMetrics, bytes),
        K(DataMetrics, problem)}},
      {"data.dataset",
       r::Data,
       {K(DataMetrics, files_pinned), K(DataMetrics, files_verified), K(DataMetrics, bytes),
        K(DataMetrics, problem), K(DataMetrics, vocab_size), K(DataMetrics, token_shards)}},
      {"ops.custom", r::Ops, {K(OpsMetrics, failures)}},
      {"train.step",
       r::Step,
       {K(TrainStepMetrics, out_of_memory), K(TrainStepMetrics, step_time_s),
        K(TrainStepMetrics, shape), K(TrainStepMetrics, measured_shape),
        K(TrainStepMetrics, slowest_to_median), K(TrainStepMetrics, straggler_margin)}},
      {"train.roundtrip",
       r::Roundtrip,
       {K(RoundtripMetrics, steps),
        K(RoundtripMetrics, checkpoint_at),
        K(RoundtripMetrics, losses_uninterrupted),
        K(RoundtripMetrics, losses_resumed),
        K(RoundtripMetrics, rng_restored),
        K(RoundtripMetrics, data_restored),
        K(RoundtripMetrics, restored_step),
        K(RoundtripMetrics, bitwise_equal),
        K(RoundtripMetrics, max_abs_loss_diff),
        K(RoundtripMetrics, final_state_equal),
        K(RoundtripMetrics, max_abs_state_diff),
        K(RoundtripMetrics, loss_tolerance),
        K(RoundtripMetrics, first_divergent_step),
        K(RoundtripMetrics, first_divergent_tensor),
        K(RoundtripMetrics, checkpoint_verified),
        K(RoundtripMetrics, killed_during_save),
        K(RoundtripMetrics, skipped_uncommitted),
        K(RoundtripMetrics, kill_point),
        K(RoundtripMetrics, snapshot_equal),
        K(RoundtripMetrics, reshard),
        K(RoundtripMetrics, ranks_computing_differently)}},
      {"train.eval",
       r::Eval,
       {K(EvalMetrics, eval_loss_before_save), K(EvalMetrics, eval_loss_after_restore),
        K(EvalMetrics, abs_diff), K(EvalMetrics, tolerance)}},
      {"ckpt.portable",
       r::Portable,
       {K(PortableMetrics, eval_loss), K(PortableMetrics, eval_loss_reference),
        K(PortableMetrics, abs_diff), K(PortableMetrics, tolerance), K(PortableMetrics, checkpoint),
        K(PortableMetrics, restored_step)}},
      {"comm.allreduce",
       r::Allreduce,
       {K(AllreduceMetrics, sums_exact), K(AllreduceMetrics, peak_busbw_gbps),
        K(AllreduceMetrics, threshold_gbps)}},
      {"comm.ddp",
       r::Ddp,
       {K(DdpMetrics, gradients_equal_within_tolerance), K(DdpMetrics, straggler_rank),
        K(DdpMetrics, device)}},
      {"perf.matmul", r::Perf, {K(PerfMetrics, devices)}},
      {"perf.hbm", r::Perf, {K(PerfMetrics, devices)}},
      {"ext.command", r::Command, {K(CommandMetrics, exit_code), K(CommandMetrics, timed_out)}},
  };
  return table;
}
#undef K

const PassRule* Find(std::string_view id) {
  for (const PassRule& r : Table())
    if (id == r.id) return &r;
  return nullptr;
}

}  // namespace

std::vector<RuleFinding> PassRuleFindings(std::string_view id, const nlohmann::json& metrics,
                                          const RuleContext& context) {
  const PassRule* rule = Find(id);
  if (!rule) return {{"", "no pass rule for check id '" + std::string(id) + "'", ""}};
  const nlohmann::json& m = metrics.is_object() ? metrics : nlohmann::json::object();
  Findings out = rule->rule(m, context);
  pass_rules::MergedNodes(m, out);
  return out;
}

bool HasPassRule(std::string_view id) {
  return Find(id) != nullptr;
}

const std::vector<std::string>& MetricsTheRuleReads(std::string_view id) {
  static const std::vector<std::string> none;
  const PassRule* rule = Find(id);
  return rule ? rule->reads : none;
}

std::string FindingsText(const std::vector<RuleFinding>& findings) {
  std::string text;
  for (const RuleFinding& f : findings) text += (text.empty() ? "" : "; ") + f.why;
  return text;
}

CheckResult Judged(std::string id, nlohmann::json metrics, std::string summary, std::string remedy,
                   const RuleContext& context) {
  const std::vector<RuleFinding> findings = PassRuleFindings(id, metrics, context);
  CheckResult c{std::move(id),      CheckStatus::kPass, 0,
                std::move(summary), std::move(remedy),  std::move(metrics)};
  if (findings.empty()) {
    c.remedy.clear();
    return c;
  }
  c.status = CheckStatus::kFail;
  if (c.remedy.empty()) {
    c.summary = FindingsText(findings) + (c.summary.empty() ? "" : "; measured: " + c.summary);
    for (const RuleFinding& f : findings)
      if (c.remedy.empty()) c.remedy = f.remedy;
    if (c.remedy.empty()) c.remedy = "see the check's metrics: they are not a pass";
  }
  return c;
}

CheckResult NotMeasured(std::string id, CheckStatus status, std::string summary, std::string remedy,
                        nlohmann::json metrics) {
  // Only skip and error are a judge's to give; anything else would decide a pass or a fail.
  if (status != CheckStatus::kSkip) status = CheckStatus::kError;
  return {std::move(id), status, 0, std::move(summary), std::move(remedy), std::move(metrics)};
}

std::vector<std::string> EvidenceContradictions(const ReportView& report) {
  RuleContext context;
  for (const CheckView& c : report.checks) {
    if (c.id != "train.roundtrip") continue;
    const Free telemetry = ReadMetrics<RoundtripMetrics>(c.metrics).telemetry;
    if (telemetry && telemetry->is_object()) context.telemetry = *telemetry;
  }
  std::vector<std::string> out;
  for (const CheckView& c : report.checks) {
    if (c.status != "pass" || !HasPassRule(c.id)) continue;  // an unknown id: the schema's
    const std::vector<RuleFinding> findings = PassRuleFindings(c.id, c.metrics, context);
    if (!findings.empty()) out.push_back(c.id + ": pass, but " + FindingsText(findings));
  }
  return out;
}

}  // namespace trainlock
