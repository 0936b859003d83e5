// Specification of examples/ci/github-actions.yml, the GitHub Actions workflow a project copies:
// it parses as YAML, is not active for this repository, and has the steps docs/fleet.md
// promises (lock --check, the image build, validation on a self-hosted GPU runner, the
// markdown report on the step summary, the JUnit XML uploaded, the gate).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <string>

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

TEST(CiWorkflow, ParsesAsAWorkflowWithTwoJobs) {
  YAML::Node workflow = Workflow();
  EXPECT_EQ(workflow["name"].as<std::string>(), "trainlock");
  EXPECT_TRUE(workflow["on"]["pull_request"].IsDefined());
  EXPECT_TRUE(workflow["jobs"]["lock"].IsMap());
  EXPECT_TRUE(workflow["jobs"]["validate"].IsMap());
  EXPECT_EQ(workflow["jobs"]["validate"]["needs"].as<std::string>(), "lock");
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

}  // namespace
}  // namespace trainlock
