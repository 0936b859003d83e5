// The pass rules (src/report/pass_rules.h) as a table, on plain values: every check id has one;
// for each metric a rule reads, a passing check's metrics with that metric moved to a failing
// value are judged fail by the rule and refused by the gate, naming the metric; the members no
// rule reads are information only. The five contradictions the gate once let through are named
// here one by one. And no status is decided outside the rules: a scan of src/ and validators/.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "passing_metrics.h"
#include "project/check_ids.h"
#include "report/pass_rules.h"
#include "report/report_view.h"

namespace trainlock {
namespace {

using Json = nlohmann::json;
using testing_metrics::Passing;

// For each (check id, metric its rule reads): the metric moved to a failing value.
using Move = std::function<void(Json&)>;
const std::map<std::pair<std::string, std::string>, Move>& Moves() {
  auto set = [](const char* key, Json value) { return [=](Json& m) { m[key] = value; }; };
  static const std::map<std::pair<std::string, std::string>, Move> moves = {
      {{"env.driver", "driver_version"}, set("driver_version", "550.54")},
      {{"env.driver", "driver_min"}, set("driver_min", "590.0")},
      {{"env.runtime", "cuda_runtime"}, set("cuda_runtime", "13.1")},
      {{"env.runtime", "cuda_needed"}, set("cuda_needed", "13.1")},
      {{"env.runtime", "cuda_driver_supports"}, set("cuda_driver_supports", "12.8")},
      {{"env.arch", "libraries"},
       set("libraries", Json::array({{{"path", "libtorch_cuda.so"}, {"sass", {80}}}}))},
      {{"env.arch", "launches"}, set("launches", Json::array({{{"launch_ok", false}}}))},
      {{"env.arch", "gpu_sms"}, set("gpu_sms", {75})},  // Turing: no SASS, PTX too new
      {{"env.arch", "cuda_driver"},
       [](Json& m) {  // PTX only, from a toolkit newer than the driver
         m["libraries"][0]["sass"] = Json::array();
         m["cuda_driver"] = 12080;
       }},
      {{"env.versions", "torch"}, set("torch", "2.10.0")},
      {{"env.versions", "torch_locked"}, set("torch_locked", "2.9.1+cu128")},
      {{"env.versions", "engine_torch"}, set("engine_torch", "2.10.0+cu130")},
      {{"env.versions", "cuda_runtime"}, set("cuda_runtime", "12.8")},
      {{"env.versions", "cuda_locked"}, set("cuda_locked", "12.8")},
      {{"env.versions", "nccl"}, set("nccl", "2.27.3")},
      {{"env.versions", "nccl_locked"}, set("nccl_locked", "2.27.3")},
      {{"env.versions", "cudnn"}, set("cudnn", "9.1.0")},
      {{"env.versions", "cudnn_locked"}, set("cudnn_locked", "9.8")},
      {{"env.health", "devices"}, [](Json& m) { m["devices"][0]["pcie_width"] = 8; }},
      {{"env.health", "unknown"}, set("unknown", {"GPU 0 temperature_c"})},
      {{"env.health", "open_faults"}, set("open_faults", {"GPU 1: NVML cannot open it: GPU lost"})},
      {{"env.devices", "count"}, set("count", 0)},
      {{"env.devices", "gpu_names"}, set("gpu_names", {"NVIDIA A100-SXM4-80GB"})},
      {{"env.devices", "accelerators"}, set("accelerators", {"A100-80GB"})},
      {{"env.packages", "packages_locked"}, set("packages_locked", 0)},
      {{"env.packages", "packages_installed"}, [](Json& m) { m.erase("packages_installed"); }},
      {{"env.packages", "packages_missing"}, set("packages_missing", {"numpy 2.3.0"})},
      {{"env.packages", "packages_changed"}, set("packages_changed", {"numpy 2.2.0"})},
      {{"env.packages", "packages_added"}, set("packages_added", {"evil 1.0"})},
      {{"env.packages", "packages_twice"}, set("packages_twice", {"numpy"})},
      {{"env.packages", "packages_malformed"},
       set("packages_malformed", {"x.dist-info: no METADATA"})},
      {{"env.packages", "files_problems"}, set("files_problems", 1)},
      {{"env.packages", "files_changed"}, set("files_changed", {"torch/__init__.py: sha256"})},
      {{"env.packages", "files_missing"}, set("files_missing", {"torch/nn.py"})},
      {{"env.packages", "files_unowned"}, set("files_unowned", {"sitecustomize.py"})},
      {{"env.packages", "files_unreadable"}, set("files_unreadable", {"x.py: a link"})},
      {{"env.packages", "debs_locked"}, [](Json& m) { m.erase("debs_missing"); }},
      {{"env.packages", "debs_missing"}, set("debs_missing", {"libfoo 1.0-1"})},
      {{"env.packages", "debs_changed"}, set("debs_changed", {"libfoo 1.0-2 (locked 1.0-1)"})},
      {{"env.packages", "python_problem"},
       set("python_problem", "no record of the image's Python")},
      {{"env.packages", "python_files_added"},
       set("python_files_added", {"/usr/lib/python3/x.pth"})},
      {{"env.packages", "python_files_changed"}, set("python_files_changed", {"/opt/venv/a.py"})},
      {{"env.packages", "python_files_missing"}, set("python_files_missing", {"/opt/venv/b.py"})},
      {{"env.packages", "python_files_refused"}, set("python_files_refused", {"/opt/venv/c.pyc"})},
      {{"data.model", "files_pinned"}, set("files_pinned", 3)},
      {{"data.model", "files_verified"}, set("files_verified", 1)},
      {{"data.model", "bytes"}, set("bytes", 0)},
      {{"data.model", "problem"}, set("problem", "model.safetensors: sha256 differs")},
      {{"data.dataset", "files_pinned"}, set("files_pinned", 0)},
      {{"data.dataset", "files_verified"}, set("files_verified", 0)},
      {{"data.dataset", "bytes"}, set("bytes", 0)},
      {{"data.dataset", "problem"}, set("problem", "train.bin: ends inside a token")},
      {{"data.dataset", "vocab_size"}, set("vocab_size", 200)},
      {{"data.dataset", "token_shards"},
       [](Json& m) { m["token_shards"]["train.bin"]["max_token_id"] = 300; }},
      {{"ops.custom", "failures"}, set("failures", Json::array({{{"kind", "wrong_result"}}}))},
      {{"train.step", "out_of_memory"}, set("out_of_memory", true)},
      {{"train.step", "step_time_s"}, set("step_time_s", 0)},
      {{"train.step", "shape"}, [](Json& m) { m.erase("shape"); }},
      {{"train.step", "measured_shape"},
       [](Json& m) { m["measured_shape"]["activation_dtype"] = "fp32"; }},
      {{"train.step", "slowest_to_median"}, set("slowest_to_median", 0.5)},
      {{"train.step", "straggler_margin"}, set("straggler_margin", 0.01)},  // 0.97 < 0.99
      {{"train.roundtrip", "steps"}, set("steps", 5)},
      {{"train.roundtrip", "checkpoint_at"}, set("checkpoint_at", 2)},
      {{"train.roundtrip", "losses_uninterrupted"},
       set("losses_uninterrupted", {2.5, 2.25, 2.0, 1.5})},
      {{"train.roundtrip", "losses_resumed"}, set("losses_resumed", {2.5, 2.25, 2.0, 1.5})},
      {{"train.roundtrip", "rng_restored"}, set("rng_restored", false)},
      {{"train.roundtrip", "data_restored"}, set("data_restored", false)},
      {{"train.roundtrip", "restored_step"}, set("restored_step", 2)},
      {{"train.roundtrip", "bitwise_equal"},
       [](Json& m) {  // not bitwise, and no tolerance to pass within
         m["bitwise_equal"] = false;
       }},
      {{"train.roundtrip", "max_abs_loss_diff"}, set("max_abs_loss_diff", 0.25)},
      {{"train.roundtrip", "final_state_equal"}, set("final_state_equal", false)},
      {{"train.roundtrip", "max_abs_state_diff"}, set("max_abs_state_diff", 0.5)},
      {{"train.roundtrip", "loss_tolerance"},
       [](Json& m) {
         m["bitwise_equal"] = false;
         m["losses_resumed"][3] = 1.5;
         m["max_abs_loss_diff"] = 0.25;
         m["reshard"]["losses_resharded"][3] = 1.5;
         m["loss_tolerance"] = 0.1;
       }},
      {{"train.roundtrip", "first_divergent_step"}, set("first_divergent_step", 4)},
      {{"train.roundtrip", "first_divergent_tensor"}, set("first_divergent_tensor", "w1")},
      {{"train.roundtrip", "checkpoint_verified"},
       [](Json& m) { m["checkpoint_verified"]["problem"] = "shard-0: sha256 differs"; }},
      {{"train.roundtrip", "killed_during_save"},
       [](Json& m) { m["skipped_uncommitted"] = Json::array(); }},
      {{"train.roundtrip", "skipped_uncommitted"}, [](Json& m) { m.erase("skipped_uncommitted"); }},
      {{"train.roundtrip", "kill_point"}, set("kill_point", "after-commit")},
      {{"train.roundtrip", "snapshot_equal"}, set("snapshot_equal", false)},
      {{"train.roundtrip", "reshard"},
       [](Json& m) {
         m["reshard"]["bitwise_equal"] = false;
         m["reshard"]["final_state_equal"] = false;
       }},
      {{"train.roundtrip", "ranks_computing_differently"}, set("ranks_computing_differently", {3})},
      {{"train.eval", "eval_loss_before_save"}, set("eval_loss_before_save", 2.5)},
      {{"train.eval", "eval_loss_after_restore"}, set("eval_loss_after_restore", 2.5)},
      {{"train.eval", "abs_diff"}, set("abs_diff", 0.5)},
      {{"train.eval", "tolerance"}, [](Json& m) { m.erase("tolerance"); }},
      {{"ckpt.portable", "eval_loss"}, set("eval_loss", 2.5)},
      {{"ckpt.portable", "eval_loss_reference"}, set("eval_loss_reference", 2.5)},
      {{"ckpt.portable", "abs_diff"}, set("abs_diff", 0.5)},
      {{"ckpt.portable", "tolerance"}, [](Json& m) { m.erase("tolerance"); }},
      {{"ckpt.portable", "checkpoint"}, [](Json& m) { m["checkpoint"]["files_verified"] = 0; }},
      {{"ckpt.portable", "restored_step"}, set("restored_step", 2)},
      {{"comm.allreduce", "sums_exact"}, set("sums_exact", false)},
      {{"comm.allreduce", "peak_busbw_gbps"}, set("peak_busbw_gbps", 120.0)},
      {{"comm.allreduce", "threshold_gbps"}, set("threshold_gbps", 400.0)},
      {{"comm.ddp", "gradients_equal_within_tolerance"},
       set("gradients_equal_within_tolerance", false)},
      {{"comm.ddp", "straggler_rank"}, set("straggler_rank", 1)},
      {{"comm.ddp", "device"},
       [](Json& m) {  // a straggler is a finding on GPUs, never on CPU processes
         m["straggler_rank"] = 1;
         m["device"] = "cuda";
       }},
      {{"perf.matmul", "devices"}, [](Json& m) { m["devices"][0]["value"] = 400e12; }},
      {{"perf.hbm", "devices"}, [](Json& m) { m["devices"][0]["threshold"] = nullptr; }},
      {{"ext.command", "exit_code"}, set("exit_code", 1)},
      {{"ext.command", "timed_out"}, set("timed_out", true)},
  };
  return moves;
}

// A report view whose only check is `id`, passing with `metrics`.
ReportView PassingReport(const std::string& id, const Json& metrics) {
  ReportView view;
  CheckView check;
  check.id = id;
  check.status = "pass";
  check.metrics = metrics;
  view.checks.push_back(check);
  return view;
}

TEST(PassRules, EveryCheckIdHasARuleAndAPassingExample) {
  for (std::string_view id : kCheckIds) {
    EXPECT_TRUE(HasPassRule(id)) << id;
    ASSERT_TRUE(Passing().count(std::string(id))) << id;
  }
  EXPECT_FALSE(HasPassRule("env.nonesuch"));
  EXPECT_FALSE(PassRuleFindings("env.nonesuch", Json::object()).empty());
}

TEST(PassRules, EachPassingExampleIsAPassForTheRuleAndTheGate) {
  for (const auto& [id, metrics] : Passing()) {
    EXPECT_EQ(FindingsText(PassRuleFindings(id, metrics)), "") << id;
    EXPECT_TRUE(EvidenceContradictions(PassingReport(id, metrics)).empty()) << id;
    EXPECT_EQ(Judged(id, metrics, "measured").status, CheckStatus::kPass) << id;
  }
}

TEST(PassRules, EachMetricARuleReadsMovedToAFailingValueFailsTheRuleAndTheGate) {
  for (std::string_view id_view : kCheckIds) {
    const std::string id(id_view);
    for (const std::string& metric : MetricsTheRuleReads(id)) {
      SCOPED_TRACE(id + " " + metric);
      auto move = Moves().find({id, metric});
      ASSERT_NE(move, Moves().end()) << "no failing value for a metric the rule reads";
      Json metrics = Passing().at(id);
      move->second(metrics);
      const std::vector<RuleFinding> findings = PassRuleFindings(id, metrics);
      ASSERT_FALSE(findings.empty());
      const std::vector<std::string> refused = EvidenceContradictions(PassingReport(id, metrics));
      ASSERT_EQ(refused.size(), 1u);
      EXPECT_TRUE(refused[0].starts_with(id + ": pass, but ")) << refused[0];
      const CheckResult judged = Judged(id, metrics, "measured");
      EXPECT_EQ(judged.status, CheckStatus::kFail);
      EXPECT_FALSE(judged.remedy.empty());
    }
  }
}

TEST(PassRules, TheMembersNoRuleReadsAreInformationOnly) {
  // Listed in the test's XML output (RecordProperty), one property per check id.
  for (const auto& [id, metrics] : Passing()) {
    const std::vector<std::string>& reads = MetricsTheRuleReads(id);
    const std::set<std::string> read(reads.begin(), reads.end());
    std::string information;
    for (const auto& [key, value] : metrics.items())
      if (!read.count(key)) information += (information.empty() ? "" : ", ") + key;
    RecordProperty(id, information.empty() ? "(none in the example)" : information);
    for (const std::string& key : reads) EXPECT_FALSE(key.empty()) << id;
  }
}

TEST(PassRules, ARuleFindingNamesItsMetric) {
  Json metrics = Passing().at("train.roundtrip");
  metrics["max_abs_state_diff"] = 0.5;
  const std::vector<RuleFinding> findings = PassRuleFindings("train.roundtrip", metrics);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].metric, "max_abs_state_diff");
}

// ---- the five contradictions the gate once accepted ----

std::string Refusal(const std::string& id, const Json& metrics) {
  const std::vector<std::string> refused = EvidenceContradictions(PassingReport(id, metrics));
  return refused.empty() ? "" : refused[0];
}

TEST(PassRules, AMaxAbsStateDiffBesideFinalStateEqualIsRefused) {
  Json m = Passing().at("train.roundtrip");
  m["max_abs_state_diff"] = 0.5;
  EXPECT_NE(Refusal("train.roundtrip", m).find("max_abs_state_diff 0.5"), std::string::npos);
}

TEST(PassRules, AFirstDivergentStepBesideBitwiseEqualIsRefused) {
  Json m = Passing().at("train.roundtrip");
  m["first_divergent_step"] = 4;
  EXPECT_NE(Refusal("train.roundtrip", m).find("first divergent step 4"), std::string::npos);
  m.erase("first_divergent_step");
  m["first_divergent_tensor"] = "layers.0.w1";
  EXPECT_NE(Refusal("train.roundtrip", m).find("tensor layers.0.w1"), std::string::npos);
}

TEST(PassRules, AFailingReshardIsRefused) {
  Json m = Passing().at("train.roundtrip");
  m["reshard"]["bitwise_equal"] = false;
  m["reshard"]["final_state_equal"] = false;
  EXPECT_NE(Refusal("train.roundtrip", m).find("reshard 2 -> 1"), std::string::npos);
}

