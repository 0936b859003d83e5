// The round trip's process mechanics (validators/coordinator/engine_process.h), apart from the
// plan that drives them: a held process starts at its release, the caller's predicate decides
// the SIGKILL at a checkpoint event, and what the process did is collected into a WorkerRun.
// Each engine here is a shell script that speaks the engine protocol.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>

#include "coordinator/engine_process.h"
#include "support/engine_protocol.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {
namespace fs = std::filesystem;

std::string Hello() {
  return nlohmann::json{{"event", "hello"}, {"protocol", kEngineProtocol},
                        {"engine", "ddp"},  {"world_size", 1},
                        {"device", "cpu"},  {"versions", {{"torch", "1.13.0"}}}}
      .dump();
}

const char kCommitted[] =
    R"({"event":"checkpoint","phase":"committed","step":4,"bytes":10,"seconds":0.1})";

// A process of `name` running the shell `script` in `work`, which says what ddp at torch
// 1.13.0 must say.
EngineStart ShellEngine(const fs::path& work, const std::string& name, const std::string& script) {
  EngineStart start;
  start.name = name;
  start.command.argv = {"/bin/sh", "-c", script};
  start.command.cwd = work;
  start.expectation = {"ddp", {"1.13.0"}, 1};
  return start;
}

EngineProcessSettings In(const fs::path& work) {
  return {work, 60, "cpu", std::chrono::steady_clock::now()};
}

std::string Says(const std::string& line) {
  return "echo '" + line + "'; ";
}

TEST(EngineProcess, APreemptionPredicateThatHoldsKillsTheProcessAtItsCheckpointEvent) {
  testing::TempDir work;
  EngineProcess b(In(work.path()), ShellEngine(work.path(), "b-preempted",
                                               Says(Hello()) + Says(kCommitted) + "exec sleep 50"));
  const WorkerRun run = Finish(std::move(b), [](const EngineTranscript& t) {
    return t.LastCheckpoint("committed").has_value();
  });
  EXPECT_TRUE(run.killed_by_us);
  EXPECT_EQ(run.exit_code, 128 + SIGKILL);
  EXPECT_LT(run.seconds, 40);
  EXPECT_TRUE(run.first_event_s.contains("checkpoint"));
  EXPECT_FALSE(run.result.error);  // its own death is no protocol violation
}

TEST(EngineProcess, WithoutAPredicateItRunsOnPastItsCheckpoint) {
  testing::TempDir work;
  EngineProcess b(In(work.path()),
                  ShellEngine(work.path(), "b-preempted",
                              Says(Hello()) + Says(kCommitted) + Says(R"({"event":"done"})")));
  const WorkerRun run = Finish(std::move(b));
  EXPECT_FALSE(run.killed_by_us);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_FALSE(run.result.error);
  // Every line it said is kept beside the results.
  EXPECT_NE(testing::ReadFile(work.path() / "b-preempted.jsonl").find("committed"),
            std::string::npos);
}

TEST(EngineProcess, AHeldProcessWithoutAGateIsSpawnedOnlyAtItsRelease) {
  testing::TempDir work;
  const fs::path marker = work.path() / "ran";
  EngineProcess c(In(work.path()), [&] {
    EngineStart start = ShellEngine(
        work.path(), "c-resumed",
        "touch '" + marker.string() + "'; " + Says(Hello()) + Says(R"({"event":"done"})"));
    start.held = true;
    return start;
  }());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(fs::exists(marker));
  c.Release();
  const WorkerRun run = Finish(std::move(c));
  EXPECT_TRUE(fs::exists(marker));
  EXPECT_EQ(run.exit_code, 0);
}

TEST(EngineProcess, AProcessThatBreaksTheProtocolHasTheViolationAsItsError) {
  testing::TempDir work;
  EngineProcess a(In(work.path()),
                  ShellEngine(work.path(), "a-uninterrupted", Says(R"({"event":"done"})")));
  const WorkerRun run = Finish(std::move(a));
  ASSERT_TRUE(run.result.error);
  EXPECT_EQ(run.result.error->kind, kErrorProtocol);
  EXPECT_NE(run.result.error->message.value_or("").find("process a-uninterrupted broke the engine "
                                                        "protocol"),
            std::string::npos);
  EXPECT_EQ(run.stderr_file, work.path() / "a-uninterrupted.stderr");
}

}  // namespace
}  // namespace trainlock::validate
