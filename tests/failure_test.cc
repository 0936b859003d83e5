// Failure and RunWithExitCodes: a Failure ends the program with its own exit code, printed
// under the command the user ran, with its notes; anything else stays exit 3.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <stdexcept>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/failure.h"
#include "test_support.h"

namespace trainlock {
namespace {

// std::cerr's output while it lives.
class CapturedStderr {
 public:
  CapturedStderr() : old_(std::cerr.rdbuf(text_.rdbuf())) {}
  ~CapturedStderr() { std::cerr.rdbuf(old_); }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::streambuf* old_;
};

TEST(RunWithExitCodes, FailureReturnsItsOwnExitCode) {
  CapturedStderr err;
  EXPECT_EQ(RunWithExitCodes("prog", []() -> int { throw Failure("tampered", kExitVerdict); }),
            kExitVerdict);
}

TEST(RunWithExitCodes, EachFailureCodeIsTheProcessExitCode) {
  CapturedStderr err;
  for (ExitCode code : {kExitVerdict, kExitBadInput, kExitEnvironment}) {
    EXPECT_EQ(RunWithExitCodes("prog", [code]() -> int { throw Failure("why", code); }), code);
  }
}

TEST(RunWithExitCodes, FailureIsPrintedUnderTheCommandThenEachNote) {
  CapturedStderr err;
  RunWithExitCodes(
      "prog", []() -> int { throw Failure("a\nb", kExitEnvironment, {"nothing written"}); },
      "prog sub");
  EXPECT_EQ(err.text(), "prog sub: a\nb\nprog sub: nothing written\n");
}

// A note quoting a file name from an image (--check's account) cannot start an unprefixed line.
TEST(RunWithExitCodes, ANoteIsOneLineWhateverItQuotes) {
  CapturedStderr err;
  RunWithExitCodes(
      "prog",
      []() -> int {
        throw Failure("why", kExitVerdict, {"layer 1 of 1: a\nforged line: only in the rebuild"});
      },
      "prog sub");
  EXPECT_EQ(err.text(),
            "prog sub: why\nprog sub: layer 1 of 1: a\\x0aforged line: only in the rebuild\n");
}

TEST(RunWithExitCodes, FailureWithoutACommandIsPrintedUnderTheProgram) {
  CapturedStderr err;
  RunWithExitCodes("prog", []() -> int { throw Failure("why", kExitBadInput); });
  EXPECT_EQ(err.text(), "prog: error: why\n");
}

TEST(RunWithExitCodes, OtherExceptionIsAnEnvironmentErrorUnderTheProgram) {
  CapturedStderr err;
  EXPECT_EQ(RunWithExitCodes(
                "prog", []() -> int { throw std::runtime_error("disk full"); }, "prog sub"),
            kExitEnvironment);
  EXPECT_EQ(err.text(), "prog: error: disk full\n");
}

TEST(RunWithExitCodes, InputErrorPrintsItsDiagnosticsAndIsBadInput) {
  CapturedStderr err;
  EXPECT_EQ(RunWithExitCodes("prog",
                             []() -> int {
                               throw InputError(Diagnostic{"f.toml", {2, 3}, "bad", ""});
                             }),
            kExitBadInput);
  EXPECT_EQ(err.text(), "f.toml:2:3: error: bad\n");
}

TEST(FailureExitStatus, ImageBuildFailureReachesTheProcessUnderItsCommand) {
  testing::TempDir tmp;
  testing::CopyExample("tiny", tmp.path());
  auto r = testing::RunTrainlock({"image", "build", tmp.path().string(), "--target", "cpu",
                                  "--source-date-epoch", "0", "--container-engine", "kaniko"});
  EXPECT_EQ(r.exit_code, kExitBadInput);
  EXPECT_EQ(r.err,
            "trainlock image build: error: --container-engine must be buildah, podman or docker, "
            "not "
            "'kaniko'\n");
}

TEST(FailureExitStatus, LockFailureSaysNothingWasWritten) {
  testing::TempDir tmp;
  const auto project = testing::UnlockedTiny(tmp.path() / "p", "localhost:5000/test/x:v1");
  auto r = testing::RunTrainlock({"lock", project.string(), "--offline", "--progress", "none"});
  EXPECT_EQ(r.exit_code, kExitVerdict);
  EXPECT_EQ(r.err,
            "trainlock lock: targets.cpu.base localhost:5000/test/x:v1 is not pinned and "
            "--offline does not ask the registry\n"
            "trainlock lock: nothing written\n");
}

TEST(FailureExitStatus, AStepCutShortByAnErrorIsLoggedAsStoppedNotDone) {
  testing::TempDir tmp;
  const auto project = testing::UnlockedTiny(tmp.path() / "p", "localhost:5000/test/x:v1");
  auto r = testing::RunTrainlock({"lock", project.string(), "--offline"});  // stderr: a log
  EXPECT_EQ(r.exit_code, kExitVerdict);
  EXPECT_NE(r.err.find("trainlock lock: stopped locking offline from the existing lock ("),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("trainlock lock: done "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainlock
