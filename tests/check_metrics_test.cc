// The typed check metrics (src/report/check_metrics.h): each struct round-trips, a hostile
// document reads without throwing, and no metric key is spelled outside the definition.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "report/check_metrics.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

TEST(CheckMetrics, RoundTripsEachStruct) {
  TrainStepMetrics step;
  step.step_time_s = 0.37;
  step.peak_reserved_bytes = int64_t{1} << 40;
  step.mfu = std::optional<double>();  // written as null
  step.ranks = std::vector<RankStepRow>{{1, "cuda:1", "H200", 1e5, 0.4, 10, 20}};
  const nlohmann::json j = ToJson(step);
  EXPECT_TRUE(j.at("mfu").is_null());
  EXPECT_TRUE(j.at("peak_reserved_bytes").is_number_integer());
  EXPECT_FALSE(j.contains("device_name"));
  EXPECT_EQ(ToJson(ReadMetrics<TrainStepMetrics>(j)), j);

  RoundtripMetrics roundtrip;
  roundtrip.checkpoint_at = 3;
  roundtrip.losses_uninterrupted = std::vector<double>{1.5, std::nan(""), 2.5};
  roundtrip.max_abs_state_diff = std::optional<double>();
  roundtrip.ranks_bitwise_identical = true;
  const nlohmann::json r = ToJson(roundtrip);
  const auto back = ReadMetrics<RoundtripMetrics>(nlohmann::json::parse(r.dump()));
  ASSERT_TRUE(back.losses_uninterrupted);
  EXPECT_TRUE(std::isnan((*back.losses_uninterrupted)[1]));
  ASSERT_TRUE(back.max_abs_state_diff);
  EXPECT_FALSE(*back.max_abs_state_diff);
  EXPECT_EQ(back.ranks_bitwise_identical, std::optional<bool>(true));

  const nlohmann::json eval = ToJson(EvalMetrics{1.0, 1.0, 0.0, 1e-6});
  EXPECT_EQ(ToJson(ReadMetrics<EvalMetrics>(eval)), eval);
  PerfMetrics perf{
      std::vector<PerfDevice>{
          {0, "H200", 700.0, std::optional<double>(), 690.0, std::optional<double>(), {}, {}}},
      0.5};
  const nlohmann::json p = ToJson(perf);
  EXPECT_TRUE(p.at("devices")[0].at("threshold").is_null());
  EXPECT_TRUE(p.at("devices")[0].at("sustained_threshold").is_null());
  EXPECT_EQ(ToJson(ReadMetrics<PerfMetrics>(p)), p);
  const nlohmann::json command = ToJson(CommandMetrics{
      nlohmann::json::array({"true"}), ".", 0, false, 60.0, 0.1, 0, "", false, "pid-namespace"});
  EXPECT_EQ(command.size(), 10u);
  EXPECT_EQ(ToJson(ReadMetrics<CommandMetrics>(command)), command);
}

TEST(CheckMetrics, HostileDocumentsReadWithoutThrowing) {
  const nlohmann::json ill = {{"step_time_s", "fast"},
                              {"peak_reserved_bytes", 1e300},
                              {"mfu", "high"},
                              {"ranks", {1, "two", {{"rank", "x"}}}},
                              {"losses_uninterrupted", "no"},
                              {"sizes", {{{"bytes", -1}}, 7}},
                              {"devices", 3},
                              {"bitwise_equal", "yes"}};
  for (const nlohmann::json& doc :
       {ill, nlohmann::json(), nlohmann::json::array({1}), nlohmann::json("metrics")}) {
    const auto step = ReadMetrics<TrainStepMetrics>(doc);
    EXPECT_FALSE(step.step_time_s);
    EXPECT_FALSE(step.peak_reserved_bytes);
    EXPECT_FALSE(step.mfu.value_or(std::nullopt));
    EXPECT_FALSE(ReadMetrics<RoundtripMetrics>(doc).bitwise_equal);
    EXPECT_FALSE(ReadMetrics<RoundtripMetrics>(doc).losses_uninterrupted);
    EXPECT_FALSE(ReadMetrics<PerfMetrics>(doc).devices);
    EXPECT_NO_THROW(ReadMetrics<AllreduceMetrics>(doc));
  }
  const auto step = ReadMetrics<TrainStepMetrics>(ill);
  ASSERT_TRUE(step.ranks);
  ASSERT_EQ(step.ranks->size(), 3u);
  EXPECT_FALSE((*step.ranks)[2].rank);
  const auto sizes = ReadMetrics<AllreduceMetrics>(ill).sizes;
  ASSERT_TRUE(sizes);
  EXPECT_EQ((*sizes)[0].bytes, std::optional<int64_t>(-1));
}

