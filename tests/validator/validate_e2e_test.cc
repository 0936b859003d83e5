// trainlock validate end to end on examples/tiny: the round trip passes bitwise across three
// processes, the negative controls make it fail, and every report conforms to the schema.
#include <gtest/gtest.h>

#include <functional>

#include <cmath>
#include <future>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "base/sha256.h"
#include "engines/native/llama.h"
#include "engines/native/safetensors.h"
#include "project/check_ids.h"
#include "project/project.h"
#include "report/report.h"
#include "spec_for_tests.h"
#include "support/engine_transcript.h"
#include "test_support.h"
#include "validator/report_checks.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::RunTrainlock;

struct Validation {
  testing::RunResult run;
  nlohmann::json report;
  // Whether the run left its work directory named on stderr, and checkpoints in it.
  bool kept_work_existed = false;
  bool kept_checkpoints_existed = false;
};

// One validation of a fresh copy of examples/tiny, with extra validator options.
Validation Validate(const std::vector<std::string>& extra) {
  testing::TempDir dir;
  fs::path project = dir.path() / "tiny";
  fs::create_directories(project);
  testing::CopyExample("tiny", project);
  fs::path out = dir.path() / "report.json";
  std::vector<std::string> args = {"validate",   project.string(), "--out",
                                   out.string(), "--threads",      "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  // Work directories a failed run keeps land in the test's own directory, removed with it.
  Validation v{testing::RunProgram("trainlock", args, {"TMPDIR=" + dir.path().string()}),
               nlohmann::json()};
  if (fs::exists(out)) v.report = nlohmann::json::parse(testing::ReadFile(out));
  const std::string marker = "the workers' output stays in ";
  if (const size_t at = v.run.err.find(marker); at != std::string::npos) {
    const size_t from = at + marker.size();
    const fs::path work = v.run.err.substr(from, v.run.err.find('\n', from) - from);
    v.kept_work_existed = fs::exists(work / "b-preempted.stderr");
    v.kept_checkpoints_existed = fs::exists(work / "checkpoints");
  }
  return v;
}

const nlohmann::json& Check(const nlohmann::json& report, const std::string& id) {
  return testing::ReportCheck(report, id);
}

class ValidateTiny : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pass_ = new Validation(Validate({})); }
  static void TearDownTestSuite() { delete pass_; }
  static const Validation& pass() { return *pass_; }

 private:
  static Validation* pass_;
};
Validation* ValidateTiny::pass_ = nullptr;

// "id: summary" of every check that failed or errored, for failure messages.
std::string NotPassing(const nlohmann::json& report) {
  std::string out;
  for (const auto& c : report.value("checks", nlohmann::json::array())) {
    if (c["status"] == "fail" || c["status"] == "error") {
      out += c["id"].get<std::string>() + ": " + c["summary"].get<std::string>() + "\n";
    }
  }
  return out;
}

TEST_F(ValidateTiny, PassesAndExitsZero) {
  EXPECT_EQ(pass().run.exit_code, 0) << NotPassing(pass().report) << pass().run.err;
  EXPECT_EQ(pass().report["verdict"], "pass") << NotPassing(pass().report);
}

// tiny pins no model: train.step says it trained a seeded initialisation, as an object a reader
// of metrics.model.source finds.
TEST_F(ValidateTiny, TrainStepNamesTheModelSourceAsAnObject) {
  const auto& model = Check(pass().report, "train.step")["metrics"]["model"];
  ASSERT_TRUE(model.is_object()) << model;
  EXPECT_EQ(model.value("source", ""), "seeded initialisation");
}

