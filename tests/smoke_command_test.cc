// Specification of the ext.command check: the project's smoke command runs without a shell of
// ours, with a timeout, and leaves no process behind.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "checks/smoke_command.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

// An argument no other process has, to find the test's processes by: inside a PID namespace of
// their own, the pid a command writes down is not the host's. A number of seconds,
// "3600.<digits>", so that `sleep MARKER` carries it; `sh -c SCRIPT MARKER` does too ($0).
std::string UniqueMarker() {
  static int counter = 0;
  return "3600." + std::to_string(::getpid()) + "0" + std::to_string(++counter);
}

std::vector<int> RunningWithArgument(const std::string& argument) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    const std::string cmdline((std::istreambuf_iterator<char>(in)), {});
    // A zombie's cmdline is empty: it is already gone.
    if (("\0" + cmdline).find("\0" + argument + "\0") != std::string::npos)
      pids.push_back(std::stoi(name));
  }
  return pids;
}

// The host pids of the running processes with `argument` among their arguments, once none
// is left or after 5 s of waiting for a SIGKILL to land.
std::vector<int> ProcessesWithArgument(const std::string& argument) {
  std::vector<int> pids;
  for (int i = 0; i < 100; ++i) {
    pids = RunningWithArgument(argument);
    if (pids.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pids;
}

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
  const std::string sh = UniqueMarker(), background = UniqueMarker();
  ExtCommand command =
      Command({"sh", "-c", "sleep " + background + " & echo started; sleep 300", sh}, 1);
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
  EXPECT_TRUE(ProcessesWithArgument(sh).empty());
  EXPECT_TRUE(ProcessesWithArgument(background).empty());
}

TEST(SmokeCommand, ACommandThatIgnoresSigtermIsKilled) {
  testing::TempDir dir;
  const std::string sh = UniqueMarker();
  SmokeRun run =
      RunSmokeCommand(Command({"sh", "-c", "trap '' TERM; sleep 300", sh}, 1), dir.path());
  EXPECT_TRUE(run.timed_out);
  EXPECT_EQ(run.exit_code, 128 + SIGKILL);
  EXPECT_TRUE(ProcessesWithArgument(sh).empty());
}

TEST(SmokeCommand, ProcessesLeftRunningAfterASuccessAreKilled) {
  testing::TempDir dir;
  const std::string background = UniqueMarker();
  SmokeRun run =
      RunSmokeCommand(Command({"sh", "-c", "sleep " + background + " & exit 0"}), dir.path());
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_TRUE(run.left_processes);
  EXPECT_TRUE(ProcessesWithArgument(background).empty());
}

// setsid takes a process out of the command's group, where the group kill cannot reach it; a
// PID namespace still holds it. Where the kernel allows none (a container's seccomp profile),
// the report says the group was all there was.
TEST(SmokeCommand, ASetsidGrandchildIsGoneAfterTheCheckOrTheReportSaysWhy) {
  testing::TempDir dir;
  const std::string grandchild = UniqueMarker();
  ExtCommand command =
      Command({"sh", "-c", "setsid sleep " + grandchild + " & sleep 0.5; echo done"});
  SmokeRun run = RunSmokeCommand(command, dir.path());
  CheckResult c = SmokeCommandCheck(command, run);
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.summary;
  EXPECT_EQ(c.metrics["containment"], run.containment);
  const std::vector<int> left = ProcessesWithArgument(grandchild);
  if (run.containment == "pid-namespace") {
    EXPECT_TRUE(left.empty());
    EXPECT_TRUE(run.left_processes);
  } else {
    EXPECT_EQ(run.containment.rfind("process-group only: cannot create a PID namespace: ", 0), 0u)
        << run.containment;
    for (int pid : left) ::kill(pid, SIGKILL);
  }
}

TEST(SmokeCommand, TheCommandRunsAsTheUserThatStartedIt) {
  testing::TempDir dir;
  SmokeRun run = RunSmokeCommand(Command({"id", "-u"}), dir.path());
  EXPECT_EQ(run.output_tail, std::to_string(::geteuid()) + "\n");
}

// Bytes that are not UTF-8, and a line cut at 4096 bytes in the middle of a two-byte 'é',
// become U+FFFD; the rest is kept and the report can still be written.
TEST(SmokeCommand, OutputThatIsNotUtf8IsKeptWithReplacementCharacters) {
  testing::TempDir dir;
  ExtCommand command =
      Command({"sh", "-c", "printf 'loss \\377\\376 ok\\n'; printf '%4095s\\303\\251\\n' x"});
  SmokeRun run = RunSmokeCommand(command, dir.path());
  const std::string kReplacement = "\xEF\xBF\xBD";
  EXPECT_EQ(run.output_tail.substr(0, run.output_tail.find('\n')),
            "loss " + kReplacement + kReplacement + " ok");
  EXPECT_NE(run.output_tail.find("x" + kReplacement + "\n"), std::string::npos);
  Report report;
  report.checks.push_back(SmokeCommandCheck(command, run));
  std::string json;
  EXPECT_NO_THROW(json = report.ToJson().dump());
  EXPECT_NE(json.find("loss \xEF\xBF\xBD\xEF\xBF\xBD ok"), std::string::npos);
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