// ---- every metric key is spelled in check_metrics.h only ----
//
// The scan looks for a key as a whole string literal, `"key"`, in every C++ file under src/ and
// validators/. Some keys are ordinary words that name other things too: members of the report
// itself (report.h: "devices", "ranks", "rank", "duration_s"), of the lock and the manifest
// (lockfile_ext.cc and lockfile_custom_ops.cc: "argv", "cwd", "atol"), of other documents (plan's
// and the fleet summary's JSON output) or values ("deterministic" is a mode). The engine protocol
// is exempt from nothing: every event body is a struct of validators/support/engine_events.h
// (HelloEvent ... ErrorEvent, whose members share names with metric keys) and the event names and
// error kinds are declared in engine_protocol.h, so neither the native worker nor the coordinator's
// fold spells a member; those two files are definitions too. A key-by-file list would be longer
// than what it guards, so those words are exempt by name below, each with why; every other key (the
// distinctive ones: checkpoint_at, max_abs_loss_diff, peak_reserved_bytes, ...) must appear nowhere
// else. A few distinctive keys are also named by one other document, listed with the file.
struct Exemption {
  const char* key;
  const char* file;  // "" for every file
  const char* why;
};

const Exemption kExemptions[] = {
    {"accelerators", "", "a manifest and catalog member"},
    {"activation_checkpointing", "", "a training config member (train_shape.h) and plan's fixes"},
    {"argv", "", "ext.command's manifest member"},
    {"atol", "", "a custom op's manifest tolerance"},
    {"rtol", "", "a custom op's manifest tolerance"},
    {"path", "", "file paths in locks, manifests, checkpoints and results"},
    {"sha256", "", "hashes in locks, checkpoints, image records and the worker's data"},
    {"count", "", "the fleet summary's gpus object"},
    {"cwd", "", "ext.command's manifest member"},
    {"deterministic", "", "a value of mode, and the training config's member"},
    {"device", "", "a rank entry's member and the ops worker's result"},
    {"devices", "", "the report's member and the node worker's result"},
    {"dtype", "", "safetensors headers and op smoke specs"},
    {"engine", "", "the report's engine member and the lock's validate.engine"},
    {"duration_s", "", "a report and check member"},
    {"error", "", "a check status and verdict word, and error objects of other documents"},
    {"failures", "", "the ops worker's per-library failures"},
    {"index", "", "device entries of the report, NVML probes and package indexes"},
    {"libraries", "", "the ops worker's result and the image inspection"},
    {"micro_batch", "", "a training config member (train_shape.h)"},
    {"model", "", "the manifest's [model], a config section"},
    {"name", "", "everywhere"},
    {"nccl", "", "a manifest target member and a backend name"},
    {"cudnn", "", "a manifest target member and the engine probe's versions member"},
    {"nodes", "", "the fleet summary's member"},
    {"parameters", "", "train_shape.h's shape member"},
    {"rank", "", "the report's rank member and rank entries"},
    {"ranks", "", "the merged report's member"},
    {"seq_len", "", "a training config member (train_shape.h)"},
    {"shape", "", "safetensors headers and op smoke specs"},
    {"steps", "", "the manifest's [validate] member"},
    {"torch", "", "the report's validator member and the manifest's targets"},
    {"unknown", "", "a status word"},
    {"value", "", "signatures and Kubernetes env entries"},
    {"vocab_size", "", "a model config member"},
    {"world_size", "", "the report's rank member"},
    {"uuid", "", "device entries of the report, the node worker's result and visible_gpus.cc"},
    {"data", "src/report/report.h", "a negative control's name (rng, data, corrupt)"},
    {"data", "src/report/report_view.h", "a negative control's name (rng, data, corrupt)"},
    {"data", "src/report/report.cc", "a negative control's name (rng, data, corrupt)"},
    {"data", "validators/coordinator/validate.cc", "a negative control's name"},
    {"data", "validators/main.cc", "a negative control's name"},
    {"data", "src/run/engine_spec.cc", "the engine spec's data member"},
    {"step", "src/report/report_html.cc", "the HTML loss plot's axis label"},
    {"step", "validators/engines/native/trainer.cc", "the native checkpoint's optimizer state"},
    {"step", "validators/engines/native/checkpoint.cc", "the native checkpoint manifest's member"},
    {"step", "validators/engines/native/checkpoint_manifest.h", "the native manifest's member"},
    {"step", "validators/engines/native/checkpoint_manifest.cc", "the native manifest's member"},
    {"step", "validators/coordinator/checkpoint_verify.cc",
     "the Python engines' commit marker's member (trainlock-commit.json)"},
    {"bytes", "src/cli/cmd_image.cc", "`image inspect`'s own JSON output"},
    {"temperature_c", "validators/probes/nvml_probe.cc", "env.health's NVML field name"},
    {"temperature_c", "validators/probes/env_health.cc", "env.health's per-device NVML fields"},
    {"temperature_c", "src/report/pass_rules_health.cc",
     "env.health's per-device NVML fields, which its pass rule reads back"},
    {"sm_clock_mhz", "validators/probes/env_health.cc", "env.health's per-device NVML fields"},
    {"step_time_s", "src/plan/plan_render.cc", "plan's own JSON output"},
    // plan_input.cc reads train.step through TrainStepMetrics; its refusal of an implausible
    // number names the field read, as the user will find it in the report.
    {"mfu", "src/plan/plan_input.cc", "plan's refusal names the field"},
    {"tokens_per_s", "src/plan/plan_input.cc", "plan's refusal names the field"},
    {"peak_tflops", "src/plan/plan_input.cc", "plan's refusal names the field"},
    {"step_time_s", "src/plan/plan_input.cc", "plan's refusal names the field"},
    {"device_total_bytes", "src/plan/plan_input.cc", "plan's refusal names the field"},
    {"peak_allocated_bytes", "src/plan/plan_input.cc", "plan's refusal names the field"},
    {"peak_reserved_bytes", "src/plan/plan_input.cc", "plan's refusal names the field"},
    {"device_used_bytes", "src/plan/plan_input.cc", "plan's refusal names the field"},
    {"total_bytes", "src/plan/plan_render.cc", "plan's own JSON output"},
    {"weights_bytes", "src/plan/plan_render.cc", "plan's own JSON output"},
    {"grads_bytes", "src/plan/plan_render.cc", "plan's own JSON output"},
    {"optimizer_bytes", "src/plan/plan_render.cc", "plan's own JSON output"},
    {"activation_bytes", "src/plan/plan_render.cc", "plan's own JSON output"},
    {"data", "src/fleet/fleet_k8s.cc", "a Kubernetes ConfigMap's data (the pinned lock)"},
};