TEST(PassRules, AKillDuringASaveWithoutASkippedTornCheckpointIsRefused) {
  Json m = Passing().at("train.roundtrip");
  m["skipped_uncommitted"] = Json::array();
  EXPECT_NE(Refusal("train.roundtrip", m).find("skipped_uncommitted"), std::string::npos);
}

TEST(PassRules, ATokenIdAtOrAboveTheVocabularyOrNoBytesIsRefused) {
  Json m = Passing().at("data.dataset");
  m["token_shards"]["train.bin"]["max_token_id"] = 300;
  EXPECT_NE(Refusal("data.dataset", m).find("max_token_id 300 is not below vocab_size 256"),
            std::string::npos);
  m = Passing().at("data.dataset");
  m["bytes"] = 0;
  EXPECT_NE(Refusal("data.dataset", m).find("bytes"), std::string::npos);
}

TEST(PassRules, APackagesPassListingChangedMissingOrUnownedFilesIsRefused) {
  for (const char* list : {"files_changed", "files_missing", "files_unowned"}) {
    Json m = Passing().at("env.packages");
    m[list] = {"site-packages/torch/__init__.py"};
    EXPECT_NE(Refusal("env.packages", m).find(list), std::string::npos) << list;
  }
}

TEST(PassRules, AThrottledWindowFailsTrainStepThroughTheRoundTripsTelemetry) {
  ReportView view = PassingReport("train.step", Passing().at("train.step"));
  CheckView roundtrip;
  roundtrip.id = "train.roundtrip";
  roundtrip.status = "skip";
  roundtrip.metrics = {
      {"telemetry",
       {{"interval_s", 0.2},
        {"window_s", 20.0},
        {"devices",
         Json::array({{{"index", 0},
                       {"name", "NVIDIA H100 80GB HBM3"},
                       {"samples", 100},
                       {"throttle_reasons_seen", Json::array({{{"name", "hw_thermal_slowdown"},
                                                               {"samples", 50},
                                                               {"held_s", 10.0}}})},
                       {"reason_samples", 100},
                       {"throttled_s", 10.0}}})}}}};
  view.checks.push_back(roundtrip);
  const std::vector<std::string> refused = EvidenceContradictions(view);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_TRUE(refused[0].starts_with("train.step: pass, but ")) << refused[0];
}

