// trainlock validate with a Python engine (`[validate] engine`, docs/validate.md "Engines"):
// the coordinator drives the shipped ddp engine through the engine protocol on examples/tiny's
// shape (Debian's python3-torch), with the same round trip, comparisons and negative controls
// as the native engine; the engine's files are verified against the lock's pin first, and what
// an engine cannot do is refused before any work.
#include <gtest/gtest.h>

#include <algorithm>

#include "image/image_record.h"
#include "image/in_image_paths.h"
#include "project/project.h"
#include "project/round_trip_engines.h"
#include "report/report.h"
#include "test_support.h"
#include "validator/report_checks.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

// The Python with torch: Debian's, whatever `python3` is first on PATH.
constexpr const char* kTorchPython = "/usr/bin/python3";

// The project's manifest names `engine` and its lock is what `trainlock lock` makes of it
// (pinning this trainlock's engine files); then the lock's pin is `engine_sha256`, when that is
// another, as a lock made by another trainlock pins other engine files (the validator takes
// the pin from the lock and verifies the files it runs against it).
void PinEngine(const fs::path& project, const std::string& engine,
               const std::string& engine_sha256) {
  std::string manifest = testing::ReadFile(project / "trainlock.toml");
  const std::string table = "[validate]\n";
  manifest.insert(manifest.find(table) + table.size(), "engine = \"" + engine + "\"\n");
  testing::WriteFile(project / "trainlock.toml", manifest);
  const auto locked = testing::RunProgram("trainlock", {"lock", project.string(), "--offline"});
  ASSERT_EQ(locked.exit_code, 0) << locked.err;
  if (engine_sha256 == PythonEngineSha256()) return;
  std::string lock = testing::ReadFile(project / "trainlock.lock");
  const size_t at = lock.find(PythonEngineSha256());
  ASSERT_NE(at, std::string::npos) << lock;
  testing::WriteFile(project / "trainlock.lock", lock.replace(at, 64, engine_sha256));
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
  return testing::ReportCheck(report, id);
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
// before it) but released only once that one has ended (the saving process B is the
// uninterrupted reference, so there is no A); C and D are spawned only after B's
// save began, so their imports do not share the host with the save's staging.
TEST_F(ValidateDdpEngine, EachProcessIsReleasedAfterTheOneItFollowsEnded) {
  const auto& processes = CheckOf(pass().report, "train.roundtrip")["metrics"]["processes"];
  ASSERT_TRUE(processes.is_object()) << processes.dump();
  const auto times = [&](const char* name, const char* what) {
    return processes.at(name).at(what).get<double>();
  };
  EXPECT_FALSE(processes.contains("a-uninterrupted")) << "the saving process is the reference";
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

// Outside an image, a torch whose library the loader cannot open is the interpreter's, not the
// node's: not judged, exit 3, as a module it lacks (inside a locked image it is a broken image:
// env.packages fails naming the file, Preflight.*).
TEST(ValidateEngineEnvironment, OutsideAnImageATorchWhoseLibraryDoesNotLoadIsStillNotJudged) {
  testing::TempDir dir;
  const std::string why =
      "libtorch_cpu.so: cannot open shared object file: No such file or directory";
  const std::string python = StandInPython(
      dir.path(), R"({"versions": {}, "missing": "torch", "reason": ")" + why + R"("})");
  EngineValidation v = ValidateWithEngine("ddp", {"--python", python});
  ExpectNotJudged(v, "engine ddp: " + python + " cannot import torch (" + why +
                         "): install torch in that interpreter or pass --python PATH");
}

// The probe's reason is the interpreter's words (untrusted): the not-runnable error on the
// terminal is escaped and masked as report.json's copy is (issue #61).
TEST(ValidateEngineEnvironment, TheNotRunnableErrorIsShownEscapedAndMaskedOnTheTerminal) {
  testing::TempDir dir;
  const std::string token = "hf_" + std::string(34, 'T');
  const std::string python = StandInPython(
      dir.path(), R"({"versions": {}, "missing": "torch", "reason": "No module named )"
                  R"(\u001b]0;pwned\u0007\nforged line )" +
                      token + R"("})");
  EngineValidation v = ValidateWithEngine("ddp", {"--python", python});
  EXPECT_EQ(v.run.exit_code, 3) << v.run.out << v.run.err;
  const std::string error = v.report.value("environment_error", "");
  EXPECT_EQ(error.find(token), std::string::npos) << error;
  EXPECT_NE(error.find("hf_***"), std::string::npos) << error;
  const std::string terminal = v.run.out + v.run.err;
  EXPECT_EQ(terminal.find(token), std::string::npos) << terminal;
  EXPECT_EQ(terminal.find('\x1b'), std::string::npos) << terminal;
  EXPECT_EQ(terminal.find("\nforged line"), std::string::npos) << terminal;
  EXPECT_NE(v.run.err.find("trainlock-validate: error: engine ddp: " + python +
                           " cannot import torch (No module named \\x1b]0;pwned\\x07\\x0aforged "
                           "line hf_***)"),
            std::string::npos)
      << v.run.err;
}

