// Specification of the child-process helper (base/subprocess.h): one behaviour per test.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cstdlib>

#include "base/subprocess.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

SpawnOptions Shell(const std::string& script) {
  SpawnOptions o;
  o.argv = {"sh", "-c", script};
  return o;
}

TEST(Subprocess, CapturesStdoutAndStderrOnOnePipe) {
  ProcessRun run = RunProcess(Shell("echo out; echo err >&2"));
  EXPECT_TRUE(run.started);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.output, "out\nerr\n");
  EXPECT_EQ(run.output_lines, 2);
}

TEST(Subprocess, TheTailKeepsTheLastLines) {
  SpawnOptions o;
  o.argv = {"seq", "1", "1000"};
  o.tail_lines = 2;
  ProcessRun run = RunProcess(o);
  EXPECT_EQ(run.output, "999\n1000\n");
  EXPECT_EQ(run.output_lines, 1000);
}

TEST(Subprocess, AMissingProgramIs127AndSaysWhy) {
  SpawnOptions o;
  o.argv = {"trainlock-no-such-program"};
  ProcessRun run = RunProcess(o);
  EXPECT_FALSE(run.started);
  EXPECT_EQ(run.exit_code, kCannotStart);
  EXPECT_EQ(run.start_error, "cannot execute trainlock-no-such-program: No such file or directory");
}

TEST(Subprocess, AMissingDirectoryIs127AndSaysWhy) {
  SpawnOptions o = Shell("true");
  o.cwd = "/trainlock-no-such-directory";
  ProcessRun run = RunProcess(o);
  EXPECT_FALSE(run.started);
  EXPECT_EQ(run.exit_code, kCannotStart);
  EXPECT_EQ(run.start_error,
            "cannot enter /trainlock-no-such-directory: No such file or directory");
}

TEST(Subprocess, ASignalledChildIs128PlusTheSignal) {
  EXPECT_EQ(RunProcess(Shell("kill -TERM $$")).exit_code, 128 + SIGTERM);
}

TEST(Subprocess, EnvironmentAdditionsReachTheChildAndLeaveTheParentAlone) {
  ::setenv("TRAINLOCK_SUBPROCESS_TEST_KEPT", "parent", 1);
  ::setenv("TRAINLOCK_SUBPROCESS_TEST_REPLACED", "parent", 1);
  SpawnOptions o = Shell(
      "echo $TRAINLOCK_SUBPROCESS_TEST_KEPT $TRAINLOCK_SUBPROCESS_TEST_REPLACED "
      "$TRAINLOCK_SUBPROCESS_TEST_ADDED");
  o.env = {{"TRAINLOCK_SUBPROCESS_TEST_REPLACED", "child"},
           {"TRAINLOCK_SUBPROCESS_TEST_ADDED", "added"}};
  EXPECT_EQ(RunProcess(o).output, "parent child added\n");
  EXPECT_STREQ(std::getenv("TRAINLOCK_SUBPROCESS_TEST_REPLACED"), "parent");
  EXPECT_EQ(std::getenv("TRAINLOCK_SUBPROCESS_TEST_ADDED"), nullptr);
  ::unsetenv("TRAINLOCK_SUBPROCESS_TEST_KEPT");
  ::unsetenv("TRAINLOCK_SUBPROCESS_TEST_REPLACED");
}

TEST(Subprocess, TheProgramIsLookedUpOnTheChildsPath) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "trainlock-test-tool", "#!/bin/sh\necho found\n");
  fs::permissions(dir.path() / "trainlock-test-tool", fs::perms::owner_all);
  SpawnOptions o;
  o.argv = {"trainlock-test-tool"};
  o.env = {{"PATH", dir.path().string() + ":/usr/bin:/bin"}};
  EXPECT_EQ(RunProcess(o).output, "found\n");
}

TEST(Subprocess, RunsInItsWorkingDirectory) {
  testing::TempDir dir;
  SpawnOptions o = Shell("pwd -P");
  o.cwd = dir.path();
  EXPECT_EQ(RunProcess(o).output, fs::canonical(dir.path()).string() + "\n");
}

TEST(Subprocess, StderrToAFileIsAppended) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "err", "before\n");
  SpawnOptions o = Shell("echo out; echo err >&2");
  o.err = Stream::kFile;
  o.err_file = dir.path() / "err";
  EXPECT_EQ(RunProcess(o).output, "out\n");
  EXPECT_EQ(testing::ReadFile(dir.path() / "err"), "before\nerr\n");
}

TEST(Subprocess, ReadLineReturnsTheLinesInOrder) {
  Subprocess child(Shell("echo one; echo two"));
  const auto deadline = ProcessClock::now() + std::chrono::seconds(30);
  EXPECT_EQ(child.ReadLine(deadline), "one");
  EXPECT_EQ(child.ReadLine(deadline), "two");
  EXPECT_EQ(child.ReadLine(deadline), std::nullopt);
  EXPECT_EQ(child.Wait(deadline), 0);
}

TEST(Subprocess, TheDeadlineStopsTheWholeGroupGrandchildrenToo) {
  testing::TempDir dir;
  SpawnOptions o = Shell("sleep 300 & echo $! > bg.pid; echo $$ > sh.pid; sleep 300");
  o.cwd = dir.path();
  o.own_group = true;
  const auto start = ProcessClock::now();
  ProcessRun run = RunProcess(o, {1, std::chrono::milliseconds(500)});
  EXPECT_TRUE(run.timed_out);
  EXPECT_EQ(run.exit_code, 128 + SIGTERM);
  EXPECT_LT(std::chrono::duration<double>(ProcessClock::now() - start).count(), 30.0);
  EXPECT_TRUE(testing::ProcessIsGone(testing::PidFrom(dir.path() / "sh.pid")));
  EXPECT_TRUE(testing::ProcessIsGone(testing::PidFrom(dir.path() / "bg.pid")));
}

TEST(Subprocess, AChildIgnoringSigtermIsKilledAfterTheGrace) {
  SpawnOptions o = Shell("trap '' TERM; sleep 300");
  o.own_group = true;  // the sleep ignores SIGTERM too, and goes with the group's SIGKILL
  ProcessRun run = RunProcess(o, {1, std::chrono::milliseconds(200)});
  EXPECT_TRUE(run.timed_out);
  EXPECT_EQ(run.exit_code, 128 + SIGKILL);
}

TEST(Subprocess, LeftoversInItsGroupAreDetectedAndKilled) {
  testing::TempDir dir;
  SpawnOptions o = Shell("sleep 300 & echo $! > bg.pid; exit 0");
  o.cwd = dir.path();
  o.own_group = true;
  ProcessRun run = RunProcess(o);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_TRUE(run.left_processes);
  EXPECT_TRUE(testing::ProcessIsGone(testing::PidFrom(dir.path() / "bg.pid")));
}

TEST(Subprocess, AChildThatLeavesNothingHasNoLeftovers) {
  SpawnOptions o = Shell("exit 0");
  o.own_group = true;
  EXPECT_FALSE(RunProcess(o).left_processes);
}

}  // namespace
}  // namespace trainlock
