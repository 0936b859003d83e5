// Every shell script the project ships or generates passes Debian's shellcheck (ci/deps.sh
// installs it) at its default severity, with no exclusions: every script of the repository,
// found by its extension or its shebang among the files git tracks (ci/, examples/, bench/,
// tests/, .ci/, wherever one is added), and what `trainlock fleet slurm` (the batch script and
// the --prolog node gate) and `trainlock fleet k8s` (every container's `/bin/sh -c` script, the
// --label-nodes job included, and the --npd-plugin) write.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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

// The program a shebang line runs: its first word, or the word after `env` ("" for none).
std::string ShebangProgram(const std::string& first_line) {
  if (!first_line.starts_with("#!")) return "";
  std::vector<std::string> words;
  size_t at = 2;
  while (at < first_line.size()) {
    const size_t begin = first_line.find_first_not_of(" \t", at);
    if (begin == std::string::npos) break;
    const size_t stop = first_line.find_first_of(" \t", begin);
    words.push_back(first_line.substr(begin, stop - begin));
    at = stop == std::string::npos ? first_line.size() : stop;
  }
  if (words.empty()) return "";
  std::string program = fs::path(words[0]).filename().string();
  if (program == "env") {
    const auto arg = std::find_if(words.begin() + 1, words.end(),
                                  [](const std::string& w) { return !w.starts_with("-"); });
    program = arg == words.end() ? "" : fs::path(*arg).filename().string();
  }
  return program;
}

// A script by its name (.sh, .bash, .sbatch) or its first line (a shebang running sh, bash,
// dash or ksh, directly or through env).
bool IsShellScript(const fs::path& file) {
  const std::string ext = file.extension().string();
  if (ext == ".sh" || ext == ".bash" || ext == ".sbatch") return true;
  std::ifstream in(file);
  std::string first_line;
  std::getline(in, first_line);
  const std::string program = ShebangProgram(first_line);
  return program == "sh" || program == "bash" || program == "dash" || program == "ksh";
}

// Every file git tracks in the source tree (a link and a file deleted in the work tree left out).
std::vector<fs::path> TrackedFiles() {
  const RunResult r =
      testing::RunCommand({"git", "-C", SourceDir().string(), "ls-files", "-z", "--cached"});
  EXPECT_EQ(r.exit_code, 0) << "git ls-files in " << SourceDir() << ": " << r.err;
  std::vector<fs::path> out;
  for (size_t at = 0; at < r.out.size();) {
    size_t end = r.out.find('\0', at);
    if (end == std::string::npos) end = r.out.size();
    const fs::path file = SourceDir() / r.out.substr(at, end - at);
    if (!fs::is_symlink(file) && fs::is_regular_file(file)) out.push_back(file);
    at = end + 1;
  }
  return out;
}

std::vector<fs::path> RepositoryScripts() {
  std::vector<fs::path> out;
  for (const fs::path& file : TrackedFiles()) {
    if (IsShellScript(file)) out.push_back(file);
  }
  return out;
}

bool Lists(const std::vector<fs::path>& files, const std::string& relative) {
  return std::find(files.begin(), files.end(), SourceDir() / relative) != files.end();
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

TEST_F(Shellcheck, FindsNothingInAnyScriptOfTheRepository) {
  if (!testing::HaveProgram("git")) GTEST_SKIP() << "git missing: the scripts are git's files";
  const std::vector<fs::path> scripts = RepositoryScripts();
  for (const fs::path& script : scripts) {
    const RunResult r = ShellcheckFile(script);
    EXPECT_EQ(r.exit_code, 0) << fs::relative(script, SourceDir()) << ":\n" << FindingsOf(r);
  }
  EXPECT_GE(scripts.size(), 17u);  // ci's, examples', bench's, tests', .ci/run
}

// The finder reaches past ci/ and examples/, and knows a script by its shebang alone.
TEST_F(Shellcheck, TheScriptsAreFoundWhereverTheyAreAndByTheirShebang) {
  if (!testing::HaveProgram("git")) GTEST_SKIP() << "git missing: the scripts are git's files";
  const std::vector<fs::path> scripts = RepositoryScripts();
  for (const char* script : {"bench/fuzz_campaign.sh", "tests/fuzz/run_fuzz.sh", ".ci/run",
                             "examples/fleet/validate.sbatch"}) {
    EXPECT_TRUE(Lists(scripts, script)) << script;
  }
  EXPECT_FALSE(Lists(scripts, "bench/compare_hf.py"));  // a shebang, but Python's
  EXPECT_EQ(ShebangProgram("#!/usr/bin/env -S bash -e"), "bash");
  EXPECT_EQ(ShebangProgram("#! /bin/sh -eu"), "sh");
  EXPECT_EQ(ShebangProgram("#!/usr/bin/env python3"), "python3");
  EXPECT_EQ(ShebangProgram("# no shebang"), "");
}

TEST_F(Shellcheck, FindsNothingInTheGeneratedSlurmScripts) {
  const std::vector<fs::path> scripts = {
      Generate("slurm", "validate.sbatch", {"--nodes", "4", "--partition", "gpu"}),
      Generate("slurm", "node-gate.sh",
               {"--prolog", "--key", "/shared/fleet.pub", "--reports-dir", "/shared/reports",
                "--node-lock", "/shared/trainlock.lock"}),
      Generate("slurm", "report-only-gate.sh",
               {"--prolog", "--key", "/shared/fleet.pub", "--reports-dir", "/shared/reports",
                "--report-only"})};
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
  const std::vector<fs::path> report_only = ContainerScripts(
      Generate("k8s", "report-only.yaml",
               {"--nodes", "4", "--label-nodes", "--report-only", "--kubectl-image", kKubectlImage,
                "--keys-secret", "trainlock-keys"}));
  scripts.insert(scripts.end(), report_only.begin(), report_only.end());
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
