// Specification of the child-process helper (base/subprocess.h): one behaviour per test.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>

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

// A line over the cap comes back cut, and the rest of it is dropped up to its newline: its
// tail, whatever it says, never reads as a line of its own (an engine's forged event).
TEST(Subprocess, ALineOverTheCapIsDiscardedWholeIncludingItsTail) {
  Subprocess child(Shell("head -c " + std::to_string(kMaxReadLineBytes + 10) +
                         " /dev/zero | tr '\\0' x; sleep 0.3; "
                         "printf '{\"event\":\"done\"}\\nnext\\n'"));
  const auto deadline = ProcessClock::now() + std::chrono::seconds(30);
  const std::optional<std::string> cut = child.ReadLine(deadline);
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->size(), kMaxReadLineBytes);
  EXPECT_EQ(child.ReadLine(deadline), "next");
  EXPECT_EQ(child.Wait(deadline), 0);
}

TEST(Subprocess, ACleanEnvironmentIsTheGivenVariablesAlone) {
  ::setenv("TRAINLOCK_TEST_INHERITED", "1", 1);
  SpawnOptions o = Shell("echo \"[$TRAINLOCK_TEST_INHERITED][$GIVEN]\"");
  o.argv[0] = "/bin/sh";
  o.clean_env = true;
  o.env = {{"GIVEN", "yes"}};
  EXPECT_EQ(RunProcess(o).output, "[][yes]\n");
  ::unsetenv("TRAINLOCK_TEST_INHERITED");
}

// Without a PID namespace, a child that left the group with setsid is found by the pipe it
// holds and ended.
TEST(Subprocess, APipeHolderThatLeftTheGroupIsKilled) {
  testing::TempDir dir;
  SpawnOptions o = Shell("setsid sh -c 'echo $$ > daemon.pid; sleep 300' & sleep 0.3");
  o.cwd = dir.path();
  o.own_group = true;
  Subprocess child(o);
  const auto deadline = ProcessClock::now() + std::chrono::seconds(30);
  EXPECT_EQ(child.Wait(deadline), 0);
  EXPECT_FALSE(child.output_ended());  // the daemon still holds it
  EXPECT_TRUE(child.KillPipeHolders());
  EXPECT_TRUE(testing::ProcessIsGone(testing::PidFrom(dir.path() / "daemon.pid")));
  EXPECT_EQ(child.ReadLine(deadline), std::nullopt);
  EXPECT_TRUE(child.output_ended());
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

// ---- an output file's name in a directory another process writes to ----

SpawnOptions StderrTo(const fs::path& file) {
  SpawnOptions o = Shell("echo written >&2");
  o.err = Stream::kFile;
  o.err_file = file;
  o.files_regular_only = true;
  return o;
}

TEST(Subprocess, AFifoPlantedAtTheStderrFileIsReplacedByARegularFile) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "b.stderr";
  ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);  // no reader: opening it to write fails ENXIO
  ProcessRun run = RunProcess(StderrTo(file));
  ASSERT_TRUE(run.started) << run.start_error;
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(file)));
  EXPECT_EQ(testing::ReadFile(file), "written\n");
}

TEST(Subprocess, ALinkPlantedAtTheStderrFileIsReplacedAndItsTargetLeftAlone) {
  testing::TempDir dir;
  const fs::path target = dir.path() / "elsewhere", file = dir.path() / "b.stderr";
  testing::WriteFile(target, "untouched");
  fs::create_symlink(target, file);
  ProcessRun run = RunProcess(StderrTo(file));
  ASSERT_TRUE(run.started) << run.start_error;
  EXPECT_EQ(testing::ReadFile(target), "untouched");
  EXPECT_FALSE(fs::is_symlink(fs::symlink_status(file)));
  EXPECT_EQ(testing::ReadFile(file), "written\n");
}

TEST(Subprocess, TheStderrFileStaysOpenToItsOwnerAfterItsNameIsRemoved) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "b.stderr";
  SpawnOptions o = StderrTo(file);
  o.argv = {"sh", "-c", "rm -f \"$0\"; echo after >&2", file.string()};
  Subprocess child(o);
  ASSERT_TRUE(child.started()) << child.start_error();
  EXPECT_EQ(child.Wait(ProcessClock::time_point::max()), 0);
  ASSERT_GE(child.err_file_fd(), 0);
  struct stat st {};
  ASSERT_EQ(::fstat(child.err_file_fd(), &st), 0);
  EXPECT_EQ(st.st_size, 6);  // "after\n", written to the file the name no longer names
}

}  // namespace
}  // namespace trainlock
