// What every `trainlock` command shares: a mistyped subcommand is answered with the closest
// one, `help [COMMAND]`, -V with the commit, options and global options in any position, and
// completion scripts generated from the command tree.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "test_support.h"

namespace trainlock {
namespace {

using testing::RunTrainlock;

TEST(CliConventions, AMistypedSubcommandSuggestsTheClosestOne) {
  auto r = RunTrainlock({"lcok", "."});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("trainlock: error: unknown command 'lcok'; did you mean 'lock'?"),
            std::string::npos)
      << r.err;
}

TEST(CliConventions, AMistypedNestedSubcommandSuggestsAmongItsSiblings) {
  auto r = RunTrainlock({"fleet", "slrum", "."});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("trainlock fleet: error: unknown command 'slrum'; did you mean 'slurm'?"),
            std::string::npos)
      << r.err;
}

TEST(CliConventions, HelpPrintsTheCommandList) {
  auto r = RunTrainlock({"help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("init"), std::string::npos);
  EXPECT_NE(r.out.find("completion"), std::string::npos);
}

TEST(CliConventions, HelpOfACommandIsThatCommandsHelp) {
  auto help = RunTrainlock({"help", "fleet", "k8s"});
  auto flag = RunTrainlock({"fleet", "k8s", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out, flag.out);
  EXPECT_NE(help.out.find("--nodes"), std::string::npos);
}

// `trainlock nosuch --help` is a usage error naming the word, never the top-level help.
TEST(CliConventions, HelpAfterAnUnknownCommandNamesItAndIsAUsageError) {
  auto r = RunTrainlock({"nosuch", "--help"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "trainlock: error: unknown command 'nosuch'\nrun `trainlock --help` for the list\n");
}

TEST(CliConventions, HelpAfterAMistypedNestedCommandSuggestsTheClosestOne) {
  auto r = RunTrainlock({"fleet", "slrum", "--help"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("trainlock fleet: error: unknown command 'slrum'; did you mean 'slurm'?"),
            std::string::npos)
      << r.err;
}

TEST(CliConventions, HelpOfAnUnknownCommandSuggestsOne) {
  auto r = RunTrainlock({"help", "gaet"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'gaet'; did you mean 'gate'?"), std::string::npos) << r.err;
}

// docs/DESIGN.md, "Exit codes", as they apply to a validation.
void ExpectEveryValidateExitCode(const std::string& help) {
  for (const char* code : {"0 pass", "1 fail", "2 bad input or usage", "3 the environment failed",
                           "128+N stopped by signal N"})
    EXPECT_NE(help.find(code), std::string::npos) << code << " in\n" << help;
}

TEST(CliConventions, ValidateHelpListsEveryExitCodeOfAValidation) {
  auto r = RunTrainlock({"validate", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ExpectEveryValidateExitCode(r.out);
}

TEST(CliConventions, TheValidatorsHelpListsEveryExitCodeOfAValidation) {
  if (!std::filesystem::exists(testing::BinDir() / "trainlock-validate"))
    GTEST_SKIP() << "trainlock-validate is not built (no LibTorch)";
  auto r = testing::RunProgram("trainlock-validate", {"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ExpectEveryValidateExitCode(r.out);
}

TEST(CliConventions, VersionNamesTheVersionAndACommitOfThisRepository) {
  for (const char* flag : {"-V", "--version"}) {
    auto r = RunTrainlock({flag});
    EXPECT_EQ(r.exit_code, 0);
    std::smatch m;
    ASSERT_TRUE(std::regex_match(
        r.out, m, std::regex(R"(trainlock \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}|unknown)\)\n)")))
        << r.out;
    if (m[1] != "unknown") {
      auto known = testing::RunCommand(
          {"git", "-C", testing::SourceDir().string(), "cat-file", "-e", m[1].str() + "^{commit}"});
      EXPECT_EQ(known.exit_code, 0) << m[1] << " is no commit of " << testing::SourceDir();
    }
  }
}

TEST(CliConventions, OptionsMayComeBeforeOrAfterThePositional) {
  const std::string dir = (testing::SourceDir() / "examples/tiny").string();
  auto after = RunTrainlock({"hash", dir, "--json"});
  auto before = RunTrainlock({"hash", "--json", dir});
  EXPECT_EQ(after.exit_code, 0);
  EXPECT_EQ(after.out, before.out);
}

TEST(CliConventions, GlobalOptionsMayFollowTheSubcommand) {
  const std::string dir = (testing::SourceDir() / "examples/tiny").string();
  auto r = RunTrainlock({"check", dir, "--catalog", "/nonexistent/catalog"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("/nonexistent/catalog"), std::string::npos) << r.err;
  auto quiet = RunTrainlock({"check", dir, "-q"});
  EXPECT_EQ(quiet.exit_code, 0) << quiet.err;
}

// Runs the generated bash completion for the words typed so far (the last one being
// completed) and returns what it offers, one per line; in `cwd` when given.
std::string BashCompletes(const std::string& script, const std::string& words,
                          const std::filesystem::path& cwd = {}) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "c.bash", script);
  const std::string program = (cwd.empty() ? "" : "cd '" + cwd.string() + "'; ") + "source " +
                              (dir.path() / "c.bash").string() + "; COMP_WORDS=(" + words +
                              "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1));"
                              " _trainlock; printf '%s\\n' \"${COMPREPLY[@]}\"";
  return testing::RunCommand({"bash", "-c", program}).out;
}

TEST(CliConventions, BashCompletionOffersSubcommandsAndTheirOptions) {
  auto r = RunTrainlock({"completion", "bash"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(BashCompletes(r.out, "trainlock lo"), "lock\n");
  EXPECT_EQ(BashCompletes(r.out, "trainlock fleet s"), "slurm\nsummarize\n");
  EXPECT_EQ(BashCompletes(r.out, "trainlock lock . --ch"), "--check\n");
  EXPECT_EQ(BashCompletes(r.out, "trainlock init --fr"), "--from-hub\n");
}

TEST(CliConventions, BashCompletionOffersTheValidatorsOptionsAfterValidate) {
  auto r = RunTrainlock({"completion", "bash"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(BashCompletes(r.out, "trainlock validate . --checkp"), "--checkpoint-dir\n");
  EXPECT_EQ(BashCompletes(r.out, "trainlock validate . --negative"), "--negative-control\n");
}

TEST(CliConventions, BashCompletionOffersTheValuesOfAnOptionThatTakesOneOfASet) {
  auto r = RunTrainlock({"completion", "bash"});
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(BashCompletes(r.out, "trainlock report --format ''"),
            "text\nmarkdown\nhtml\njunit\nintoto\n");
  EXPECT_EQ(BashCompletes(r.out, "trainlock report . --color a"), "auto\nalways\n");
  EXPECT_EQ(BashCompletes(r.out, "trainlock validate . --device c"), "cpu\ncuda\n");
}

TEST(CliConventions, BashCompletionOffersFilesAfterAnOptionThatTakesAPath) {
  auto r = RunTrainlock({"completion", "bash"});
  ASSERT_EQ(r.exit_code, 0);
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "lock.json", "");
  EXPECT_EQ(BashCompletes(r.out, "trainlock gate --lock lo", dir.path()), "lock.json\n");
  EXPECT_EQ(BashCompletes(r.out, "trainlock gate --json lo", dir.path()), "lock.json\n");
}

TEST(CliConventions, BashCompletionKeepsAFileNameWithSpacesOneCandidate) {
  auto r = RunTrainlock({"completion", "bash"});
  ASSERT_EQ(r.exit_code, 0);
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "my report.json", "");
  EXPECT_EQ(BashCompletes(r.out, "trainlock report my", dir.path()), "my report.json\n");
  EXPECT_EQ(BashCompletes(r.out, "trainlock report --out my", dir.path()), "my report.json\n");
}

TEST(CliConventions, ZshAndFishCompletionsAreScriptsTheirShellsAccept) {
  auto zsh = RunTrainlock({"completion", "zsh"});
  ASSERT_EQ(zsh.exit_code, 0);
  EXPECT_NE(zsh.out.find("bashcompinit"), std::string::npos);
  auto fish = RunTrainlock({"completion", "fish"});
  ASSERT_EQ(fish.exit_code, 0);
  EXPECT_NE(fish.out.find("complete -c trainlock -n '__fish_use_subcommand' -a init"),
            std::string::npos);
  EXPECT_NE(fish.out.find("-n '__fish_seen_subcommand_from lock' -l check"), std::string::npos)
      << fish.out;
  for (const auto& [shell, script] : {std::pair{"zsh", zsh.out}, std::pair{"fish", fish.out}}) {
    if (!testing::HaveProgram(shell)) continue;  // syntax-checked where the shell is installed
    testing::TempDir dir;
    testing::WriteFile(dir.path() / "c", script);
    EXPECT_EQ(testing::RunCommand({shell, "-n", (dir.path() / "c").string()}).exit_code, 0)
        << shell;
  }
}

TEST(CliConventions, AnUnknownShellIsBadInput) {
  EXPECT_EQ(RunTrainlock({"completion", "tcsh"}).exit_code, 2);
}

}  // namespace
TEST(CliConventions, AProjectMayBeNamedByItsLockOrManifest) {
  for (const char* file : {"trainlock.lock", "trainlock.toml"}) {
    auto r = RunTrainlock({"check", (testing::SourceDir() / "examples/tiny" / file).string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("examples/tiny: ok"), std::string::npos) << r.out;
  }
}

TEST(CliConventions, AnotherFileIsRefusedAsNotAProjectDirectory) {
  const std::string file = (testing::SourceDir() / "examples/tiny/configs/tiny.yaml").string();
  auto r = RunTrainlock({"hash", file});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, file +
                       ": error: is a file, not a project directory; give the directory, its "
                       "trainlock.toml or its trainlock.lock\n");
}

TEST(CliConventions, VerboseCheckNamesEveryFileItCheckedWithItsHash) {
  const std::string dir = (testing::SourceDir() / "examples/tiny").string();
  auto plain = RunTrainlock({"check", dir});
  auto verbose = RunTrainlock({"check", dir, "-v"});
  EXPECT_EQ(verbose.exit_code, 0);
  EXPECT_EQ(("\n" + plain.out).find("\nchecked "), std::string::npos) << plain.out;  // a -v line
  EXPECT_TRUE(std::regex_search(verbose.out,
                                std::regex(R"(checked .*trainlock\.lock \(sha256 [0-9a-f]{64}\))")))
      << verbose.out;
  EXPECT_NE(verbose.out.find("against the catalog built into trainlock"), std::string::npos);
}

TEST(CliConventions, DoublyVerboseGateShowsTheEvidenceOfEachCheck) {
  const std::vector<std::string> gate = {
      "gate", (testing::SourceDir() / "tests/fixtures/reports/tiny-report.json").string(), "--lock",
      (testing::SourceDir() / "examples/tiny").string(), "--allow-unsigned"};
  std::vector<std::string> v = gate, vv = gate;
  v.push_back("-v");
  vv.push_back("-vv");
  auto once = RunTrainlock(v);
  auto twice = RunTrainlock(vv);
  EXPECT_NE(once.out.find("  pass train.roundtrip (required)\n"), std::string::npos) << once.out;
  EXPECT_EQ(once.out.find("evidence:"), std::string::npos) << once.out;
  EXPECT_NE(twice.out.find("  pass train.roundtrip (required)\n      resumed run is bitwise equal"),
            std::string::npos)
      << twice.out;
  EXPECT_NE(twice.out.find("      evidence: {\"bitwise_equal\":true,"), std::string::npos)
      << twice.out;
}

// The gate judges the lock's [validate] required checks and the --require ones alike, so -v
// marks both: examples/tiny's lock requires train.roundtrip, the command env.versions.
TEST(CliConventions, VerboseGateMarksTheLocksRequiredChecksAndTheRequiredOnes) {
  auto r = RunTrainlock(
      {"gate", (testing::SourceDir() / "tests/fixtures/reports/tiny-report.json").string(),
       "--lock", (testing::SourceDir() / "examples/tiny").string(), "--allow-unsigned", "--require",
       "env.versions", "-v"});
  EXPECT_NE(r.out.find("  pass train.roundtrip (required)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  pass env.versions (required)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  skip perf.hbm\n"), std::string::npos) << r.out;
}

TEST(CliConventions, ListOptionsTakeCommaSeparatedValues) {
  auto r = RunTrainlock({"inspect", "/bin/ls", "--sm", "8.0,sm_90", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["libraries"][0]["runs_on_sm"].size(), 2u) << r.out;
  EXPECT_EQ(j["libraries"][0]["runs_on_sm"][0]["sm"], 80);
  EXPECT_EQ(j["libraries"][0]["runs_on_sm"][1]["sm"], 90);
}

// A project directory whose validate run left its report where `trainlock validate` writes it.
class ProjectWithReport : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.path() / ".trainlock/reports");
    std::filesystem::copy_file(testing::SourceDir() / "tests/fixtures/reports/tiny-report.json",
                               dir_.path() / ".trainlock/reports/report.json");
  }
  testing::TempDir dir_;
};

TEST_F(ProjectWithReport, ReportAndPlanReadTheProjectsReportWhenGivenItsDirectory) {
  auto report = RunTrainlock({"report", dir_.path().string(), "--format", "markdown"});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("train.roundtrip"), std::string::npos) << report.out;
  auto plan = RunTrainlock({"plan", dir_.path().string(), "--json"});
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
}

TEST(CliConventions, AMissingDefaultReportNamesWhereItLooked) {
  testing::TempDir empty;
  auto r = RunTrainlock({"report", empty.path().string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(".trainlock/reports/report.json: error: cannot read: no such file; run "
                       "`trainlock validate "),
            std::string::npos)
      << r.err;
}

TEST(CliConventions, QuietKeygenPrintsTheKeyIdButNoWroteLine) {
  testing::TempDir dir;
  auto r = RunTrainlock({"-q", "keygen", (dir.path() / "ci").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_match(r.out, std::regex("key id [^\\n]+\\n"))) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "ci.key"));
}

TEST(CliConventions, QuietImageGenerateWritesItsFilesSilently) {
  testing::TempDir dir;
  auto r = RunTrainlock({"image", "generate", (testing::SourceDir() / "examples/tiny").string(),
                         "--target", "cpu", "--source-date-epoch", "0", "--build-validator",
                         "--out", dir.path().string(), "-q"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "Containerfile"));
}

TEST(CliConventions, QuietFleetWritesItsScriptSilently) {
  testing::TempDir dir;
  auto r =
      RunTrainlock({"-q", "fleet", "k8s", (testing::SourceDir() / "examples/h200-pilot").string(),
                    "--nodes", "2", "--image", "registry.example/p@sha256:" + std::string(64, 'a'),
                    "--out", (dir.path() / "job.yaml").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out + r.err, "");
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "job.yaml"));
}

TEST(CliConventions, AMistypedOptionSuggestsTheClosestOne) {
  auto r = RunTrainlock({"gate", "--reqiure", "train.roundtrip", "report.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "trainlock gate: error: unknown option --reqiure; did you mean --require?\n"
            "run `trainlock gate --help` for the options\n");
}

TEST(CliConventions, AMistypedOptionIsNamedBeforeARequiredOptionItHid) {
  auto r = RunTrainlock({"fleet", "k8s", ".", "--nodess", "3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(
      r.err.find("trainlock fleet k8s: error: unknown option --nodess; did you mean --nodes?"),
      std::string::npos)
      << r.err;
}

TEST(CliConventions, AMistypedGlobalOptionSuggestsTheGlobalOne) {
  auto r = RunTrainlock({"check", ".", "--catalgo", "x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("trainlock check: error: unknown option --catalgo; did you mean --catalog?"),
            std::string::npos)
      << r.err;
}

TEST(CliConventions, AMistypedOptionAfterAFlagIsNamed) {
  auto r = RunTrainlock({"check", "--json", "--jsno", "."});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("trainlock check: error: unknown option --jsno; did you mean --json?"),
            std::string::npos)
      << r.err;
}

TEST(CliConventions, AnUnknownShortOptionIsNamedWithoutASuggestion) {
  auto r = RunTrainlock({"check", "-x", "."});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("trainlock check: error: unknown option -x\n"), std::string::npos) << r.err;
}

}  // namespace trainlock
