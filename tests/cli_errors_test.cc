// Every command says a usage error one way (docs/commands.md, "Errors"; base/usage_error.h):
// exit 2, nothing on stdout, and on stderr one line `PATH: error: ...` (a file at fault) or
// `trainlock CMD: error: ...` (usage), then at most one hint line. The commands are read from
// the command tree (`--help`, recursively), so a new command is held to it without a new test.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "test_support.h"

namespace trainlock {
namespace {

// The subcommands a --help text lists under "Subcommands:".
std::vector<std::string> ListedSubcommands(const std::string& help) {
  std::vector<std::string> names;
  std::istringstream in(help);
  bool in_section = false;
  static const std::regex kEntry(R"(^  ([a-z][a-z0-9-]*)(\s.*)?$)");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != ' ') in_section = line == "Subcommands:";
    std::smatch m;
    if (in_section && std::regex_match(line, m, kEntry)) names.push_back(m[1]);
  }
  return names;
}

// Every command that runs (no subcommands of its own), as the words that name it.
std::vector<std::vector<std::string>> LeafCommands(const std::vector<std::string>& words = {}) {
  std::vector<std::string> args = words;
  args.push_back("--help");
  const auto help = testing::RunTrainlock(args);
  EXPECT_EQ(help.exit_code, 0) << help.err;
  const std::vector<std::string> subs = ListedSubcommands(help.out);
  if (subs.empty()) return {words};
  std::vector<std::vector<std::string>> leaves;
  for (const std::string& sub : subs) {
    std::vector<std::string> deeper = words;
    deeper.push_back(sub);
    for (auto& leaf : LeafCommands(deeper)) leaves.push_back(leaf);
  }
  return leaves;
}

// Runs `program` with `args` in the empty directory `cwd` (no project there to read).
testing::RunResult RunIn(const std::filesystem::path& cwd, const std::string& program,
                         const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"env", "-C", cwd.string(),
                                   (testing::BinDir() / program).string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunCommand(argv);
}

std::string Joined(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// Holds `r` to the one error format; returns its first line.
std::string ExpectOneError(const testing::RunResult& r, const std::string& what) {
  EXPECT_EQ(r.exit_code, 2) << what << "\n" << r.err;
  EXPECT_EQ(r.out, "") << what;
  std::vector<std::string> lines;
  std::istringstream in(r.err);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  EXPECT_GE(lines.size(), 1u) << what;
  EXPECT_LE(lines.size(), 2u) << what << "\n" << r.err;
  if (lines.empty()) return "";
  static const std::regex kFirst(
      R"(^(trainlock(-validate)?( [a-z0-9]+)*|[^ ]+?(:\d+:\d+)?): error: \S.*$)");
  EXPECT_TRUE(std::regex_match(lines[0], kFirst)) << what << "\n" << r.err;
  if (lines.size() == 2) {
    EXPECT_TRUE(lines[1].starts_with("run `")) << what << "\n" << r.err;
  }
  EXPECT_EQ(r.err.find("Run with --help"), std::string::npos) << what;
  return lines[0];
}

class CliErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    // A path that cannot exist: it goes through a regular file.
    testing::WriteFile(scratch_.path() / "file.txt", "not a project\n");
    bad_path_ = (scratch_.path() / "file.txt" / "sub").string();
    cwd_ = scratch_.path() / "cwd";
    std::filesystem::create_directories(cwd_);
  }
  testing::TempDir scratch_;
  std::string bad_path_;
  std::filesystem::path cwd_;
};