TEST(PassRules, AMergedCheckNamingAFailedNodeOrRankIsNotAPass) {
  Json m = Passing().at("env.driver");
  m["nodes"] =
      Json::array({{{"node", "a"}, {"status", "pass"}}, {{"node", "b"}, {"status", "fail"}}});
  EXPECT_NE(Refusal("env.driver", m).find("nodes"), std::string::npos);
  m = Passing().at("train.step");
  m["failed_ranks"] = {3};
  EXPECT_NE(Refusal("train.step", m).find("failed_ranks"), std::string::npos);
}

TEST(PassRules, JudgedWordsAFailureTheJudgeDidNotExpect) {
  Json m = Passing().at("perf.matmul");
  m["devices"][0]["value"] = 100e12;
  const CheckResult c = Judged("perf.matmul", m, "slowest: GPU 0 100 TFLOP/s");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_TRUE(c.summary.starts_with("GPU 0's value 1e+14 is below its threshold")) << c.summary;
  EXPECT_NE(c.summary.find("measured: slowest"), std::string::npos);
  EXPECT_FALSE(c.remedy.empty());
}

TEST(PassRules, AMatmulSustainedBelowItsThresholdOrMissingBesideOneIsRefused) {
  Json m = Passing().at("perf.matmul");
  m["devices"][0]["sustained_value"] = 560e12;
  EXPECT_NE(Refusal("perf.matmul", m)
                .find("GPU 0's sustained value 5.6e+14 is below its "
                      "sustained threshold 5.87e+14"),
            std::string::npos)
      << Refusal("perf.matmul", m);
  m["devices"][0].erase("sustained_value");
  EXPECT_NE(Refusal("perf.matmul", m).find("has a sustained threshold but no sustained value"),
            std::string::npos);
  m["devices"][0]["sustained_threshold"] = nullptr;  // the catalog has no figure: not judged
  EXPECT_EQ(Refusal("perf.matmul", m), "");
}

