// trainlock validate with a Python engine (`[validate] engine`, docs/validate.md "Engines"):
// the coordinator drives the shipped ddp engine through the engine protocol on examples/tiny's
// shape (Debian's python3-torch), with the same round trip, comparisons and negative controls
// as the native engine; the engine's files are verified against the lock's pin first, and what
// an engine cannot do is refused before any work.
#include <gtest/gtest.h>

#include <algorithm>

#include "project/round_trip_engines.h"
#include "report/report.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

// The Python with torch: Debian's, whatever `python3` is first on PATH.
constexpr const char* kTorchPython = "/usr/bin/python3";

// The project's lock names `engine` with the pin `engine_sha256`, and the project is as an
// image holds it (lock and config, no manifest).
void PinEngine(const fs::path& project, const std::string& engine,
               const std::string& engine_sha256) {
  fs::remove(project / "trainlock.toml");
  std::string lock = testing::ReadFile(project / "trainlock.lock");
  const std::string table = "[validate]\n";
  const size_t at = lock.find(table);
  lock.insert(at + table.size(),
              "engine = \"" + engine + "\"\nengine-sha256 = \"" + engine_sha256 + "\"\n");
  testing::WriteFile(project / "trainlock.lock", lock);
}

// examples/tiny under `dir` with its lock naming `engine` (PinEngine).
fs::path EngineProject(const fs::path& dir, const std::string& engine,
                       const std::string& engine_sha256) {
  const fs::path project = dir / "tiny";
  fs::create_directories(project);
  testing::CopyExample("tiny", project);
  PinEngine(project, engine, engine_sha256);
  return project;
}

struct EngineValidation {
  testing::RunResult run;
  nlohmann::json report;
};

EngineValidation ValidateWithEngine(const std::string& engine,
                                    const std::vector<std::string>& extra,
                                    const std::string& sha = PythonEngineSha256()) {
  testing::TempDir dir;
  const fs::path project = EngineProject(dir.path(), engine, sha);
  const fs::path out = dir.path() / "report.json";
  std::vector<std::string> args = {"validate",   project.string(), "--out",
                                   out.string(), "--threads",      "2"};
  if (std::find(extra.begin(), extra.end(), "--python") == extra.end())
    args.insert(args.end(), {"--python", kTorchPython});
  args.insert(args.end(), extra.begin(), extra.end());
  EngineValidation v{testing::RunProgram("trainlock", args, {"TMPDIR=" + dir.path().string()}),
                     nlohmann::json()};
  if (fs::exists(out)) v.report = nlohmann::json::parse(testing::ReadFile(out));
  return v;
}

const nlohmann::json& CheckOf(const nlohmann::json& report, const std::string& id) {
  for (const auto& c : report["checks"])
    if (c["id"] == id) return c;
  static const nlohmann::json kMissing = nlohmann::json::object();
  ADD_FAILURE() << "no check " << id;
  return kMissing;
}

class ValidateDdpEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pass_ = new EngineValidation(ValidateWithEngine("ddp", {})); }
  static void TearDownTestSuite() { delete pass_; }
  static const EngineValidation& pass() { return *pass_; }

 private:
  static EngineValidation* pass_;
};
EngineValidation* ValidateDdpEngine::pass_ = nullptr;

