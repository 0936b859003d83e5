// The validator's option table (project/validator_options.h) is the one definition of
// trainlock-validate's options: its parser, `trainlock validate --help` and the forwarding of
// options from `trainlock validate` to the validator all follow it.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "project/validator_options.h"
#include "test_support.h"

namespace trainlock {
namespace {

TEST(ValidatorOptions, EveryNameIsUniqueAndFoundByEachOfItsSpellings) {
  std::set<std::string> names;
  for (const ValidatorOption& row : ValidatorOptions()) {
    const std::string name(row.long_name());
    EXPECT_TRUE(name.starts_with("--")) << row.names;
    EXPECT_TRUE(names.insert(name).second) << name << " twice";
    EXPECT_EQ(FindValidatorOption(name), &row);
    if (!row.is_flag()) {
      EXPECT_EQ(FindValidatorOption(name + "=x"), &row);
    }
  }
  EXPECT_EQ(FindValidatorOption("-o"), FindValidatorOption("--out"));
  EXPECT_EQ(FindValidatorOption("-q"), FindValidatorOption("--quiet"));
  EXPECT_EQ(FindValidatorOption("--outt"), nullptr);
  EXPECT_EQ(FindValidatorOption("--image"), nullptr);  // trainlock validate's own
}

TEST(ValidatorOptions, TrainlockValidateHelpNamesEveryOption) {
  testing::RunResult r = testing::RunTrainlock({"validate", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string help = r.out;
  for (char& c : help) c = c == '\n' ? ' ' : c;
  for (const ValidatorOption& row : ValidatorOptions()) {
    std::string name(row.long_name());
    if (name == "--quiet") name = "-q";
    if (name == "--verbose") name = "-v";
    EXPECT_NE(help.find(name), std::string::npos) << name << " missing from:\n" << r.out;
  }
}

TEST(ValidatorOptions, TheValidatorParsesEveryOptionOfTheTable) {
  if (!std::filesystem::exists(testing::BinDir() / "trainlock-validate"))
    GTEST_SKIP() << "trainlock-validate is built only where LibTorch is found";
  testing::RunResult r = testing::RunProgram("trainlock-validate", {"--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const ValidatorOption& row : ValidatorOptions())
    EXPECT_NE(r.out.find(std::string(row.long_name())), std::string::npos) << row.names;
}

TEST(ValidatorOptions, AnOptionNeitherCommandKnowsIsRefusedWithASuggestion) {
  testing::TempDir dir;
  testing::RunResult r =
      testing::RunTrainlock({"validate", dir.path().string(), "--checkpointdir", "x"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err,
            "trainlock validate: error: unknown option --checkpointdir; did you mean "
            "--checkpoint-dir?\n");
}

}  // namespace
}  // namespace trainlock