TEST(PassRules, NotMeasuredIsNeverAPassOrAFail) {
  EXPECT_EQ(NotMeasured("env.driver", CheckStatus::kSkip, "not selected").status,
            CheckStatus::kSkip);
  EXPECT_EQ(NotMeasured("env.driver", CheckStatus::kPass, "planted").status, CheckStatus::kError);
  EXPECT_EQ(NotMeasured("env.driver", CheckStatus::kFail, "planted").status, CheckStatus::kError);
}

// ---- no status is decided anywhere else ----

// "file:line" for each place under `root`'s src/ and validators/ that gives a check the status
// pass or fail other than the rules: CheckStatus::kPass or kFail anywhere but after == or !=.
std::vector<std::string> StatusDecisionsOutsideTheRules(const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  static const std::regex compared(R"([=!]=\s*CheckStatus::k(Pass|Fail)\b)");
  std::vector<std::string> out;
  for (const char* dir : {"src", "validators"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
      const std::string rel = fs::relative(entry.path(), root).string();
      if (rel == "src/report/pass_rules.cc" || rel == "src/report/report.cc" ||
          rel == "src/report/report.h")
        continue;  // the rules themselves, and the status names
      std::ifstream in(entry.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        const std::string rest = std::regex_replace(line, compared, "");
        if (rest.find("CheckStatus::kPass") != std::string::npos ||
            rest.find("CheckStatus::kFail") != std::string::npos)
          out.push_back(rel + ":" + std::to_string(n));
      }
    }
  }
  return out;
}

TEST(PassRules, NoStatusIsDecidedOutsideTheRules) {
  const std::vector<std::string> found = StatusDecisionsOutsideTheRules(TRAINLOCK_SOURCE_DIR);
  std::string list;
  for (const std::string& f : found) list += f + "\n";
  EXPECT_TRUE(found.empty()) << "a status decided outside src/report/pass_rules.cc:\n" << list;
}

TEST(PassRules, TheScanFindsAPlantedDecision) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("pass-rules-scan-" + std::to_string(getpid()));
  fs::create_directories(root / "src" / "checks");
  fs::create_directories(root / "validators");
  std::ofstream(root / "src" / "checks" / "planted.cc")
      << "if (c.status == CheckStatus::kPass) return;\nc.status = CheckStatus::kFail;\n";
  const std::vector<std::string> found = StatusDecisionsOutsideTheRules(root);
  fs::remove_all(root);
  EXPECT_EQ(found, std::vector<std::string>{"src/checks/planted.cc:2"});
}

}  // namespace
}  // namespace trainlock