TEST_F(ValidateDdpEngine, TheRoundTripPassesBitwiseThroughTheProtocol) {
  ASSERT_EQ(pass().run.exit_code, 0) << pass().run.out << pass().run.err;
  const auto& roundtrip = CheckOf(pass().report, "train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "pass") << roundtrip.dump();
  EXPECT_EQ(roundtrip["metrics"]["bitwise_equal"], true);
  EXPECT_EQ(roundtrip["metrics"]["restored_step"], 3);
  EXPECT_EQ(roundtrip["metrics"]["losses_resumed"], roundtrip["metrics"]["losses_uninterrupted"]);
  EXPECT_EQ(CheckOf(pass().report, "train.eval")["status"], "pass");
  EXPECT_EQ(CheckOf(pass().report, "ckpt.portable")["status"], "pass");
  EXPECT_EQ(ReportSchemaViolations(pass().report), std::vector<std::string>{});
}

// The checkpoint C and D restored is the one the coordinator read and hashed itself, against
// the commit marker the engine wrote: the metrics are its reading, never B's word.
TEST_F(ValidateDdpEngine, TheCoordinatorVerifiedTheCheckpointBeforeAnyRestore) {
  const auto& verified =
      CheckOf(pass().report, "train.roundtrip")["metrics"]["checkpoint_verified"];
  EXPECT_EQ(verified["verified_by"], "coordinator") << verified.dump();
  EXPECT_EQ(verified["commit_record"], "trainlock-commit.json");
  EXPECT_EQ(verified["step"], 3);
  EXPECT_GE(verified["files_verified"].get<int64_t>(), 3);  // state, RNG, driver
  EXPECT_FALSE(verified.contains("problem"));
  EXPECT_NE(verified["step_dir"].get<std::string>().find("step-00000003"), std::string::npos);
  EXPECT_EQ(CheckOf(pass().report, "ckpt.portable")["metrics"]["checkpoint"], verified);
}

// A Python engine's next process is spawned ahead of its turn (its imports overlap the one
// before it) but released only once that one has ended; C and D are spawned only after B's
// save began, so their imports do not share the host with the save's staging.
TEST_F(ValidateDdpEngine, EachProcessIsReleasedAfterTheOneItFollowsEnded) {
  const auto& processes = CheckOf(pass().report, "train.roundtrip")["metrics"]["processes"];
  ASSERT_TRUE(processes.is_object()) << processes.dump();
  const auto times = [&](const char* name, const char* what) {
    return processes.at(name).at(what).get<double>();
  };
  EXPECT_LT(times("b-preempted", "spawned_s"), times("a-uninterrupted", "ended_s"));
  EXPECT_LE(times("a-uninterrupted", "ended_s"), times("b-preempted", "started_s"));
  const double b_save_began =
      times("b-preempted", "started_s") +
      processes["b-preempted"]["first_event_s"].at("checkpoint").get<double>();
  for (const char* next : {"c-resumed", "d-portable"}) {
    EXPECT_LE(b_save_began, times(next, "spawned_s")) << next;
    EXPECT_LE(times("b-preempted", "ended_s"), times(next, "started_s")) << next;
  }
}

TEST_F(ValidateDdpEngine, TheReportNamesTheEngineAndTheFrameworkVersionsItMeasured) {
  const auto& roundtrip = CheckOf(pass().report, "train.roundtrip");
  EXPECT_EQ(roundtrip["metrics"]["engine"], "ddp");
  EXPECT_TRUE(roundtrip["metrics"]["engine_versions"].contains("torch"));
  const auto& step = CheckOf(pass().report, "train.step");
  EXPECT_EQ(step["status"], "pass") << step.dump();
  EXPECT_EQ(step["metrics"]["measured_shape"]["engine"], "ddp");
  EXPECT_EQ(step["metrics"]["measured_shape"]["activation_dtype"], "fp32");
  EXPECT_GT(step["metrics"]["step_time_s"].get<double>(), 0);
}

// examples/tiny's config asks for no kernel mode (training.deterministic defaults to false):
// the step is measured with torch's default kernels, the deterministic step beside it, as the
// native engine reports it, and the summary says so instead of claiming the config's wish.
TEST_F(ValidateDdpEngine, TheStepIsMeasuredWithTheRunsKernelsAndTheDeterministicOnesBeside) {
  const auto& step = CheckOf(pass().report, "train.step");
  EXPECT_EQ(step["metrics"]["mode"], "default") << step.dump();
  EXPECT_EQ(step["metrics"]["deterministic"]["mode"], "deterministic");
  EXPECT_GT(step["metrics"]["deterministic"]["step_time_s"].get<double>(), 0);
  EXPECT_EQ(step["metrics"]["step_times_s"].size(), 3u);
  const std::string summary = step["summary"];
  EXPECT_NE(summary.find("the run's default kernels"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("as the run's config asks"), std::string::npos) << summary;
}

// examples/tiny-ddp as shipped (manifest, lock and config): the lock pins this trainlock's
// engine files, and the example validates with Debian's python3-torch.
TEST(ValidateExamples, TinyDdpValidatesWithTheDdpEngine) {
  testing::TempDir dir;
  const fs::path project = dir.path() / "tiny-ddp";
  fs::create_directories(project);
  testing::CopyExample("tiny-ddp", project);
  const fs::path out = dir.path() / "report.json";
  auto r = testing::RunProgram("trainlock",
                               {"validate", project.string(), "--out", out.string(), "--threads",
                                "2", "--python", kTorchPython},
                               {"TMPDIR=" + dir.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json report = nlohmann::json::parse(testing::ReadFile(out));
  EXPECT_EQ(CheckOf(report, "train.roundtrip")["metrics"]["engine"], "ddp");
  EXPECT_EQ(CheckOf(report, "train.step")["metrics"]["mode"], "default");
}

TEST(ValidateEngineNegativeControl, SkippingTheRngRestoreFailsTheDdpRoundTrip) {
  EngineValidation v = ValidateWithEngine("ddp", {"--negative-control", "rng"});
  EXPECT_EQ(v.run.exit_code, 1) << v.run.err;
  const auto& roundtrip = CheckOf(v.report, "train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "fail");
  EXPECT_EQ(roundtrip["metrics"]["rng_restored"], false);
}

TEST(ValidateEngineNegativeControl, SkippingTheDataRestoreFailsTheDdpRoundTrip) {
  EngineValidation v = ValidateWithEngine("ddp", {"--negative-control", "data"});
  EXPECT_EQ(v.run.exit_code, 1) << v.run.err;
  const auto& roundtrip = CheckOf(v.report, "train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "fail");
  EXPECT_EQ(roundtrip["metrics"]["data_restored"], false);
}

TEST(ValidateEngineNegativeControl, ACorruptDdpCheckpointIsRefusedNotLoaded) {
  EngineValidation v = ValidateWithEngine("ddp", {"--negative-control", "corrupt"});
  EXPECT_EQ(v.run.exit_code, 1) << v.run.err;
  const auto& roundtrip = CheckOf(v.report, "train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "fail");
  EXPECT_NE(roundtrip["summary"].get<std::string>().find("c-resumed"), std::string::npos)
      << roundtrip["summary"];
}

TEST(ValidateEngineFiles, EngineFilesOtherThanThePinnedOnesNeverTrain) {
  EngineValidation v = ValidateWithEngine("ddp", {}, std::string(64, '0'));
  EXPECT_EQ(v.run.exit_code, 1) << v.run.err;
  const auto& step = CheckOf(v.report, "train.step");
  EXPECT_EQ(step["status"], "fail");
  EXPECT_NE(step["summary"].get<std::string>().find("are not the ones the lock pins"),
            std::string::npos)
      << step["summary"];
  EXPECT_EQ(CheckOf(v.report, "train.roundtrip")["status"], "skip");
}

TEST(ValidateEngineRequests, AKillDuringSaveIsRefusedForAnEngineWithoutAsyncSaves) {
  EngineValidation v = ValidateWithEngine("ddp", {"--kill-during-save"});
  EXPECT_EQ(v.run.exit_code, 2) << v.run.err;
  EXPECT_NE(
      v.run.err.find("--kill-during-save: error: engine ddp does not support --kill-during-save"),
      std::string::npos)
      << v.run.err;
  EXPECT_TRUE(v.report.is_null());
}

TEST(ValidateEngineRequests, ReshardingIsRefusedForAnEngineThatCannotReshard) {
  EngineValidation v = ValidateWithEngine("hf-trainer", {"--reshard-to", "2"});
  EXPECT_EQ(v.run.exit_code, 2) << v.run.err;
  EXPECT_NE(v.run.err.find("engine hf-trainer cannot restore at another world size"),
            std::string::npos)
      << v.run.err;
}

// Two processes of one run (gloo on the CPU): the same round trip, at world size 2.
TEST(ValidateEngineRanks, TwoDdpProcessesPerRunResumeBitwise) {
  EngineValidation v = ValidateWithEngine("ddp", {"--engine-nproc", "2"});
  ASSERT_EQ(v.run.exit_code, 0) << v.run.out << v.run.err;
  const auto& roundtrip = CheckOf(v.report, "train.roundtrip");
  EXPECT_EQ(roundtrip["metrics"]["world_size"], 2);
  EXPECT_EQ(roundtrip["metrics"]["bitwise_equal"], true);
  EXPECT_EQ(CheckOf(v.report, "train.step")["metrics"]["measured_shape"]["world_size"], 2);
}

// Saved at world size 2, resumed at 1: ddp keeps the global batch and carries the data
// position, but each rank's RNG stream has no place at another world size, so the resumed
// run is not the uninterrupted one, and the check says so instead of passing.
TEST(ValidateEngineReshard, ADdpResumeAtAnotherWorldSizeThatIsNotBitwiseFails) {
  EngineValidation v = ValidateWithEngine("ddp", {"--engine-nproc", "2", "--reshard-to", "1"});
  EXPECT_EQ(v.run.exit_code, 1) << v.run.out << v.run.err;
  const auto& roundtrip = CheckOf(v.report, "train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "fail") << roundtrip.dump();
  EXPECT_NE(roundtrip["summary"].get<std::string>().find("resharding 2 -> 1"), std::string::npos)
      << roundtrip["summary"];
  const auto& reshard = roundtrip["metrics"]["reshard"];
  EXPECT_EQ(reshard["saved_world_size"], 2);
  EXPECT_EQ(reshard["restored_world_size"], 1);
  EXPECT_EQ(reshard["restored_step"], 3);
  EXPECT_EQ(reshard["bitwise_equal"], false);
}

// The data rules are one: a Python engine checks every token of every pinned shard against
// vocab_size before training, as the native worker and data.dataset do, not only the tokens its
// windows read. The planted token sits past the last window of seq_len + 1 tokens, and
// data.dataset is not selected.
TEST(ValidateEngineData, ATokenOutsideTheVocabularyThatNoWindowReadsFailsTheDdpStep) {
  testing::TempDir dir;
  const fs::path project = dir.path() / "tiny";
  fs::create_directories(project);
  testing::CopyExample("tiny", project);
  std::string shard;  // 4096 uint16 tokens below vocab_size 256, then the last one 300
  for (int i = 0; i < 4095; ++i) shard += std::string{static_cast<char>(i % 256), '\0'};
  shard += std::string{static_cast<char>(300 & 0xff), static_cast<char>(300 >> 8)};
  testing::WriteFile(project / "data/a.bin", shard);
  testing::WriteFile(project / "trainlock.toml",
                     testing::ReadFile(project / "trainlock.toml") +
                         "\n[dataset]\nsource = \"local\"\npath = \"data\"\n"
                         "token-dtype = \"uint16\"\nfiles = [\"a.bin\"]\n");
  const auto locked = testing::RunProgram("trainlock", {"lock", project.string(), "--offline"});
  ASSERT_EQ(locked.exit_code, 0) << locked.err;
  PinEngine(project, "ddp", PythonEngineSha256());
  const fs::path out = dir.path() / "report.json";
  const auto r = testing::RunProgram(
      "trainlock",
      {"validate", project.string(), "--out", out.string(), "--threads", "2", "--python",
       kTorchPython, "--only", "env.versions,train.step,train.roundtrip,train.eval,ckpt.portable"},
      {"TMPDIR=" + dir.path().string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const nlohmann::json report = nlohmann::json::parse(testing::ReadFile(out));
  const auto& step = CheckOf(report, "train.step");
  EXPECT_EQ(step["status"], "fail") << step.dump();
  EXPECT_NE(step["summary"].get<std::string>().find(
                "/data/a.bin: token 300 at index 4095 is outside the vocabulary (256)"),
            std::string::npos)
      << step["summary"];
}

// An engine that cannot run here is an environment error (exit 3, verdict "error"), decided
// before any work: no check is marked failed, and the report says which interpreter and module.
void ExpectNotJudged(const EngineValidation& v, const std::string& line) {
  EXPECT_EQ(v.run.exit_code, 3) << v.run.out << v.run.err;
  EXPECT_EQ(v.report["verdict"], "error") << v.report.dump(2);
  EXPECT_EQ(v.report["environment_error"], line);
  EXPECT_NE(v.run.err.find(line), std::string::npos) << v.run.err;
  for (const auto& c : v.report["checks"]) EXPECT_EQ(c["status"], "skip") << c.dump();
  EXPECT_EQ(ReportSchemaViolations(v.report), std::vector<std::string>{});
}

// A stand-in interpreter in `dir`: a script that prints what the probe of `engine_probe.h`
// would, for an interpreter holding what `answer` says.
std::string StandInPython(const fs::path& dir, const std::string& answer) {
  const fs::path script = dir / "python";
  testing::WriteFile(script,
                     "#!/bin/sh\ncat <<'EOF'\ntrainlock-engine-probe " + answer + "\nEOF\n");
  fs::permissions(script, fs::perms::owner_all);
  return script.string();
}

TEST(ValidateEngineEnvironment, AMissingPythonIsAnEnvironmentErrorBeforeAnyWork) {
  EngineValidation v = ValidateWithEngine("ddp", {"--python", "/nonexistent/python3"});
  ExpectNotJudged(v, v.report.value("environment_error", "?"));
  EXPECT_NE(v.report.value("environment_error", "")
                .find("engine ddp: no Python to run the engine: tried /nonexistent/python3"),
            std::string::npos)
      << v.report.dump(2);
}

TEST(ValidateEngineEnvironment, AFrameworkTheInterpreterLacksIsAnErrorAndTheGateSaysNotJudged) {
  testing::TempDir dir;
  const std::string python =
      StandInPython(dir.path(), R"({"versions": {"torch": "1.13.0"}, "missing": "transformers", )"
                                R"("reason": "No module named 'transformers'", "cuda": false})");
  EngineValidation v = ValidateWithEngine("hf-trainer", {"--python", python});
  ExpectNotJudged(v, "engine hf-trainer: " + python +
                         " cannot import transformers (No module named 'transformers'): install "
                         "transformers in that interpreter or pass --python PATH");
  EXPECT_EQ(v.report["engine"]["python"], python);
  EXPECT_EQ(v.report["engine"]["torch"], "1.13.0");

  const fs::path report = dir.path() / "report.json";
  testing::WriteFile(report, v.report.dump(2));
  auto gate = testing::RunTrainlock({"gate", report.string(), "--lock",
                                     (testing::SourceDir() / "examples/tiny").string(),
                                     "--allow-unsigned"});
  EXPECT_EQ(gate.exit_code, 1) << gate.out << gate.err;
  EXPECT_NE(gate.out.find("not-judged: the node was not judged"), std::string::npos)
      << gate.out << gate.err;
}

// What the probe cannot see, the engine refuses when it starts (kind "unsupported"): the node
// is not judged either, and train.step says why as an error, not a failure.
TEST(ValidateEngineEnvironment, AnEngineThatRefusesTheEnvironmentWhenItStartsIsAnError) {
  testing::TempDir dir;
  const fs::path script = dir.path() / "python";
  testing::WriteFile(
      script,
      "#!/bin/sh\n"
      "if [ \"${*#*trainlock-engine-probe}\" != \"$*\" ]; then\n"
      "  echo 'trainlock-engine-probe {\"versions\": {\"torch\": \"1.13.0\"}, \"cuda\": false}'\n"
      "  exit 0\n"
      "fi\n"
      "echo '{\"event\": \"hello\", \"protocol\": \"trainlock.engine/1\", \"engine\": "
      "\"hf-trainer\", \"versions\": {\"torch\": \"1.13.0\"}}'\n"
      "echo '{\"event\": \"error\", \"kind\": \"unsupported\", \"message\": \"the "
      "TrainingArguments have no eval_strategy\"}'\n"
      "exit 1\n");
  fs::permissions(script, fs::perms::owner_all);
  EngineValidation v = ValidateWithEngine("hf-trainer", {"--python", script.string()});
  EXPECT_EQ(v.run.exit_code, 3) << v.run.out << v.run.err;
  EXPECT_EQ(v.report["verdict"], "error") << v.report.dump(2);
  const std::string line = "engine hf-trainer: " + script.string() +
                           " cannot run it here (the TrainingArguments have no eval_strategy): "
                           "install what it names in that interpreter or pass --python PATH";
  EXPECT_EQ(v.report["environment_error"], line);
  EXPECT_EQ(CheckOf(v.report, "train.step")["status"], "error");
  for (const auto& c : v.report["checks"]) EXPECT_NE(c["status"], "fail") << c.dump();
  EXPECT_EQ(ReportSchemaViolations(v.report), std::vector<std::string>{});
}

// The interpreter that ran is in the report, and env.versions compares its torch with the lock.
TEST_F(ValidateDdpEngine, TheReportNamesTheEnginesInterpreterAndItsTorch) {
  EXPECT_EQ(pass().report["engine"]["python"], kTorchPython);
  EXPECT_FALSE(pass().report["engine"]["torch"].get<std::string>().empty());
  const auto& versions = CheckOf(pass().report, "env.versions");
  EXPECT_EQ(versions["metrics"]["engine_python"], kTorchPython);
  EXPECT_EQ(versions["metrics"]["engine_torch"], pass().report["engine"]["torch"]);
}

TEST(ValidateEngineRequests, TheNativeEngineRefusesSeveralProcessesPerRun) {
  testing::TempDir dir;
  testing::CopyExample("tiny", dir.path());
  auto r = testing::RunTrainlock({"validate", dir.path().string(), "--out",
                                  (dir.path() / "r.json").string(), "--engine-nproc", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the native engine trains one process per rank"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace trainlock
