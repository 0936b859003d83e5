// Specification of the ext.command check: the project's smoke command runs without a shell of
// ours, with a timeout, and leaves no process behind.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>

#include "checks/smoke_command.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

ExtCommand Command(std::vector<std::string> argv, double timeout_s = 60) {
  ExtCommand c;
  c.argv = std::move(argv);
  c.timeout_s = timeout_s;
  return c;
}

TEST(SmokeCommand, SuccessPassesWithItsOutputTail) {
  testing::TempDir dir;
  SmokeRun run = RunSmokeCommand(Command({"sh", "-c", "echo step 1; echo step 2 >&2"}), dir.path());
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(run.output_tail, "step 1\nstep 2\n");
  CheckResult c = SmokeCommandCheck(Command({"sh", "-c", "..."}), run);
  EXPECT_EQ(c.status, CheckStatus::kPass);
  EXPECT_EQ(c.metrics["exit_code"], 0);
  EXPECT_GE(c.metrics["duration_s"].get<double>(), 0.0);
}

TEST(SmokeCommand, NonZeroExitFailsWithTheCodeAndTheOutput) {
  testing::TempDir dir;
  ExtCommand command = Command({"sh", "-c", "echo Traceback: boom >&2; exit 3"});
  SmokeRun run = RunSmokeCommand(command, dir.path());
  CheckResult c = SmokeCommandCheck(command, run);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_EQ(c.metrics["exit_code"], 3);
  EXPECT_NE(c.summary.find("exited with 3"), std::string::npos) << c.summary;
  EXPECT_EQ(c.metrics["output_tail"], "Traceback: boom\n");
}

TEST(SmokeCommand, TimeoutKillsTheCommandAndEveryProcessItStarted) {
  testing::TempDir dir;
  ExtCommand command = Command(
      {"sh", "-c", "sleep 300 & echo $! > bg.pid; echo $$ > sh.pid; echo started; sleep 300"}, 1);
  auto start = std::chrono::steady_clock::now();
  SmokeRun run = RunSmokeCommand(command, dir.path());
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CheckResult c = SmokeCommandCheck(command, run);
  EXPECT_TRUE(run.timed_out);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("ran past its 1 s timeout and was killed"), std::string::npos)
      << c.summary;
  EXPECT_EQ(run.output_tail, "started\n");
  EXPECT_LT(waited, 30.0);  // bounded: the timeout plus the grace, not the 300 s sleep
  EXPECT_TRUE(testing::ProcessIsGone(testing::PidFrom(dir.path() / "sh.pid")));
  EXPECT_TRUE(testing::ProcessIsGone(testing::PidFrom(dir.path() / "bg.pid")));
}

TEST(SmokeCommand, ACommandThatIgnoresSigtermIsKilled) {
  testing::TempDir dir;
  SmokeRun run = RunSmokeCommand(
      Command({"sh", "-c", "trap '' TERM; echo $$ > sh.pid; sleep 300"}, 1), dir.path());
  EXPECT_TRUE(run.timed_out);
  EXPECT_EQ(run.exit_code, 128 + SIGKILL);
  EXPECT_TRUE(testing::ProcessIsGone(testing::PidFrom(dir.path() / "sh.pid")));
}

TEST(SmokeCommand, ProcessesLeftRunningAfterASuccessAreKilled) {
  testing::TempDir dir;
  SmokeRun run =
      RunSmokeCommand(Command({"sh", "-c", "sleep 300 & echo $! > bg.pid; exit 0"}), dir.path());
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_TRUE(run.left_processes);
  EXPECT_TRUE(testing::ProcessIsGone(testing::PidFrom(dir.path() / "bg.pid")));
}

TEST(SmokeCommand, AProgramThatDoesNotExistIsAnErrorNotAFail) {
  testing::TempDir dir;
  ExtCommand command = Command({"trainlock-no-such-program"});
  SmokeRun run = RunSmokeCommand(command, dir.path());
  CheckResult c = SmokeCommandCheck(command, run);
  EXPECT_FALSE(run.started);
  EXPECT_EQ(c.status, CheckStatus::kError);
  EXPECT_NE(c.summary.find("cannot execute trainlock-no-such-program"), std::string::npos)
      << c.summary;
}

TEST(SmokeCommand, OnlyTheLastLinesAreKept) {
  testing::TempDir dir;
  ExtCommand command = Command({"seq", "1", "100"});
  command.tail_lines = 3;
  SmokeRun run = RunSmokeCommand(command, dir.path());
  EXPECT_EQ(run.output_tail, "98\n99\n100\n");
  EXPECT_EQ(run.output_lines, 100);
}

TEST(SmokeCommand, RunsInItsDirectoryWithItsEnvironment) {
  testing::TempDir dir;
  fs::create_directories(dir.path() / "scripts");
  ExtCommand command = Command({"sh", "-c", "echo $SMOKE_MODE; basename \"$(pwd)\""});
  command.cwd = "scripts";
  command.env["SMOKE_MODE"] = "two-steps";
  SmokeRun run = RunSmokeCommand(command, dir.path());
  EXPECT_EQ(run.output_tail, "two-steps\nscripts\n");
}

}  // namespace
}  // namespace trainlock