TEST_F(CliErrors, TheCommandTreeIsFound) {
  const auto leaves = LeafCommands();
  std::vector<std::string> names;
  for (const auto& leaf : leaves) names.push_back(Joined(leaf));
  for (const char* expected :
       {"check", "validate", "gate", "image build", "fleet summarize", "help"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
}

TEST_F(CliErrors, EveryCommandSaysABadPathInTheOneFormat) {
  for (const auto& leaf : LeafCommands()) {
    std::vector<std::string> args = leaf;
    args.push_back(bad_path_);
    ExpectOneError(RunIn(cwd_, "trainlock", args), "trainlock " + Joined(args));
  }
}

TEST_F(CliErrors, EveryCommandSaysAnUnknownOptionInTheOneFormat) {
  for (const auto& leaf : LeafCommands()) {
    std::vector<std::string> args = leaf;
    args.push_back("--no-such-option");
    const std::string first = ExpectOneError(RunIn(cwd_, "trainlock", args), Joined(args));
    EXPECT_EQ(first, "trainlock " + Joined(leaf) + ": error: unknown option --no-such-option");
  }
}

TEST_F(CliErrors, EveryCommandSaysABadValueInTheOneFormat) {
  for (const auto& leaf : LeafCommands()) {
    std::vector<std::string> args = leaf;
    args.insert(args.end(), {"--progress", "bogus"});
    const std::string first = ExpectOneError(RunIn(cwd_, "trainlock", args), Joined(args));
    EXPECT_TRUE(first.starts_with("trainlock " + Joined(leaf) + ": error: --progress: 'bogus'"))
        << first;
  }
}

TEST_F(CliErrors, AFileGivenForAProjectDirectoryLeadsWithThePath) {
  const std::string file = (scratch_.path() / "file.txt").string();
  const auto r = RunIn(cwd_, "trainlock", {"check", file});
  EXPECT_EQ(ExpectOneError(r, "check FILE"),
            file +
                ": error: is a file, not a project directory; give the directory, its "
                "trainlock.toml or its trainlock.lock");
}

TEST_F(CliErrors, TheValidatorSaysItsErrorsInTheOneFormat) {
  if (!std::filesystem::exists(testing::BinDir() / "trainlock-validate"))
    GTEST_SKIP() << "trainlock-validate is not built (no LibTorch)";
  ExpectOneError(RunIn(cwd_, "trainlock-validate", {bad_path_}), "trainlock-validate BAD");
  EXPECT_EQ(ExpectOneError(RunIn(cwd_, "trainlock-validate", {"--ouut", "x"}), "--ouut"),
            "trainlock-validate: error: unknown option --ouut; did you mean --out?");
  EXPECT_EQ(ExpectOneError(RunIn(cwd_, "trainlock-validate", {"--device", "tpu"}), "--device"),
            "trainlock-validate: error: --device: 'tpu' is not one of auto, cpu or cuda");
  ExpectOneError(RunIn(cwd_, "trainlock-validate", {"--timeout", "abc"}), "--timeout abc");
  ExpectOneError(RunIn(cwd_, "trainlock-validate", {"--out"}), "--out");
}

// The commands whose DIR is a project to read (its --help says "Project directory", and not
// one `init` creates).
std::vector<std::vector<std::string>> ProjectDirCommands() {
  std::vector<std::vector<std::string>> out;
  for (const auto& leaf : LeafCommands()) {
    std::vector<std::string> args = leaf;
    args.push_back("--help");
    const std::string help = testing::RunTrainlock(args).out;
    static const std::regex kProjectDir(R"((^|\n)  DIR\s+.*Project directory (\(or|holding))");
    if (std::regex_search(help, kProjectDir)) out.push_back(leaf);
  }
  return out;
}

// A mistyped project directory is named as missing, not taken for a project to `init`.
TEST_F(CliErrors, AProjectDirectoryThatDoesNotExistIsNoSuchDirectory) {
  const auto commands = ProjectDirCommands();
  EXPECT_GE(commands.size(), 9u);  // check, hash, validate, lock, fetch, archs, image x3, fleet
  for (const auto& leaf : commands) {
    std::vector<std::string> args = leaf;
    args.push_back("myprojet");
    EXPECT_EQ(ExpectOneError(RunIn(cwd_, "trainlock", args), Joined(args)),
              "myprojet: error: no such directory");
  }
}

TEST_F(CliErrors, TheValidatorSaysAProjectDirectoryThatDoesNotExistIsNoSuchDirectory) {
  if (!std::filesystem::exists(testing::BinDir() / "trainlock-validate"))
    GTEST_SKIP() << "trainlock-validate is not built (no LibTorch)";
  EXPECT_EQ(ExpectOneError(RunIn(cwd_, "trainlock-validate", {"myprojet"}), "myprojet"),
            "myprojet: error: no such directory");
}

TEST_F(CliErrors, AMissingArgumentAndAMissingCommandAreUsageErrors) {
  EXPECT_EQ(ExpectOneError(RunIn(cwd_, "trainlock", {"inspect"}), "inspect"),
            "trainlock inspect: error: LIB is required");
  EXPECT_EQ(ExpectOneError(RunIn(cwd_, "trainlock", {"image"}), "image"),
            "trainlock image: error: a command is required");
  EXPECT_EQ(ExpectOneError(RunIn(cwd_, "trainlock", {"fetch", "--timeout", "0"}), "timeout 0"),
            "trainlock fetch: error: --timeout: '0' is not in the range 1 to 86400");
}

}  // namespace
}  // namespace trainlock