// The process that saves is the uninterrupted reference too: it trains every step, writes its
// final state and is killed with SIGKILL; a fresh process resumes from its checkpoint.
TEST_F(ValidateTiny, ResumeIsBitwiseEqualToTheRunThatSavedItAndWasKilled) {
  const auto& roundtrip = Check(pass().report, "train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "pass") << roundtrip["summary"];
  EXPECT_EQ(roundtrip["metrics"]["bitwise_equal"], true);
  EXPECT_EQ(roundtrip["metrics"]["max_abs_loss_diff"], 0.0);
  EXPECT_EQ(roundtrip["metrics"]["preempted_with"], "SIGKILL");
  const auto& pids = roundtrip["metrics"]["pids"];
  EXPECT_EQ(pids["uninterrupted"], pids["preempted"]) << pids;
  EXPECT_NE(pids["resumed"], pids["preempted"]) << pids;
  EXPECT_EQ(roundtrip["metrics"]["losses_uninterrupted"], roundtrip["metrics"]["losses_resumed"]);
  EXPECT_NE(roundtrip["summary"].get<std::string>().find("was killed with SIGKILL"),
            std::string::npos)
      << roundtrip["summary"];
}

// After its checkpoint the saving process saves once more in the run's mode (--steady-saves
// defaults to 1), timed with the steps after it; on the CPU nothing is page-locked.
TEST_F(ValidateTiny, TheSavingProcessMeasuresASteadyStateSave) {
  const auto& metrics = Check(pass().report, "train.roundtrip")["metrics"];
  ASSERT_TRUE(metrics.contains("save_steady")) << metrics.dump();
  ASSERT_EQ(metrics["save_steady"].size(), 1u) << metrics["save_steady"];
  const auto& save = metrics["save_steady"][0];
  EXPECT_EQ(save["ordinal"], 2);
  EXPECT_EQ(save["steps_after"], 3);
  EXPECT_EQ(save["new_pinned_bytes"], 0);
  EXPECT_DOUBLE_EQ(save["stall_s"].get<double>(),
                   save["blocking_s"].get<double>() + save["stretch_s"].get<double>());
  EXPECT_EQ(metrics["save_steady_stall_s"], save["stall_s"]);
  EXPECT_EQ(metrics["save_steady_new_pinned_bytes"], 0);
}

TEST_F(ValidateTiny, TheRestoredStepIsTheOneTheResumedWorkerReported) {
  const auto& roundtrip = Check(pass().report, "train.roundtrip");
  ASSERT_TRUE(roundtrip["metrics"].contains("restored_step")) << roundtrip["metrics"].dump();
  EXPECT_EQ(roundtrip["metrics"]["restored_step"], roundtrip["metrics"]["checkpoint_at"]);
}

TEST_F(ValidateTiny, OnTheCpuTheRoundTripsTelemetryIsUnavailableSayingWhy) {
  const auto& metrics = Check(pass().report, "train.roundtrip")["metrics"];
  ASSERT_TRUE(metrics.contains("telemetry")) << metrics.dump();
  EXPECT_EQ(metrics["telemetry"], nlohmann::json({{"unavailable", "CPU run"}}));
  const auto& step = Check(pass().report, "train.step");
  EXPECT_EQ(step["status"], "pass");  // nothing decided from it, and it says so
  EXPECT_NE(step["summary"].get<std::string>().find("; GPU throttling not judged (CPU run)"),
            std::string::npos)
      << step["summary"];
}

// A native process of the round trip may be spawned ahead of its turn (it loads LibTorch and
// waits at its gate without a device), but starts only once the one it follows has ended (C
// could find no checkpoint yet). With the saving process as the reference there is no process A.
TEST_F(ValidateTiny, EachNativeProcessStartsOnlyAfterTheOneItFollowsEnded) {
  const auto& processes = Check(pass().report, "train.roundtrip")["metrics"]["processes"];
  ASSERT_TRUE(processes.is_object()) << processes.dump();
  const auto times = [&](const char* name, const char* what) {
    return processes.at(name).at(what).get<double>();
  };
  EXPECT_FALSE(processes.contains("a-uninterrupted")) << "the saving process is the reference";
  EXPECT_LE(times("b-preempted", "ended_s"), times("c-resumed", "started_s"));
  EXPECT_LE(times("b-preempted", "ended_s"), times("d-portable", "started_s"));
  for (const char* name : {"b-preempted", "c-resumed", "d-portable"})
    EXPECT_LE(times(name, "spawned_s"), times(name, "started_s")) << name;
}

TEST_F(ValidateTiny, TheResumedAndPortableProcessesAreSpawnedBeforeTheirTurn) {
  const auto& processes = Check(pass().report, "train.roundtrip")["metrics"]["processes"];
  for (const char* name : {"c-resumed", "d-portable"})
    EXPECT_LT(processes.at(name).at("spawned_s").get<double>(),
              processes.at("b-preempted").at("ended_s").get<double>())
        << name;
}

// The final states go to memory when the host has room (coordinator/state_dir.h), and the report
// says where they went and, when not to memory, why.
TEST_F(ValidateTiny, TheReportSaysWhereTheFinalStatesWentAndWhyNotToMemory) {
  const auto& m = Check(pass().report, "train.roundtrip")["metrics"];
  ASSERT_TRUE(m.contains("states_in")) << m.dump();
  const std::string in = m["states_in"];
  if (in == "memory") {
    EXPECT_FALSE(m.contains("states_not_in_memory")) << m.dump();
  } else {
    EXPECT_EQ(in, "work-dir");
    EXPECT_NE(m.value("states_not_in_memory", "").find("/dev/shm"), std::string::npos) << m.dump();
  }
}

TEST_F(ValidateTiny, LossFallsOverTheRun) {
  const auto& losses = Check(pass().report, "train.roundtrip")["metrics"]["losses_uninterrupted"];
  ASSERT_GE(losses.size(), 2u);
  EXPECT_LT(losses.back().get<double>(), losses.front().get<double>());
}

TEST_F(ValidateTiny, CheckpointTimeIsMeasured) {
  const auto& m = Check(pass().report, "train.roundtrip")["metrics"];
  EXPECT_GT(m["checkpoint_bytes"].get<int64_t>(), 0);
  EXPECT_GT(m["save_s"].get<double>(), 0);
  EXPECT_GT(m["restore_gbps"].get<double>(), 0);
}

// The native checkpoint too is read and hashed by the coordinator before C and D restore it,
// against its manifest (and the manifest against its hash file).
TEST_F(ValidateTiny, TheCoordinatorVerifiedTheNativeCheckpointAgainstItsManifest) {
  const auto& verified = Check(pass().report, "train.roundtrip")["metrics"]["checkpoint_verified"];
  EXPECT_EQ(verified["verified_by"], "coordinator") << verified.dump();
  EXPECT_EQ(verified["commit_record"], "manifest.json");
  EXPECT_GE(verified["files_verified"].get<int64_t>(), 2);  // model and optimizer
  EXPECT_FALSE(verified.contains("problem"));
  EXPECT_EQ(Check(pass().report, "train.roundtrip")["metrics"]["checkpoint_bytes"],
            verified["bytes_verified"]);
  EXPECT_EQ(Check(pass().report, "ckpt.portable")["metrics"]["checkpoint"], verified);
}

TEST_F(ValidateTiny, EvalAndPortableCheckpointAgree) {
  EXPECT_EQ(Check(pass().report, "train.eval")["status"], "pass");
  const auto& portable = Check(pass().report, "ckpt.portable");
  EXPECT_EQ(portable["status"], "pass") << portable["summary"];
  EXPECT_EQ(portable["metrics"]["abs_diff"], 0.0);
}

TEST_F(ValidateTiny, StepIsMeasuredAtTheConfigShape) {
  const auto& step = Check(pass().report, "train.step");
  EXPECT_EQ(step["status"], "pass");
  EXPECT_EQ(step["metrics"]["tokens"], 4 * 32 * 2);  // micro_batch x seq_len x grad_accum
  EXPECT_GT(step["metrics"]["tokens_per_s"].get<double>(), 0);
}

// The shape train.step reports is what the worker observed in the step, not the config's
// words: on the CPU, fp32 parameters and activations, one process, no recomputation.
TEST_F(ValidateTiny, StepReportsTheShapeItRanMeasuredNotCopied) {
  const auto& shape = Check(pass().report, "train.step")["metrics"]["measured_shape"];
  EXPECT_EQ(shape["engine"], "native");
  EXPECT_EQ(shape["param_dtype"], "fp32");
  EXPECT_EQ(shape["activation_dtype"], "fp32");
  EXPECT_EQ(shape["world_size"], 1);
  EXPECT_EQ(shape["activation_checkpointing"], false);
}

// Without --checkpoint-dir and a lock naming none, the checkpoints went to the work directory,
// and the report says so.
TEST_F(ValidateTiny, TheReportNamesItsCheckpointStorageAndWhereItCameFrom) {
  EXPECT_EQ(pass().report["checkpoint_dir"]["source"], "work-dir");
  EXPECT_NE(pass().report["checkpoint_dir"]["path"].get<std::string>().find("checkpoints"),
            std::string::npos);
}

TEST_F(ValidateTiny, EveryCheckIdAppearsOnceAndSkipsSayWhy) {
  EXPECT_EQ(pass().report["checks"].size(), kCheckIds.size());
  for (const auto& c : pass().report["checks"]) {
    if (c["status"] == "skip") {
      EXPECT_FALSE(c["summary"].get<std::string>().empty()) << c["id"];
    }
  }
}

TEST_F(ValidateTiny, ReportConformsToTheSchemaAndCarriesTheLockIdentity) {
  EXPECT_EQ(ReportSchemaViolations(pass().report), std::vector<std::string>{});
  auto hash = RunTrainlock({"hash", (testing::SourceDir() / "examples/tiny").string()});
  EXPECT_EQ(pass().report["lock_sha256"].get<std::string>() + "\n", hash.out);
}

TEST_F(ValidateTiny, ALogGetsATimestampedLineForEachPhaseAndTheSummaryEachCheckOnce) {
  // stderr is a pipe here, as in CI, `kubectl logs` or a Slurm .out file: --progress auto is log.
  // Such a log is where stdout and stderr meet: the summary lists the checks, the log does not.
  const std::string& err = pass().run.err;
  const std::string& out = pass().run.out;
  EXPECT_TRUE(std::regex_search(
      err, std::regex(R"((^|\n)\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ trainlock-validate: train\.step, )"
                      R"(train\.roundtrip on (cpu|cuda:0): )")))
      << err;
  EXPECT_TRUE(std::regex_search(
      err, std::regex(R"(trainlock-validate: done train\.step, train\.roundtrip on (cpu|cuda:0): )"
                      R"(.* \(\d+\.\d s\)\n)")))
      << err;
  EXPECT_EQ(err.find("trainlock-validate: check "), std::string::npos) << err;
  for (std::string_view id : kCheckIds) {
    const std::regex row("\n  (PASS |FAIL |ERROR|skip ) " + std::string(id) + " ");
    const auto rows =
        std::distance(std::sregex_iterator(out.begin(), out.end(), row), std::sregex_iterator());
    EXPECT_EQ(rows, 1) << id << "\n" << out;
  }
}

TEST(ValidateProgress, JsonLinesCarryEveryCheckForMachines) {
  Validation v = Validate({"--only", "env.versions", "--progress", "json"});
  EXPECT_EQ(v.run.exit_code, 0) << v.run.err;
  std::istringstream lines(v.run.err);
  int checks = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("{")) continue;
    nlohmann::json event = nlohmann::json::parse(line);
    EXPECT_TRUE(event["time"].is_string());
    if (event["event"] == "check") {
      ++checks;
      EXPECT_TRUE(event["status"].is_string());
    }
  }
  EXPECT_EQ(checks, static_cast<int>(kCheckIds.size())) << v.run.err;
}

