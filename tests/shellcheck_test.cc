// Every shell script the project ships or generates passes Debian's shellcheck (ci/deps.sh
// installs it) at its default severity, with no exclusions: ci/*.sh, every script under
// examples/ (by extension or shebang), and what `trainlock fleet slurm` (the batch script and
// the --prolog node gate) and `trainlock fleet k8s` (every container's `/bin/sh -c` script, the
// --label-nodes job included, and the --npd-plugin) write.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <string>
#include <vector>

#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::RunResult;
using testing::SourceDir;

const std::string kPinnedImage =
    "registry.example/h200-pilot@sha256:"
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const std::string kKubectlImage =
    "registry.example/kubectl@sha256:"
    "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

// shellcheck on a file, the shell taken from its shebang unless `shell` names one.
RunResult ShellcheckFile(const fs::path& file, const std::string& shell = {}) {
  std::vector<std::string> argv = {"shellcheck", "--norc", "--format=gcc"};
  if (!shell.empty()) argv.push_back("--shell=" + shell);
  argv.push_back(file.string());
  return testing::RunCommand(argv);
}

std::string FindingsOf(const RunResult& r) {
  return r.out + r.err;
}

// A script by its name (.sh, .sbatch) or its first line (a shebang naming sh, bash or dash).
bool IsShellScript(const fs::path& file) {
  if (file.extension() == ".sh" || file.extension() == ".sbatch") return true;
  const std::string text = testing::ReadFile(file);
  const std::string first = text.substr(0, text.find('\n'));
  if (!first.starts_with("#!")) return false;
  return first.ends_with("/sh") || first.ends_with("bash") || first.ends_with("/dash");
}

std::vector<fs::path> ShippedScripts() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(SourceDir() / "ci")) {
    if (e.is_regular_file() && e.path().extension() == ".sh") out.push_back(e.path());
  }
  for (const auto& e : fs::recursive_directory_iterator(SourceDir() / "examples")) {
    if (e.is_regular_file() && IsShellScript(e.path())) out.push_back(e.path());
  }
  return out;
}

class Shellcheck : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::HaveProgram("shellcheck")) GTEST_SKIP() << "shellcheck missing: ci/deps.sh";
  }

  // `trainlock fleet KIND examples/h200-pilot --image <pinned> ARGS... --out FILE`; FILE.
  fs::path Generate(const std::string& kind, const std::string& file,
                    const std::vector<std::string>& extra) {
    const fs::path out = tmp_.path() / file;
    std::vector<std::string> args = {
        "fleet",     kind,         (SourceDir() / "examples/h200-pilot").string(),
        "--image",   kPinnedImage, "--out",
        out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    const RunResult r = testing::RunTrainlock(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }

  // Every `/bin/sh -c SCRIPT` container's SCRIPT of a generated Kubernetes file, as files.
  std::vector<fs::path> ContainerScripts(const fs::path& yaml) {
    std::vector<fs::path> out;
    for (const YAML::Node& doc : YAML::LoadAllFromFile(yaml.string())) {
      if (!doc["spec"] || !doc["spec"]["template"] || !doc["spec"]["template"]["spec"]) continue;
      const YAML::Node pod = doc["spec"]["template"]["spec"];
      for (const char* list : {"initContainers", "containers"}) {
        if (!pod[list]) continue;
        for (const YAML::Node& c : pod[list]) {
          if (!c["command"] || c["command"][0].as<std::string>() != "/bin/sh") continue;
          const fs::path file =
              tmp_.path() / (yaml.stem().string() + "-" + c["name"].as<std::string>() + ".sh");
          testing::WriteFile(file, c["args"][0].as<std::string>());
          out.push_back(file);
        }
      }
    }
    return out;
  }

  testing::TempDir tmp_;
};

TEST_F(Shellcheck, FindsNothingInAnyScriptOfCiOrExamples) {
  const std::vector<fs::path> scripts = ShippedScripts();
  for (const fs::path& script : scripts) {
    const RunResult r = ShellcheckFile(script);
    EXPECT_EQ(r.exit_code, 0) << fs::relative(script, SourceDir()) << ":\n" << FindingsOf(r);
  }
  EXPECT_GE(scripts.size(), 8u);  // ci's six, examples/offline's two, examples/fleet's
}

TEST_F(Shellcheck, FindsNothingInTheGeneratedSlurmScripts) {
  const std::vector<fs::path> scripts = {
      Generate("slurm", "validate.sbatch", {"--nodes", "4", "--partition", "gpu"}),
      Generate("slurm", "node-gate.sh",
               {"--prolog", "--key", "/shared/fleet.pub", "--reports-dir", "/shared/reports",
                "--node-lock", "/shared/trainlock.lock"})};
  for (const fs::path& script : scripts) {
    const RunResult r = ShellcheckFile(script);
    EXPECT_EQ(r.exit_code, 0) << script.filename() << ":\n" << FindingsOf(r);
  }
}

TEST_F(Shellcheck, FindsNothingInTheGeneratedKubernetesScripts) {
  std::vector<fs::path> scripts = ContainerScripts(Generate("k8s", "job.yaml", {"--nodes", "4"}));
  const std::vector<fs::path> labelled =
      ContainerScripts(Generate("k8s", "labelled.yaml",
                                {"--nodes", "4", "--label-nodes", "--kubectl-image", kKubectlImage,
                                 "--keys-secret", "trainlock-keys"}));
  EXPECT_GE(labelled.size(), 2u);  // the validation and the labeller
  scripts.insert(scripts.end(), labelled.begin(), labelled.end());
  for (const fs::path& script : scripts) {
    const RunResult r = ShellcheckFile(script, "sh");
    EXPECT_EQ(r.exit_code, 0) << script.filename() << ":\n"
                              << testing::ReadFile(script) << "\n"
                              << FindingsOf(r);
  }
  const fs::path plugin = Generate("k8s", "npd-plugin.sh",
                                   {"--npd-plugin", "--key", "/etc/trainlock/fleet.pub",
                                    "--reports-dir", "/var/lib/trainlock/reports"});
  const RunResult r = ShellcheckFile(plugin);
  EXPECT_EQ(r.exit_code, 0) << FindingsOf(r);
}

// The planted faults: what ci/deps.sh and examples/offline/cpu_base.sh had.
TEST_F(Shellcheck, FlagsIteratingOverLsAndACommentReadAsADirective) {
  const fs::path ls_loop = tmp_.path() / "ls.sh";
  testing::WriteFile(ls_loop, "#!/bin/bash\nfor fd in $(ls /proc/$$/fd); do echo \"$fd\"; done\n");
  RunResult r = ShellcheckFile(ls_loop);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(FindingsOf(r).find("SC2045"), std::string::npos) << FindingsOf(r);
  const fs::path directive = tmp_.path() / "directive.sh";
  testing::WriteFile(directive,
                     "#!/bin/bash\nx=(\n  # shellcheck on the workflow's steps\n  a\n)\n"
                     "echo \"${x[@]}\"\n");
  r = ShellcheckFile(directive);
  EXPECT_NE(r.exit_code, 0) << FindingsOf(r);
}

}  // namespace
}  // namespace trainlock