// Enters a simulated image and runs the rest of its arguments there: in a new user and mount
// namespace, /etc and /opt become views of the real ones (a link per entry) in which
// /etc/trainlock is DIR/image-etc and /opt/venv/bin/python3 is DIR/python. Exits 97 when the
// namespace cannot be set up here.
constexpr const char* kEnterImage = R"SH(
dir=$1; shift
for d in etc opt; do
  mkdir "$dir/real-$d" "$dir/view-$d" || exit 97
  mount --bind "/$d" "$dir/real-$d" || exit 97
  for f in "$dir/real-$d"/* "$dir/real-$d"/.[!.]*; do
    if [ -e "$f" ] || [ -L "$f" ]; then ln -s "$f" "$dir/view-$d/${f##*/}"; fi
  done
done
rm -f "$dir/view-etc/trainlock" "$dir/view-opt/venv"
ln -s "$dir/image-etc" "$dir/view-etc/trainlock"
mkdir -p "$dir/view-opt/venv/bin" && cp "$dir/python" "$dir/view-opt/venv/bin/python3" || exit 97
mount --bind "$dir/view-etc" /etc && mount --bind "$dir/view-opt" /opt || exit 97
# The build's record of the image's Python (python-files.json), as the image build writes it.
"$1" record-python-files >/dev/null || exit 96
exec "$@"
)SH";

// Inside a locked image (its image.json bound to the project), the image's own interpreter that
// cannot import torch is a broken image, not a setup to fix: env.packages fails naming the
// library the loader could not open, the round trip is skipped naming env.packages, exit 1.
TEST(ValidateEngineEnvironment, InALockedImageATorchWhoseLibraryDoesNotLoadFailsEnvPackages) {
  if (!testing::HaveProgram("unshare")) GTEST_SKIP() << "no unshare";
  testing::TempDir dir;
  const fs::path etc = EngineProject(dir.path(), "ddp", PythonEngineSha256());
  fs::rename(etc, dir.path() / "image-etc");
  const Project baked = LoadProject(dir.path() / "image-etc", ManifestRequirement::kOptional);
  ImageRecord record;
  record.target = "cpu";
  record.lock_sha256 = baked.lock->lock_build_sha256;
  record.config_sha256 = baked.config_sha256;
  record.base = "127.0.0.1:5000/base@sha256:" + std::string(64, '1');
  testing::WriteFile(dir.path() / "image-etc" / "image.json", record.ToJson().dump(2) + "\n");
  const std::string why =
      "libtorch_cpu.so: cannot open shared object file: No such file or directory";
  // The stand-in answers the build's question for its path (none) and the probe's.
  testing::WriteFile(dir.path() / "python",
                     "#!/bin/sh\ncase \"$*\" in *--print-sys-path*) echo '[]'; exit 0;; esac\n"
                     "echo 'trainlock-engine-probe {\"versions\": {}, \"missing\": \"torch\", "
                     "\"reason\": \"" +
                         why + "\"}'\n");
  fs::permissions(dir.path() / "python", fs::perms::owner_all);
  testing::WriteFile(dir.path() / "enter-image.sh", kEnterImage);
  const fs::path out = dir.path() / "out" / "report.json";
  const testing::RunResult run =
      testing::RunCommand({"unshare", "--user", "--map-root-user", "--mount", "sh",
                           (dir.path() / "enter-image.sh").string(), dir.path().string(),
                           (testing::BinDir() / "trainlock-validate").string(), kProjectInImage,
                           "--out", out.string(), "--threads", "2"},
                          {"TMPDIR=" + dir.path().string()});
  if (run.exit_code == 97 || (run.exit_code == 1 && !fs::exists(out)))
    GTEST_SKIP() << "no user and mount namespace here: " << run.err;
  ASSERT_NE(run.exit_code, 96) << "record-python-files: " << run.out << run.err;
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  const nlohmann::json report = nlohmann::json::parse(testing::ReadFile(out));
  EXPECT_EQ(report["verdict"], "fail") << report.dump(2);
  EXPECT_FALSE(report.contains("environment_error"));
  const auto& packages = CheckOf(report, "env.packages");
  EXPECT_EQ(packages["status"], "fail");
  EXPECT_EQ(packages["summary"],
            "the image's Python (" + std::string(kPythonInImage) +
                ") cannot import torch, which the lock installs in it: " + why);
  EXPECT_EQ(packages["remedy"].get<std::string>().find("the image is broken at libtorch_cpu.so"),
            0u)
      << packages.dump();
  for (const char* id : {"train.step", "train.roundtrip", "train.eval", "ckpt.portable"}) {
    EXPECT_EQ(CheckOf(report, id)["status"], "skip") << id;
    EXPECT_NE(CheckOf(report, id)["summary"].get<std::string>().find("env.packages failed"),
              std::string::npos)
        << CheckOf(report, id).dump();
  }
  // The node's other checks ran (tiny pins no model files: data.model says so, not "not run").
  EXPECT_EQ(CheckOf(report, "data.model")["summary"].get<std::string>().rfind("the lock pins", 0),
            0u);
  EXPECT_EQ(ReportSchemaViolations(report), std::vector<std::string>{});
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