// --only train.step trains process A alone: the checks of the other processes are never run,
// and the step keeps what it measured.
TEST(ValidateOnly, TheStepAloneRunsNoOtherProcessOfTheRoundTrip) {
  testing::TempDir kept;  // the run's work directory stays under --work-dir
  Validation v = Validate({"--only", "train.step", "--work-dir", kept.path().string()});
  EXPECT_EQ(v.run.exit_code, 0) << v.run.out << v.run.err;
  for (const auto& c : v.report["checks"]) {
    if (c["id"] == "train.step") {
      EXPECT_EQ(c["status"], "pass") << c.dump();
    } else {
      EXPECT_EQ(c["status"], "skip") << c.dump();
    }
    if (c["id"] == "train.roundtrip" || c["id"] == "env.arch") {
      EXPECT_EQ(c["summary"], "not selected (--only)") << c.dump();
    }
  }
  ASSERT_TRUE(v.report["work_dir"].is_string()) << v.report.dump(2);
  const fs::path work = v.report["work_dir"].get<std::string>();
  EXPECT_TRUE(fs::exists(work / "a-uninterrupted.stderr")) << "process A did not run";
  EXPECT_FALSE(fs::exists(work / "b-preempted.stderr")) << "process B ran";
}

// --only train.eval needs every process of the round trip, but only train.eval is judged: the
// step, the round trip and the portable check it did not select are skips, not what their
// processes would have shown.
TEST(ValidateOnly, AnUnselectedCheckOfTheRoundTripIsNeverJudgedThoughItsProcessesRan) {
  Validation v = Validate({"--only", "train.eval"});
  EXPECT_EQ(v.run.exit_code, 0) << v.run.out << v.run.err;
  for (const auto& c : v.report["checks"]) {
    if (c["id"] == "train.eval") {
      EXPECT_EQ(c["status"], "pass") << c.dump();
    } else if (c["id"] == "train.step" || c["id"] == "train.roundtrip" ||
               c["id"] == "ckpt.portable") {
      EXPECT_EQ(c["status"], "skip") << c.dump();
      EXPECT_EQ(c["summary"], "not selected (--only)") << c.dump();
    }
  }
}

TEST(ValidateProgress, QuietWritesNoProgress) {
  Validation v = Validate({"--only", "env.versions", "-q"});
  EXPECT_EQ(v.run.exit_code, 0) << v.run.err;
  EXPECT_EQ(v.run.err.find("trainlock-validate: check"), std::string::npos) << v.run.err;
  EXPECT_NE(v.run.out.find("verdict: pass"), std::string::npos) << v.run.out;
}

TEST(ValidateProgress, VerboseShowsEachChecksMetricsInTheSummary) {
  Validation plain = Validate({"--only", "env.versions"});
  Validation verbose = Validate({"--only", "env.versions", "-v"});
  EXPECT_EQ(plain.run.out.find("metrics: "), std::string::npos) << plain.run.out;
  EXPECT_NE(verbose.run.out.find("metrics: {"), std::string::npos) << verbose.run.out;
}

TEST(ValidateProgress, AnUnknownProgressStyleIsBadInput) {
  Validation v = Validate({"--progress", "xml"});
  EXPECT_EQ(v.run.exit_code, 2);
  EXPECT_NE(v.run.err.find("auto, terminal, log, json or none"), std::string::npos) << v.run.err;
}