bool Exempt(const std::string& key, const std::string& file) {
  for (const Exemption& e : kExemptions) {
    if (key == e.key && (std::string(e.file).empty() || file == e.file)) return true;
  }
  return false;
}

// "file:line: "key"" for each literal of a metric key under `root`'s src/ and validators/,
// outside the definition files.
std::vector<std::string> KeyLiteralsOutsideDefinition(const fs::path& root) {
  const std::vector<std::string> keys = AllMetricKeys();
  std::vector<std::string> found;
  for (const char* top : {"src", "validators"}) {
    if (!fs::exists(root / top)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cc" && ext != ".h" && ext != ".cu")) continue;
      const std::string file = entry.path().lexically_relative(root).generic_string();
      // The definitions: the metrics, and the engine protocol's events and members (some are
      // metric keys).
      if (file == "src/report/check_metrics.h" || file == "src/report/check_metrics.cc" ||
          file == "validators/support/engine_events.h" ||
          file == "validators/support/engine_protocol.h")
        continue;
      std::ifstream in(entry.path());
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        for (const std::string& key : keys) {
          if (line.find("\"" + key + "\"") == std::string::npos || Exempt(key, file)) continue;
          found.push_back(file + ":" + std::to_string(number) + ": \"" + key + "\"");
        }
      }
    }
  }
  return found;
}

TEST(CheckMetrics, KeysAreSpelledOnlyInTheDefinition) {
  const std::vector<std::string> found = KeyLiteralsOutsideDefinition(testing::SourceDir());
  std::string list;
  for (const std::string& f : found) list += f + "\n";
  EXPECT_TRUE(found.empty()) << "metric keys spelled outside src/report/check_metrics.h (use the "
                                "typed struct instead):\n"
                             << list;
}

TEST(CheckMetrics, TheScanFindsAPlantedKey) {
  const fs::path root = fs::temp_directory_path() / "trainlock-check-metrics-scan";
  fs::remove_all(root);
  fs::create_directories(root / "src/report");
  std::ofstream(root / "src/report/gate.cc") << "// a reader\n"
                                                "double d = m.value(\"max_abs_loss_diff\", 0.0);\n";
  std::ofstream(root / "src/report/check_metrics.h") << "X(Number, \"max_abs_loss_diff\")\n";
  const std::vector<std::string> found = KeyLiteralsOutsideDefinition(root);
  fs::remove_all(root);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], "src/report/gate.cc:2: \"max_abs_loss_diff\"");
}

TEST(CheckMetrics, ListsTheKeysOfEveryStruct) {
  std::set<std::string> keys;
  for (const std::string& key : AllMetricKeys()) keys.insert(key);
  EXPECT_GT(keys.size(), 100u);
  EXPECT_TRUE(keys.count("checkpoint_at"));
  EXPECT_TRUE(keys.count("peak_reserved_bytes"));
}

}  // namespace
}  // namespace trainlock
