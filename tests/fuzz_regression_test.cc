// Every input a fuzz target once crashed, hung or broke a promise on
// (tests/fuzz/regressions/<target>/), replayed through the same target body
// (tests/fuzz/fuzz_inputs.h) in the ordinary sanitized test build: each must now be accepted
// or refused cleanly. The seeds they start from run through the same bodies.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz_inputs.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

class FuzzRegressions : public ::testing::TestWithParam<fuzz::FuzzTarget> {};

TEST_P(FuzzRegressions, EveryRecordedInputIsAcceptedOrRefusedCleanly) {
  const fs::path dir = testing::SourceDir() / "tests/fuzz/regressions" / GetParam().name;
  if (!fs::is_directory(dir)) GTEST_SKIP() << "no recorded inputs in " << dir;
  std::vector<fs::path> inputs;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename() != "README.md") inputs.push_back(e.path());
  }
  std::sort(inputs.begin(), inputs.end());
  for (const fs::path& input : inputs) {
    SCOPED_TRACE(input.string());
    EXPECT_NO_THROW(GetParam().run(testing::ReadFile(input)));
  }
}

// The seeds each campaign starts from (tests/fuzz/seeds/<target>/) are well-formed inputs: the
// target body runs them in the sanitized build too, so a target that no longer reaches its
// parser's accepting path shows here and not only in a fuzzing run.
class FuzzSeeds : public ::testing::TestWithParam<fuzz::FuzzTarget> {};

TEST_P(FuzzSeeds, EverySeedRunsThroughTheTargetBody) {
  const fs::path dir = testing::SourceDir() / "tests/fuzz/seeds" / GetParam().name;
  if (!fs::is_directory(dir)) GTEST_SKIP() << "seeded at run time by run_fuzz.sh";
  int seeds = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    SCOPED_TRACE(e.path().string());
    EXPECT_NO_THROW(GetParam().run(testing::ReadFile(e.path())));
    ++seeds;
  }
  EXPECT_GT(seeds, 0) << dir;
}

std::string TargetName(const ::testing::TestParamInfo<fuzz::FuzzTarget>& target) {
  return target.param.name;
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzRegressions, ::testing::ValuesIn(fuzz::FuzzTargets()),
                         TargetName);
INSTANTIATE_TEST_SUITE_P(Targets, FuzzSeeds, ::testing::ValuesIn(fuzz::FuzzTargets()), TargetName);

}  // namespace
}  // namespace trainlock