TEST(ValidateNegativeControl, SkippingTheRngRestoreFailsTheRoundtrip) {
  Validation v = Validate({"--negative-control", "rng"});
  EXPECT_EQ(v.run.exit_code, 1);
  const auto& roundtrip = Check(v.report, "train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "fail");
  EXPECT_EQ(roundtrip["metrics"]["bitwise_equal"], false);
  EXPECT_EQ(roundtrip["metrics"]["rng_restored"], false);
  EXPECT_EQ(ReportSchemaViolations(v.report), std::vector<std::string>{});
}

// A negative control is marked at the top of its report and never passes, whatever its checks.
TEST(ValidateNegativeControl, TheReportIsMarkedAndItsVerdictIsFail) {
  Validation v = Validate({"--negative-control", "data"});
  EXPECT_EQ(v.report["negative_control"], "data");
  EXPECT_EQ(v.report["verdict"], "fail");
  EXPECT_NE(v.run.out.find("NEGATIVE CONTROL (data)"), std::string::npos) << v.run.out;
}

// A worker that dies (here: killed at its time limit) is named with the directory of its
// output, which stays (without checkpoints) for the reader.
TEST(ValidateWorkerFailure, AWorkerPastItsTimeLimitIsNamedAndItsOutputStays) {
  Validation v = Validate({"--timeout", "1"});
  EXPECT_EQ(v.run.exit_code, 1);
  EXPECT_NE(Check(v.report, "train.step")["summary"].get<std::string>().find(
                "did not finish within 1 s; its output is in "),
            std::string::npos)
      << Check(v.report, "train.step")["summary"];
  EXPECT_NE(v.run.err.find("the workers' output stays in "), std::string::npos) << v.run.err;
  EXPECT_TRUE(v.kept_work_existed);
  EXPECT_FALSE(v.kept_checkpoints_existed);
}

TEST(ValidateNegativeControl, SkippingTheDataLoaderRestoreFailsTheRoundtrip) {
  Validation v = Validate({"--negative-control", "data"});
  EXPECT_EQ(v.run.exit_code, 1);
  const auto& roundtrip = Check(v.report, "train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "fail");
  EXPECT_EQ(roundtrip["metrics"]["first_divergent_step"], 4);  // the first step after the restore
  EXPECT_EQ(ReportSchemaViolations(v.report), std::vector<std::string>{});
}

TEST(ValidateNegativeControl, ACorruptCheckpointIsRefusedNotLoaded) {
  Validation v = Validate({"--negative-control", "corrupt"});
  EXPECT_EQ(v.run.exit_code, 1);
  const auto& roundtrip = Check(v.report, "train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "fail");
  // The control flips a byte of the newest checkpoint's largest file (the AdamW moments).
  EXPECT_NE(roundtrip["summary"].get<std::string>().find("optimizer.safetensors: sha256"),
            std::string::npos)
      << roundtrip["summary"];
  EXPECT_EQ(Check(v.report, "ckpt.portable")["status"], "fail");
  EXPECT_EQ(ReportSchemaViolations(v.report), std::vector<std::string>{});
}

// Two validations sharing one --checkpoint-dir at once, each (where this machine allows a
// PID namespace) as PID 1 of its own, as two containers on one node are: each gets its own
// directory under it, so neither removes nor restores the other's checkpoints (their locks
// differ in the seed, so a checkpoint of the other run would be refused). Each namespace mounts
// its own /proc, as a container's runtime does: with the host's, a process's own PID names
// another process there, and LeakSanitizer's exit check (which lists /proc/<pid>/task) failed
// any sanitized process whose PID in the namespace is missing on the host.
TEST(ValidateCheckpointDir, TwoRunsSharingItAtOnceBothPass) {
  testing::TempDir shared;
  const std::vector<std::string> in_pid_namespace = {"unshare", "--pid", "--fork", "--mount-proc"};
  std::vector<std::string> probe = in_pid_namespace;
  probe.push_back("true");
  const bool pid_namespaces =
      testing::HaveProgram("unshare") && testing::RunCommand(probe).exit_code == 0;
  auto validate = [&](const std::string& seed) {
    testing::TempDir dir;
    const fs::path project = dir.path() / "tiny";
    fs::create_directories(project);
    testing::CopyExample("tiny", project);
    std::string manifest = testing::ReadFile(project / "trainlock.toml");
    manifest.replace(manifest.find("seed = 1234"), 11, "seed = " + seed);
    testing::WriteFile(project / "trainlock.toml", manifest);
    if (RunTrainlock({"lock", project.string(), "--offline"}).exit_code != 0)
      return testing::RunResult{-1, "", "could not lock " + project.string()};
    std::vector<std::string> argv;
    if (pid_namespaces) argv = in_pid_namespace;
    for (const std::string& a :
         {(testing::BinDir() / "trainlock").string(), std::string("validate"), project.string(),
          std::string("--out"), (dir.path() / "report.json").string(), std::string("--threads"),
          std::string("1"), std::string("--checkpoint-dir"), shared.path().string(),
          // The checks that write checkpoints: two runs probing one GPU at once would measure
          // each other, which is not what this test is about.
          std::string("--only"),
          std::string("train.step,train.roundtrip,train.eval,ckpt.portable")})
      argv.push_back(a);
    return testing::RunCommand(argv);
  };
  auto first = std::async(std::launch::async, validate, "1234");
  auto second = std::async(std::launch::async, validate, "4321");
  const testing::RunResult a = first.get(), b = second.get();
  EXPECT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_EQ(b.exit_code, 0) << b.out << b.err;
}

// A token shard of 4096 uint16 tokens, the local dataset of LockedTinyWithShard.
std::string SampleShard() {
  std::string shard;
  for (int i = 0; i < 4096; ++i) shard += std::string{static_cast<char>(i % 256), '\0'};
  return shard;
}

// examples/tiny in DIR/tiny with SampleShard() as its local dataset data/a.bin, locked offline.
fs::path LockedTinyWithShard(const fs::path& dir) {
  const fs::path project = dir / "tiny";
  fs::create_directories(project);
  testing::CopyExample("tiny", project);
  testing::WriteFile(project / "data/a.bin", SampleShard());
  testing::WriteFile(project / "trainlock.toml",
                     testing::ReadFile(project / "trainlock.toml") +
                         "\n[dataset]\nsource = \"local\"\npath = \"data\"\n"
                         "token-dtype = \"uint16\"\nfiles = [\"a.bin\"]\n");
  auto locked = RunTrainlock({"lock", project.string(), "--offline"});
  EXPECT_EQ(locked.exit_code, 0) << locked.err;
  return project;
}

// A local dataset shard that is a symlink out of the project (placed after locking) is
// refused by the data check and never read by the training workers.
TEST(ValidateLocalData, AShardLinkedOutOfTheProjectIsNotTrainedOn) {
  testing::TempDir dir;
  const fs::path project = LockedTinyWithShard(dir.path());
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::string shard = SampleShard();
  testing::WriteFile(dir.path() / "outside/a.bin", shard);
  fs::remove(project / "data/a.bin");
  fs::create_symlink(dir.path() / "outside/a.bin", project / "data/a.bin");
  const fs::path out = dir.path() / "report.json";
  auto r = RunTrainlock({"validate", project.string(), "--out", out.string(), "--threads", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const nlohmann::json report = nlohmann::json::parse(testing::ReadFile(out));
  EXPECT_EQ(Check(report, "data.dataset")["status"], "fail");
  const auto& step = Check(report, "train.step");
  EXPECT_NE(step["status"], "pass");
  EXPECT_NE(step["summary"].get<std::string>().find("outside the project"), std::string::npos)
      << step["summary"];
}

TEST(ValidateInput, AProjectWithoutALockIsBadInput) {
  testing::TempDir dir;
  testing::CopyExample("tiny", dir.path());
  fs::remove(dir.path() / "trainlock.lock");
  auto r =
      RunTrainlock({"validate", dir.path().string(), "--out", (dir.path() / "r.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("trainlock.lock: error: cannot read: no such file"), std::string::npos)
      << r.err;
}

#if !defined(TRAINLOCK_WITH_CUDA)
// A CPU build given the pilot's lock (cuda target only) refuses at once, naming its build and
// the lock's targets, instead of training a 1B model on the CPU.
TEST(ValidateInput, ACpuBuildRefusesALockWithoutACpuTarget) {
  testing::TempDir dir;
  testing::CopyExample("h200-pilot", dir.path());
  auto r =
      RunTrainlock({"validate", dir.path().string(), "--out", (dir.path() / "r.json").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("this validator is a CPU build, but the lock's targets are cuda (no cpu "
                       "target)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir.path() / "r.json"));
}

TEST(ValidateInput, ACpuBuildRefusesDeviceCuda) {
  testing::TempDir dir;
  testing::CopyExample("tiny", dir.path());
  auto r = RunTrainlock({"validate", dir.path().string(), "--device", "cuda"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--device: error: 'cuda' on a CPU build of the validator"),
            std::string::npos)
      << r.err;
}
#endif

// The lock pins the config by its SHA-256: training from an edited config with the old lock is
// refused before any training, with the finding id, the lock's position and the remedy.
TEST(ValidateInput, AnEditedConfigWithTheOldLockIsRefusedBeforeTraining) {
  testing::TempDir dir;
  testing::CopyExample("tiny", dir.path());
  const fs::path config = dir.path() / "configs/tiny.yaml";
  testing::WriteFile(config, testing::ReadFile(config) + "# edited after locking\n");
  auto r =
      RunTrainlock({"validate", dir.path().string(), "--out", (dir.path() / "r.json").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("trainlock.lock:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: lock.config: the training config"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run `trainlock lock` to record the new config hash"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir.path() / "r.json"));
}

// A lock edited by hand (steps 6 -> 60: a validation ten times cheaper than the one the manifest
// asks for, or ten times dearer) is refused before any work, naming the field, by `trainlock
// validate` (with or without --allow-drift, which covers a changed manifest or config, not a
// changed lock) and by trainlock-validate itself: no report, no work directory, nothing trained.
TEST(ValidateInput, AHandEditedLockIsRefusedBeforeAnyWorkNamingTheField) {
  testing::TempDir dir;
  const fs::path project = dir.path() / "tiny";
  fs::create_directories(project);
  testing::CopyExample("tiny", project);
  std::string lock = testing::ReadFile(project / "trainlock.lock");
  lock.replace(lock.find("steps = 6"), 9, "steps = 60");
  testing::WriteFile(project / "trainlock.lock", lock);
  const fs::path out = dir.path() / "r.json", work = dir.path() / "work";
  fs::create_directories(work);
  const std::vector<std::string> common = {
      project.string(), "--out", out.string(), "--work-dir", work.string(), "--threads", "2"};
  std::vector<std::string> validate = {"validate"}, drift = {"validate"};
  validate.insert(validate.end(), common.begin(), common.end());
  drift.insert(drift.end(), common.begin(), common.end());
  drift.push_back("--allow-drift");
  const std::regex named(R"(trainlock\.lock:\d+:\d+: error: lock\.edited: validate\.steps: 60 but )"
                         R"(trainlock\.toml \(with the lock's pins\) says 6)");
  for (const auto& [program, args] :
       {std::pair{"trainlock", validate}, std::pair{"trainlock", drift},
        std::pair{"trainlock-validate", common}}) {
    const testing::RunResult r = testing::RunProgram(program, args);
    EXPECT_EQ(r.exit_code, 2) << program << " " << r.out << r.err;
    EXPECT_TRUE(std::regex_search(r.err, named)) << r.err;
    EXPECT_NE(r.err.find("--allow-drift does not cover an edited lock"), std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(out)) << program;
    EXPECT_TRUE(fs::is_empty(work)) << program << ": a run began";
  }
}

// Without the manifest the lock cannot be re-derived, so a hand edit could not be told: the
// validation is refused, naming the manifest, never run unchecked.
TEST(ValidateInput, AProjectWithoutItsManifestIsRefusedNotValidatedUnchecked) {
  testing::TempDir dir;
  testing::CopyExample("tiny", dir.path());
  fs::remove(dir.path() / "trainlock.toml");
  const fs::path out = dir.path() / "r.json";
  auto r = RunTrainlock({"validate", dir.path().string(), "--out", out.string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("trainlock.toml: error: cannot read: no such file: the lock cannot be "
                       "re-derived without the manifest it was made from"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out));
}

// The CPU trains fp32 whatever the config says: a bf16 config is refused before any training
// (no report), naming the config file and the field, not validated as fp32 and reported bf16.
TEST(ValidateInput, Bf16OnTheCpuIsRefusedBeforeTraining) {
  testing::TempDir dir;
  testing::CopyExample("tiny", dir.path());
  const fs::path config = dir.path() / "configs/tiny.yaml";
  std::string text = testing::ReadFile(config);
  text.replace(text.find("precision: fp32"), 15, "precision: bf16");
  testing::WriteFile(config, text);
  // --device cpu: on a GPU machine "auto" would train on the GPU, where bf16 is honoured.
  auto r = RunTrainlock({"validate", dir.path().string(), "--out", (dir.path() / "r.json").string(),
                         "--allow-drift", "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("tiny.yaml: error: training.precision: bf16 is not supported by the "
                       "native engine on the CPU"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir.path() / "r.json"));
}

// The lock's checkpoint storage is the long run's: when it is missing the validation is
// refused before any work, naming it, and nothing is created there.
TEST(ValidateInput, AMissingLockCheckpointDirIsRefusedBeforeAnyWork) {
  testing::TempDir dir;
  testing::CopyExample("tiny", dir.path());
  const fs::path manifest = dir.path() / "trainlock.toml";
  std::string text = testing::ReadFile(manifest);
  const fs::path missing = dir.path() / "no-such-storage";
  text.replace(text.find("checkpoint-at = 3"), 17,
               "checkpoint-at = 3\ncheckpoint-dir = '" + missing.string() + "'");
  testing::WriteFile(manifest, text);
  ASSERT_EQ(RunTrainlock({"lock", dir.path().string(), "--offline"}).exit_code, 0);
  auto r =
      RunTrainlock({"validate", dir.path().string(), "--out", (dir.path() / "r.json").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("validate.checkpoint-dir: '" + missing.string() + "' does not exist"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(missing));
  EXPECT_FALSE(fs::exists(dir.path() / "r.json"));
}

// --allow-drift trains anyway and says so in the report, with the config it trained.
TEST(ValidateInput, AllowDriftRecordsTheDriftAndTheConfigTrained) {
  testing::TempDir dir;
  testing::CopyExample("tiny", dir.path());
  const fs::path config = dir.path() / "configs/tiny.yaml";
  testing::WriteFile(config, testing::ReadFile(config) + "# edited after locking\n");
  const fs::path out = dir.path() / "r.json";
  auto r = RunTrainlock(
      {"validate", dir.path().string(), "--out", out.string(), "--threads", "2", "--allow-drift"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json report = nlohmann::json::parse(testing::ReadFile(out));
  EXPECT_EQ(report["drift"][0]["id"], "lock.config");
  EXPECT_EQ(report["config_sha256"], Sha256Hex(testing::ReadFile(config)));
  EXPECT_NE(r.out.find("DRIFT (--allow-drift) lock.config"), std::string::npos) << r.out;
  auto gate =
      RunTrainlock({"gate", out.string(), "--lock", dir.path().string(), "--allow-unsigned"});
  EXPECT_EQ(gate.exit_code, 1);
  EXPECT_NE(gate.out.find("config: the report trained config"), std::string::npos) << gate.out;
}

TEST(ValidateInput, AManifestEditedAfterLockingIsAStaleLock) {
  testing::TempDir dir;
  testing::CopyExample("tiny", dir.path());
  const fs::path manifest = dir.path() / "trainlock.toml";
  // One more [python] package (tiny's manifest has the table already).
  std::string text = testing::ReadFile(manifest);
  text.insert(text.find("[python]") + text.substr(text.find("[python]")).find('\n') + 1,
              "numpy = \"2.1.3\"\n");
  testing::WriteFile(manifest, text);
  auto r =
      RunTrainlock({"validate", dir.path().string(), "--out", (dir.path() / "r.json").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("error: lock.stale: the lock was made from a different manifest"),
            std::string::npos)
      << r.err;
}

TEST(ValidateInput, AnUnknownValidatorOptionIsBadInput) {
  EXPECT_EQ(RunTrainlock({"validate", ".", "--frobnicate"}).exit_code, 2);
}

using testing::TinyWith;

// A loss tolerance forgives loss noise, never a resume that lost its RNG state: with the
// widest tolerance the lock allows, skipping the RNG restore still fails.
TEST(ValidateTolerance, ALossToleranceNeverForgivesAResumeWithoutItsRngState) {
  testing::TempDir dir;
  fs::path project = TinyWith(dir.path(), "", "loss-tolerance = 1.0\n");
  fs::path out = dir.path() / "report.json";
  auto run = RunTrainlock({"validate", project.string(), "--out", out.string(), "--threads", "2",
                           "--negative-control", "rng"});
  nlohmann::json report = nlohmann::json::parse(testing::ReadFile(out));
  EXPECT_EQ(run.exit_code, 1) << run.err;
  const auto& roundtrip = Check(report, "train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "fail") << roundtrip["summary"];
  EXPECT_EQ(roundtrip["metrics"]["loss_tolerance"], 1.0);
  EXPECT_LE(roundtrip["metrics"]["max_abs_loss_diff"].get<double>(), 1.0);
  EXPECT_EQ(roundtrip["metrics"]["final_state_equal"], false);
}

// A pinned model whose weights hold an infinity: the loss is not finite from the first step.
// That is a finding naming the step, with the report written, not a crash.
TEST(ValidateNonFiniteLoss, AnInfiniteWeightFailsTrainingWithTheStep) {
  testing::TempDir dir;
  fs::path staging = dir.path() / "staging";
  testing::CopyExample("tiny", (fs::create_directories(staging), staging));
  const ModelConfig c = LoadProject(staging, ManifestRequirement::kOptional).config.model;
  validate::Llama model(c);
  std::vector<validate::NamedTensor> tensors;
  for (auto& item : model->named_parameters()) {
    torch::Tensor t = item.value().detach().clone();
    if (item.key() == "model.norm.weight") t[0] = INFINITY;
    tensors.push_back({item.key(), t});
  }
  fs::path model_dir = dir.path() / "model";
  fs::create_directories(model_dir);
  testing::WriteFile(model_dir / "config.json",
                     nlohmann::json{{"architectures", {"LlamaForCausalLM"}},
                                    {"model_type", "llama"},
                                    {"hidden_size", c.hidden_size},
                                    {"num_hidden_layers", c.num_layers},
                                    {"num_attention_heads", c.num_heads},
                                    {"num_key_value_heads", c.num_kv_heads},
                                    {"intermediate_size", c.intermediate_size},
                                    {"vocab_size", c.vocab_size},
                                    {"tie_word_embeddings", c.tie_embeddings}}
                         .dump());
  validate::WriteSafetensors(model_dir / "model.safetensors", tensors);
  std::string pinned;
  for (const char* name : {"config.json", "model.safetensors"}) {
    uint64_t size = 0;
    const std::string sha = Sha256FileHex(model_dir / name, &size);
    pinned += "[[model.files]]\npath = \"" + std::string(name) + "\"\nsha256 = \"" + sha +
              "\"\nsize = " + std::to_string(size) + "\n";
  }
  const std::string model_table = "\n[model]\nsource = \"local\"\npath = \"model\"\n";
  fs::path project =
      TinyWith(dir.path(), model_table + "files = [\"config.json\", \"model.safetensors\"]\n", "",
               model_table + pinned);
  fs::copy(model_dir, project / "model", fs::copy_options::recursive);

  fs::path out = dir.path() / "report.json";
  auto run = RunTrainlock({"validate", project.string(), "--out", out.string(), "--threads", "2"});
  ASSERT_TRUE(fs::exists(out)) << run.err;
  nlohmann::json report = nlohmann::json::parse(testing::ReadFile(out));
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_EQ(Check(report, "data.model")["status"], "pass") << Check(report, "data.model");
  for (const char* id : {"train.step", "train.roundtrip"}) {
    const auto& check = Check(report, id);
    EXPECT_EQ(check["status"], "fail") << id;
    const std::string summary = check["summary"].get<std::string>();
    EXPECT_NE(summary.find("the loss is "), std::string::npos) << id << ": " << summary;
    EXPECT_NE(summary.find(" at step 1: the run diverged"), std::string::npos)
        << id << ": " << summary;
  }
  EXPECT_EQ(ReportSchemaViolations(report), std::vector<std::string>{});
}

// The sample op library declared in tiny's manifest and lock: the report carries a passing
// ops.custom with its smoke metrics.
TEST(ValidateWithCustomOps, TheSampleLibraryPassesInTheReport) {
  testing::TempDir dir;
  const std::string ops =
      "\n[[custom-ops]]\nlibrary = \"ops/libtrainlock_ops.so\"\n"
      "ops = [\"trainlock_ops::fused_rmsnorm\"]\n[[custom-ops.smoke]]\n"
      "op = \"trainlock_ops::fused_rmsnorm\"\n"
      "inputs = [{ shape = [16, 128], dtype = \"fp32\" }, { shape = [128], dtype = \"fp32\" }]\n"
      "reference = \"rmsnorm\"\nrtol = 1e-4\natol = 1e-5\ngrad-rtol = 1e-3\ngrad-atol = 1e-4\n";
  fs::path project = TinyWith(dir.path(), ops);
  fs::create_directories(project / "ops");
  fs::copy_file(fs::path(TRAINLOCK_OPS_DIR) / "libtrainlock_ops.so",
                project / "ops" / "libtrainlock_ops.so");
  // Locked as `trainlock lock` locks it: the library that is here, by its sha256.
  ASSERT_EQ(RunTrainlock({"lock", project.string(), "--offline"}).exit_code, 0);

  fs::path out = dir.path() / "report.json";
  auto run = RunTrainlock({"validate", project.string(), "--out", out.string(), "--threads", "2"});
  nlohmann::json report = nlohmann::json::parse(testing::ReadFile(out));
  EXPECT_EQ(run.exit_code, 0) << NotPassing(report) << run.err;
  const auto& ops_check = Check(report, "ops.custom");
  EXPECT_EQ(ops_check["status"], "pass") << ops_check["summary"];
  EXPECT_TRUE(
      ops_check["metrics"]["libraries"][0]["ops"][0]["smoke"][0]["forward"]["within_tolerance"]
          .get<bool>());
  EXPECT_TRUE(ReportSchemaViolations(report).empty());
}

// The project's own smoke command runs after the round trip and is reported as ext.command.
TEST(ValidateWithSmokeCommand, TheCommandsExitAndOutputAreInTheReport) {
  testing::TempDir dir;
  fs::path project =
      TinyWith(dir.path(),
               "\n[ext.command]\nargv = [\"sh\", \"-c\", \"echo step 1; echo step 2\"]\n"
               "timeout-s = 60\n");
  fs::path out = dir.path() / "report.json";
  auto run = RunTrainlock({"validate", project.string(), "--out", out.string(), "--threads", "2"});
  nlohmann::json report = nlohmann::json::parse(testing::ReadFile(out));
  EXPECT_EQ(run.exit_code, 0) << NotPassing(report) << run.err;
  const auto& ext = Check(report, "ext.command");
  EXPECT_EQ(ext["status"], "pass") << ext["summary"];
  EXPECT_EQ(ext["metrics"]["exit_code"], 0);
  EXPECT_EQ(ext["metrics"]["output_tail"], "step 1\nstep 2\n");
}

// A smoke command whose output is not UTF-8 still gets its report: the bad byte becomes U+FFFD
// (JSON cannot carry it; the validator used to end with exit 3 and no report).
TEST(ValidateWithSmokeCommand, OutputThatIsNotUtf8IsReportedWithReplacementCharacters) {
  testing::TempDir dir;
  fs::path project =
      TinyWith(dir.path(),
               "\n[ext.command]\nargv = [\"sh\", \"-c\", \"printf 'bad \\\\377 bytes\\\\n'\"]\n");
  fs::path out = dir.path() / "report.json";
  auto run = RunTrainlock({"validate", project.string(), "--out", out.string(), "--threads", "2"});
  ASSERT_TRUE(fs::exists(out)) << run.err;
  nlohmann::json report = nlohmann::json::parse(testing::ReadFile(out));
  EXPECT_EQ(run.exit_code, 0) << NotPassing(report) << run.err;
  const auto& ext = Check(report, "ext.command");
  EXPECT_EQ(ext["status"], "pass") << ext["summary"];
  EXPECT_EQ(ext["metrics"]["output_tail"], "bad \xEF\xBF\xBD bytes\n");
}

// A report signed by the validator clears the gate with the public key; the same file with
// one value changed does not.
TEST(ValidateSigned, SignedReportClearsTheGateAndATamperedOneDoesNot) {
  testing::TempDir dir;
  const std::string key = (dir.path() / "ci").string();
  ASSERT_EQ(RunTrainlock({"keygen", key}).exit_code, 0);
  const std::string tiny = (testing::SourceDir() / "examples/tiny").string();
  fs::path out = dir.path() / "report.json";
  auto run = RunTrainlock(
      {"validate", tiny, "--out", out.string(), "--threads", "2", "--sign", key + ".key"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  if (nlohmann::json::parse(testing::ReadFile(out))["validator"]["build"] != "cpu")
    GTEST_SKIP() << "a CUDA-built validator reports a cuda run; tiny's lock has only a cpu target";
  auto gate = RunTrainlock({"gate", out.string(), "--lock", tiny, "--key", key + ".pub"});
  EXPECT_EQ(gate.exit_code, 0) << gate.out << gate.err;

  std::string text = testing::ReadFile(out);
  const std::string was = "\"bitwise_equal\": true";
  text.replace(text.find(was), was.size(), "\"bitwise_equal\": false");
  testing::WriteFile(out, text);
  gate = RunTrainlock({"gate", out.string(), "--lock", tiny, "--key", key + ".pub"});
  EXPECT_EQ(gate.exit_code, 1);
  EXPECT_NE(gate.out.find("signature"), std::string::npos) << gate.out;
}

TEST(ValidateSigned, AKeyThatIsNotAPrivateKeyIsBadInputBeforeTheRun) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "bad.key", "-----BEGIN PRIVATE KEY-----\nnope\n");
  auto run =
      RunTrainlock({"validate", (testing::SourceDir() / "examples/tiny").string(), "--out",
                    (dir.path() / "r.json").string(), "--sign", (dir.path() / "bad.key").string()});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("bad.key: error: not a PEM private key"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(dir.path() / "r.json"));
}

// Verification at the point of use (support/pinned_files.h): a pinned file changed after
// locking fails the check whose worker read it, naming the file and both hashes, whether or
// not --only selects the data checks that would have hashed it too.

// The runs each case makes: the full set of checks, and only the training checks.
const std::vector<std::vector<std::string>> kWithAndWithoutOnly = {
    {}, {"--only", "train.step,train.roundtrip"}};

// `file` with its byte at `at` replaced by `byte`; returns the new SHA-256.
std::string Plant(const fs::path& file, size_t at, char byte) {
  std::string bytes = testing::ReadFile(file);
  bytes[at] = byte;
  testing::WriteFile(file, bytes);
  return Sha256Hex(bytes);
}

// Validates `project` with `extra`; the report, after asserting that one was written.
nlohmann::json ValidateProject(const fs::path& project, const std::vector<std::string>& extra,
                               int* exit_code) {
  const fs::path out = project.parent_path() / "report.json";
  fs::remove(out);
  std::vector<std::string> args = {"validate",   project.string(), "--out",
                                   out.string(), "--threads",      "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = RunTrainlock(args);
  *exit_code = r.exit_code;
  EXPECT_TRUE(fs::exists(out)) << r.err;
  return fs::exists(out) ? nlohmann::json::parse(testing::ReadFile(out)) : nlohmann::json();
}

// train.step and train.roundtrip of `report` failed, each summary holding every one of `texts`.
void ExpectTrainingFailed(const nlohmann::json& report, const std::vector<std::string>& texts) {
  for (const char* id : {"train.step", "train.roundtrip"}) {
    const auto& check = Check(report, id);
    EXPECT_EQ(check["status"], "fail") << id << check;
    for (const std::string& text : texts)
      EXPECT_NE(check.value("summary", "").find(text), std::string::npos) << id << check;
  }
}

// Validates `project` with and without --only: exit 1 each time, `expect` run on each report.
void ForEachFailingValidation(const fs::path& project,
                              const std::function<void(const nlohmann::json&)>& expect) {
  for (const auto& extra : kWithAndWithoutOnly) {
    int exit_code = 0;
    const nlohmann::json report = ValidateProject(project, extra, &exit_code);
    EXPECT_EQ(exit_code, 1) << extra.size();
    expect(report);
  }
}

// train.step fails naming the file (ending in `file`) and both hashes, train.roundtrip fails too,
// exit 1.
void ExpectTrainingRefuses(const fs::path& project, const std::string& file,
                           const std::string& pinned, const std::string& planted) {
  ForEachFailingValidation(project, [&](const nlohmann::json& report) {
    ExpectTrainingFailed(report, {file + ": sha256 " + planted, "the lock's sha256 " + pinned});
    bool measured = false;
    for (const auto& row :
         Check(report, "train.step")["metrics"].value("artifacts", nlohmann::json::array()))
      measured |= row.value("sha256", "") == planted && row.value("verified_by", "") == "worker";
    EXPECT_TRUE(measured) << "train.step's artifacts record the measured sha256";
    EXPECT_EQ(ReportSchemaViolations(report), std::vector<std::string>{});
  });
}

// The worker reads the run from the engine spec the coordinator wrote (from the config it
// verified against the lock), verifies the spec's bytes and records them.
TEST_F(ValidateTiny, TrainStepRecordsTheSpecItsWorkerVerified) {
  const auto& rows = Check(pass().report, "train.step")["metrics"]["artifacts"];
  ASSERT_TRUE(rows.is_array()) << Check(pass().report, "train.step");
  ASSERT_EQ(rows.size(), 1u) << rows;
  EXPECT_TRUE(rows[0]["path"].get<std::string>().ends_with("engine-spec.json")) << rows;
  EXPECT_TRUE(IsSha256Hex(rows[0]["sha256"].get<std::string>())) << rows;
  EXPECT_EQ(rows[0]["verified_by"], "worker");
  EXPECT_GT(rows[0]["bytes"].get<int64_t>(), 0);
}

TEST(VerifyAtPointOfUse, ADatasetShardChangedAfterLockingFailsTraining) {
  testing::TempDir dir;
  const fs::path project = LockedTinyWithShard(dir.path());
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::string shard = SampleShard();
  const std::string pinned = Sha256Hex(shard);
  const std::string planted = Plant(project / "data/a.bin", 6, 0);  // still a token in vocab
  ExpectTrainingRefuses(project, "/a.bin", pinned, planted);
}

// train.step and train.roundtrip fail naming `text`, exit 1, with and without --only: the run
// never trains something else in place of what the lock pins.
void ExpectTrainingFailsNaming(const fs::path& project, const std::string& text) {
  ForEachFailingValidation(
      project, [&](const nlohmann::json& report) { ExpectTrainingFailed(report, {text}); });
}

TEST(VerifyAtPointOfUse, APinnedDatasetShardMissingOnTheNodeFailsTraining) {
  testing::TempDir dir;
  const fs::path project = LockedTinyWithShard(dir.path());
  ASSERT_FALSE(::testing::Test::HasFailure());
  fs::remove(project / "data/a.bin");
  ExpectTrainingFailsNaming(project, "a.bin");
}

// tiny with a local model of seeded weights (model/model.safetensors) pinned by its lock; the
// project, and the weights' pinned sha256 and size.
struct TinyWithWeights {
  fs::path project;
  std::string sha256;
  uint64_t size = 0;
};
TinyWithWeights LockedTinyWithWeights(const fs::path& dir) {
  fs::path staging = dir / "staging";
  testing::CopyExample("tiny", (fs::create_directories(staging), staging));
  const ModelConfig c = LoadProject(staging, ManifestRequirement::kOptional).config.model;
  validate::Llama model(c);
  std::vector<validate::NamedTensor> tensors;
  for (auto& item : model->named_parameters())
    tensors.push_back({item.key(), item.value().detach().clone()});
  const fs::path model_dir = dir / "model";
  fs::create_directories(model_dir);
  validate::WriteSafetensors(model_dir / "model.safetensors", tensors);
  TinyWithWeights t;
  t.sha256 = Sha256FileHex(model_dir / "model.safetensors", &t.size);
  const std::string model_table = "\n[model]\nsource = \"local\"\npath = \"model\"\n";
  t.project = TinyWith(dir, model_table + "files = [\"model.safetensors\"]\n", "",
                       model_table + "[[model.files]]\npath = \"model.safetensors\"\nsha256 = \"" +
                           t.sha256 + "\"\nsize = " + std::to_string(t.size) + "\n");
  fs::copy(model_dir, t.project / "model", fs::copy_options::recursive);
  return t;
}

// A model's weights changed after locking (a byte of tensor data: still a valid file).
TEST(VerifyAtPointOfUse, AModelWeightFileChangedAfterLockingFailsTraining) {
  testing::TempDir dir;
  const TinyWithWeights t = LockedTinyWithWeights(dir.path());
  const fs::path weights = t.project / "model/model.safetensors";
  const std::string planted = Plant(weights, static_cast<size_t>(t.size) - 2, 0x11);
  ExpectTrainingRefuses(t.project, "/model.safetensors", t.sha256, planted);
}

// Missing weights were a seeded model trained in their place, and a pass.
TEST(VerifyAtPointOfUse, APinnedWeightFileMissingOnTheNodeFailsTraining) {
  testing::TempDir dir;
  const TinyWithWeights t = LockedTinyWithWeights(dir.path());
  fs::remove(t.project / "model/model.safetensors");
  ExpectTrainingFailsNaming(t.project, "model.safetensors: pinned by the lock, not on this node");
}

// examples/tiny's engine spec for one step, written under `dir` as the coordinator writes it;
// returns the project, the spec and the spec's sha256.
struct TinySpec {
  fs::path project, spec;
  std::string sha256;
};
TinySpec WriteTinySpec(const fs::path& dir) {
  TinySpec t{dir / "tiny", dir / "engine-spec.json", ""};
  fs::create_directories(t.project);
  testing::CopyExample("tiny", t.project);
  t.sha256 = testing::WriteEngineSpec(t.project, 1, t.spec);
  return t;
}

// The training worker, run as the coordinator runs it, for one step of `t`'s spec; what it said
// on stdout, folded as the coordinator folds it, in *said.
testing::RunResult TrainOneStep(const fs::path& dir, const TinySpec& t,
                                const std::vector<std::string>& more, validate::EngineFold* said) {
  std::vector<std::string> args = {"worker",
                                   "--spec",
                                   t.spec.string(),
                                   "--spec-sha256",
                                   t.sha256,
                                   "--checkpoint-root",
                                   (dir / "ckpt").string(),
                                   "--steps",
                                   "1",
                                   "--threads",
                                   "2",
                                   "--device",
                                   "cpu"};
  args.insert(args.end(), more.begin(), more.end());
  testing::RunResult r = testing::RunProgram("trainlock-validate", args);
  validate::EngineTranscript transcript;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) transcript.Add(line);
  *said = transcript.result();
  return r;
}

// The engine spec changed between the coordinator's writing it and the worker's reading it:
// the worker refuses it naming both hashes, and trains nothing.
TEST(VerifyAtPointOfUse, AnEngineSpecChangedAfterTheCoordinatorWroteItFailsTheTrainingWorker) {
  testing::TempDir dir;
  const TinySpec t = WriteTinySpec(dir.path());
  testing::WriteFile(t.spec, testing::ReadFile(t.spec) + " ");
  const std::string planted = Sha256Hex(testing::ReadFile(t.spec));
  validate::EngineFold said;
  const testing::RunResult r = TrainOneStep(dir.path(), t, {}, &said);
  EXPECT_EQ(r.exit_code, 5) << r.err;  // kWorkerTrainingFailed: train.step fails
  ASSERT_TRUE(said.error) << r.out;
  EXPECT_EQ(said.error->kind, "integrity") << r.out;
  const std::string message = said.error->message.value_or("");
  EXPECT_NE(message.find("engine-spec.json: sha256 " + planted), std::string::npos) << message;
  EXPECT_NE(message.find("the coordinator's sha256 " + t.sha256), std::string::npos) << message;
  EXPECT_TRUE(said.losses.empty()) << r.out;
}

// The train role speaks the engine protocol on stdout and nothing else: a result file (which
// only the node and ops roles write) is refused as a usage error, before any work.
TEST(NativeWorker, TheTrainRoleRefusesAResultFile) {
  testing::TempDir dir;
  const TinySpec t = WriteTinySpec(dir.path());
  const fs::path result = dir.path() / "a.json";
  validate::EngineFold said;
  const testing::RunResult r = TrainOneStep(dir.path(), t, {"--result", result.string()}, &said);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--result is not an option of the train role"), std::string::npos) << r.err;
  EXPECT_TRUE(said.losses.empty()) << r.out;
  EXPECT_FALSE(fs::exists(result));
}

// The worker trains from the spec alone: a project it could read is not there to read.
TEST(VerifyAtPointOfUse, TheTrainingWorkerNeedsNoProject) {
  testing::TempDir dir;
  const TinySpec t = WriteTinySpec(dir.path());
  fs::remove_all(t.project);
  validate::EngineFold said;
  const testing::RunResult r = TrainOneStep(dir.path(), t, {}, &said);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(said.losses.size(), 1u) << r.out;
  EXPECT_TRUE(said.done) << r.out;
}

// A prebuilt op library replaced after locking: ops.custom fails before loading it.
TEST(VerifyAtPointOfUse, ACustomOpLibraryChangedAfterLockingFailsOpsCustom) {
  testing::TempDir dir;
  const fs::path built = fs::path(TRAINLOCK_OPS_DIR) / "libtrainlock_ops.so";
  const std::string pinned = Sha256FileHex(built);
  const std::string ops =
      "\n[[custom-ops]]\nlibrary = \"ops/libtrainlock_ops.so\"\n"
      "ops = [\"trainlock_ops::fused_rmsnorm\"]\n";
  const std::string lock_ops = ops + "sha256 = \"" + pinned + "\"\n";
  const fs::path project = TinyWith(dir.path(), ops, "", lock_ops);
  fs::create_directories(project / "ops");
  testing::WriteFile(project / "ops/libtrainlock_ops.so", testing::ReadFile(built) + "x");
  const std::string planted = Sha256FileHex(project / "ops/libtrainlock_ops.so");
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--only", "ops.custom"}, std::vector<std::string>{}}) {
    int exit_code = 0;
    const nlohmann::json report = ValidateProject(project, extra, &exit_code);
    EXPECT_EQ(exit_code, 1);
    const auto& check = Check(report, "ops.custom");
    EXPECT_EQ(check["status"], "fail") << check;
    const std::string summary = check.value("summary", "");
    EXPECT_NE(summary.find("library_changed: "), std::string::npos) << summary;
    EXPECT_NE(summary.find("sha256 " + planted), std::string::npos) << summary;
    EXPECT_NE(summary.find("the lock's sha256 " + pinned), std::string::npos) << summary;
    EXPECT_EQ(check["metrics"]["artifacts"][0]["sha256"], planted) << check;
  }
}

}  // namespace
}  // namespace trainlock
