// The engine protocol's fold (validators/support/engine_transcript.h): what an engine says on
// stdout becomes the result the round trip's checks read, and hostile output is ignored,
// counted and never trusted.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "project/validate_defaults.h"
#include "support/engine_transcript.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

TEST(EngineTranscript, StepEventsBecomeLossesInOrder) {
  EngineTranscript t;
  EXPECT_EQ(t.Add(R"({"event":"step","step":1,"loss":2.5})"), "step");
  EXPECT_EQ(t.Add(R"({"event":"step","step":2,"loss":2.25})"), "step");
  const std::vector<StepEvent>& losses = t.result().losses;
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_EQ(losses[1].step, 2);
  EXPECT_EQ(losses[1].loss, 2.25);
}

TEST(EngineTranscript, CheckpointPhasesAreTrackedSeparately) {
  EngineTranscript t;
  t.Add(R"({"event":"checkpoint","phase":"started","step":4,"async":true})");
  EXPECT_EQ(t.LastCheckpoint("started"), 4);
  EXPECT_FALSE(t.LastCheckpoint("committed"));
  t.Add(R"({"event":"checkpoint","phase":"committed","step":4,"bytes":10,"seconds":0.1})");
  EXPECT_EQ(t.LastCheckpoint("committed"), 4);
  ASSERT_TRUE(t.result().save);
  EXPECT_EQ(t.result().save->bytes, 10);
  EXPECT_EQ(t.result().save->step, 4);
  EXPECT_EQ(t.result().save_started->step, 4);
}

// A save held at --hold-save-at's point (the kill during a save) is its own phase, with the
// point, and never counts as committed.
TEST(EngineTranscript, AHeldSaveIsTrackedWithItsPointAndIsNotCommitted) {
  EngineTranscript t;
  t.Add(R"({"event":"checkpoint","phase":"started","step":4,"async":true})");
  EXPECT_FALSE(t.LastCheckpoint("held"));
  t.Add(R"({"event":"checkpoint","phase":"held","step":4,"point":"mid-file"})");
  EXPECT_EQ(t.LastCheckpoint("held"), 4);
  EXPECT_FALSE(t.LastCheckpoint("committed"));
  ASSERT_TRUE(t.result().save_held);
  EXPECT_EQ(t.result().save_held->point, "mid-file");
  EXPECT_EQ(t.violation(), "");
}

// A steady-state save (--steady-saves) is kept in order with its costs, and never counts as the
// round trip's checkpoint: nothing restores it.
TEST(EngineTranscript, SteadySavesAreKeptInOrderAndAreNotTheCheckpoint) {
  EngineTranscript t;
  t.Add(R"({"event":"checkpoint","phase":"committed","step":4,"bytes":10,"seconds":0.1})");
  t.Add(R"({"event":"checkpoint","phase":"steady","step":11,"ordinal":2,"stall_s":0.3})");
  t.Add(R"({"event":"checkpoint","phase":"steady","step":17,"ordinal":3,"stall_s":0.2})");
  ASSERT_EQ(t.result().steady_saves.size(), 2u);
  EXPECT_EQ(t.result().steady_saves[1].ordinal, 3);
  EXPECT_EQ(t.result().steady_saves[0].stall_s, 0.3);
  EXPECT_EQ(t.LastCheckpoint("committed"), 4);
  EXPECT_EQ(t.result().save->step, 4);
  EXPECT_EQ(t.violation(), "");
}

// More steady-state saves than any run may ask for is an engine flooding the fold: a violation.
TEST(EngineTranscript, MoreSteadySavesThanTheCapAreAViolation) {
  EngineTranscript t;
  for (int i = 0; i < kMaxSteadySaves; ++i)
    t.Add(R"({"event":"checkpoint","phase":"steady","step":9,"ordinal":2})");
  EXPECT_EQ(t.violation(), "");
  t.Add(R"({"event":"checkpoint","phase":"steady","step":9,"ordinal":2})");
  EXPECT_NE(t.violation().find("more than 16 steady-state saves"), std::string::npos)
      << t.violation();
}

// The after_save evals that say their step are kept by step: a process that saves twice is
// judged at the step its checkpoint was restored at.
TEST(EngineTranscript, AfterSaveEvalsAreKeptByTheirStep) {
  EngineTranscript t;
  t.Add(R"({"event":"eval","when":"after_save","loss":2.5,"step":3})");
  t.Add(R"({"event":"eval","when":"after_save","loss":2.25,"step":4})");
  EXPECT_EQ(t.result().eval_after_save, 2.25);
  EXPECT_EQ(t.result().eval_after_save_at, (std::map<int64_t, double>{{3, 2.5}, {4, 2.25}}));
}

// The coordinator digests the state file itself (coordinator/state_file.h): digests an engine
// prints are never folded in, so nothing downstream can read them.
TEST(EngineTranscript, AStateEventKeepsItsFileAndSizeButNotTheDigestsAnEngineClaims) {
  EngineTranscript t;
  t.Add(R"({"event":"state","step":6,"digests":{"param/w":"ab"},"bytes":8,"file":"/w/a.st"})");
  ASSERT_TRUE(t.result().final_state);
  EXPECT_EQ(ToJson(*t.result().final_state), nlohmann::json({{"bytes", 8}, {"file", "/w/a.st"}}));
}

TEST(EngineTranscript, EvalEventsLandWhereTheChecksReadThem) {
  EngineTranscript t;
  t.Add(R"({"event":"eval","when":"after_save","loss":1.5})");
  t.Add(R"({"event":"eval","when":"after_restore","loss":1.5})");
  t.Add(R"({"event":"eval","when":"portable","loss":1.25})");
  EXPECT_EQ(t.result().eval_after_save, 1.5);
  EXPECT_EQ(t.result().eval_after_restore, 1.5);
  EXPECT_EQ(t.result().eval, 1.25);
}

TEST(EngineTranscript, HelloNamesTheDeviceOfTrainStep) {
  EngineTranscript t;
  t.Add(
      R"({"event":"hello","engine":"ddp","device":"cpu","world_size":2,"versions":{"torch":"1.13.1"}})");
  EXPECT_EQ(t.result().said.device, "cpu");
  ASSERT_TRUE(t.result().hello);
  EXPECT_EQ(t.result().hello->engine, "ddp");
  EXPECT_EQ(t.result().hello->world_size, 2);
}

TEST(EngineTranscript, AnArtifactIsRecordedAsVerifiedByTheWorker) {
  EngineTranscript t;
  t.Add(
      R"({"event":"artifact","path":"data/a.bin","sha256":"00","bytes":4,"verified_by":"nobody"})");
  const TrainStepMetrics& step = t.result().said;
  ASSERT_TRUE(step.artifacts);
  ASSERT_EQ(step.artifacts->size(), 1u);
  EXPECT_EQ((*step.artifacts)[0].verified_by, "worker");
  EXPECT_EQ((*step.artifacts)[0].path, "data/a.bin");
}

TEST(EngineTranscript, LinesThatAreNotEventsAreIgnoredAndCounted) {
  EngineTranscript t;
  EXPECT_EQ(t.Add("Epoch 1: 100%|#####| a library's progress bar"), "");
  EXPECT_EQ(t.Add("{not json"), "");
  EXPECT_EQ(t.Add(R"({"step":1})"), "");
  EXPECT_EQ(t.Add(R"({"event":"teleport"})"), "teleport");
  EXPECT_EQ(t.result().ignored_lines, 3);
  EXPECT_NE(t.result().first_ignored.find("not JSON"), std::string::npos)
      << t.result().first_ignored;
  EXPECT_TRUE(t.result().losses.empty());
}

TEST(EngineTranscript, ADeeplyNestedLineIsRefusedNotParsed) {
  EngineTranscript t;
  std::string deep =
      R"({"event":"error","message":)" + std::string(10000, '[') + std::string(10000, ']') + "}";
  EXPECT_EQ(t.Add(deep), "");
  EXPECT_FALSE(t.result().error);
}

TEST(EngineTranscript, AnOversizedLineIsAViolationNamingItsByteOffset) {
  EngineTranscript t;
  t.Add(R"({"event":"done"})");
  t.Add("");
  std::string huge = R"({"event":"step","step":1,"loss":1,"pad":")" +
                     std::string(kMaxEngineLineBytes, 'x') + "\"}";
  EXPECT_EQ(t.Add(huge), "");
  EXPECT_TRUE(t.result().losses.empty());
  EXPECT_EQ(t.violation(), "a line longer than 1048576 bytes at byte offset 18 of its stdout");
}

TEST(EngineTranscript, AnOversizedLineThatIsNotAnEventIsAViolationToo) {
  EngineTranscript t;
  EXPECT_EQ(t.Add(std::string(kMaxEngineLineBytes + 1, 'x')), "");
  EXPECT_EQ(t.violation(), "a line longer than 1048576 bytes at byte offset 0 of its stdout");
}

TEST(EngineTranscript, LinesBeyondTheCapAreAViolationWhateverTheyHold) {
  EngineTranscript t;
  for (size_t i = 0; i < kMaxEngineLines; ++i) t.Add(i % 2 ? "{}" : "");
  EXPECT_EQ(t.violation(), "");
  EXPECT_EQ(t.Add(R"({"event":"done"})"), "");
  EXPECT_EQ(t.violation(), "more than 200000 lines on its stdout");
}

TEST(EngineTranscript, EventsBeyondTheCapAreAViolation) {
  EngineTranscript t;
  for (size_t i = 0; i < kMaxEngineEvents; ++i) t.Add(R"({"event":"done"})");
  EXPECT_EQ(t.violation(), "");
  EXPECT_EQ(t.Add(R"({"event":"step","step":1,"loss":1})"), "");
  EXPECT_TRUE(t.result().losses.empty());
  EXPECT_NE(t.violation().find("more than 100000 events"), std::string::npos) << t.violation();
}

// ---- the engine is untrusted: what the lock says its hello must say ----

EngineExpectation DdpLock() {
  return {"ddp", {"1.13.0"}, 1};
}

std::string Hello(const std::string& protocol = kEngineProtocol, const std::string& engine = "ddp",
                  const std::string& torch = "1.13.0", int world = 1) {
  return nlohmann::json{{"event", "hello"}, {"protocol", protocol},
                        {"engine", engine}, {"world_size", world},
                        {"device", "cpu"},  {"versions", {{"torch", torch}}}}
      .dump();
}

TEST(EngineTranscriptHello, TheLocksEngineTorchAndWorldSizePass) {
  EngineTranscript t(DdpLock());
  EXPECT_EQ(t.Add(Hello()), "hello");
  EXPECT_EQ(t.Add(R"({"event":"done"})"), "done");
  t.End(true);
  EXPECT_EQ(t.violation(), "");
}

TEST(EngineTranscriptHello, ADistributionBuildOfThePinnedReleaseMatchesIt) {
  EngineTranscript t(DdpLock());
  t.Add(Hello(kEngineProtocol, "ddp", "1.13.0a0"));  // Debian's python3-torch
  EXPECT_EQ(t.violation(), "");
}

TEST(EngineTranscriptHello, AnotherTorchThanTheLocksIsAViolation) {
  EngineTranscript t(DdpLock());
  t.Add(Hello(kEngineProtocol, "ddp", "0.0.1+evil"));
  EXPECT_NE(t.violation().find("names torch \"0.0.1+evil\", the lock pins 1.13.0"),
            std::string::npos)
      << t.violation();
  EXPECT_FALSE(t.result().hello);
}

TEST(EngineTranscriptHello, AnotherProtocolIsAViolation) {
  EngineTranscript t(DdpLock());
  t.Add(Hello("trainlock.engine/999"));
  EXPECT_NE(t.violation().find("trainlock.engine/999"), std::string::npos) << t.violation();
}

TEST(EngineTranscriptHello, AnotherEngineThanTheLocksIsAViolation) {
  EngineTranscript t(DdpLock());
  t.Add(Hello(kEngineProtocol, "native"));
  EXPECT_NE(t.violation().find("names engine \"native\", the lock's is ddp"), std::string::npos)
      << t.violation();
}

TEST(EngineTranscriptHello, AnotherWorldSizeThanTheProcessRunsIsAViolation) {
  EngineTranscript t(DdpLock());
  t.Add(Hello(kEngineProtocol, "ddp", "1.13.0", 8));
  EXPECT_NE(t.violation().find("world size 8, this process runs 1"), std::string::npos)
      << t.violation();
}

TEST(EngineTranscriptHello, AnEventBeforeHelloIsAViolationAndNotFolded) {
  EngineTranscript t(DdpLock());
  EXPECT_EQ(t.Add(R"({"event":"step","step":1,"loss":1})"), "");
  EXPECT_TRUE(t.result().losses.empty());
  EXPECT_NE(t.violation().find("before its hello"), std::string::npos) << t.violation();
}

TEST(EngineTranscriptHello, NoHelloAtAllIsAViolation) {
  EngineTranscript t(DdpLock());
  t.End(true);
  EXPECT_EQ(t.violation(), "the engine never said hello");
}

TEST(EngineTranscriptHello, ACleanExitWithoutDoneOrErrorIsAViolation) {
  EngineTranscript t(DdpLock());
  t.Add(Hello());
  t.End(true);
  EXPECT_EQ(t.violation(), "the engine exited without done or error");
}

TEST(EngineTranscriptHello, AProcessKilledAfterItsCommitNeedsNoDone) {
  EngineTranscript t(DdpLock());
  t.Add(Hello());
  t.End(false);
  EXPECT_EQ(t.violation(), "");
}

TEST(EngineTranscriptHello, ARefusalsHelloWithoutAWorldSizeCannotEndDone) {
  EngineTranscript t(DdpLock());
  t.Add(R"({"event":"hello","protocol":"trainlock.engine/1","engine":"ddp","world_size":null,)"
        R"("versions":{}})");
  t.Add(R"({"event":"done"})");
  t.End(true);
  EXPECT_NE(t.violation().find("named no world size"), std::string::npos) << t.violation();
}

// ---- every number an engine reports is range-checked before it is printed or judged ----

TEST(EngineTranscriptNumbers, AnAbsurdThroughputIsAViolation) {
  EngineTranscript t;
  EXPECT_EQ(t.Add(R"({"event":"measurement","step_time_s":0.1,"tokens_per_s":1e300})"), "");
  EXPECT_FALSE(t.result().measurement);
  EXPECT_NE(t.violation().find("measurement.tokens_per_s is 1e+300"), std::string::npos)
      << t.violation();
}

TEST(EngineTranscriptNumbers, ANegativeStepTimeIsAViolation) {
  EngineTranscript t;
  t.Add(R"({"event":"measurement","step_time_s":-1e308})");
  EXPECT_NE(t.violation().find("measurement.step_time_s"), std::string::npos) << t.violation();
}

TEST(EngineTranscriptNumbers, ANumberBeyondADoubleIsAViolation) {
  EngineTranscript t;
  t.Add(R"({"event":"step","step":1,"loss":1e400})");
  EXPECT_TRUE(t.result().losses.empty());
}

TEST(EngineTranscriptNumbers, NestedNumbersAreCheckedToo) {
  EngineTranscript t;
  t.Add(R"({"event":"measurement","deterministic":{"step_times_s":[0.1,-3]}})");
  EXPECT_NE(t.violation().find("measurement.deterministic.step_times_s.[] is -3"),
            std::string::npos)
      << t.violation();
}

TEST(EngineTranscriptNumbers, UnknownDeviceMemoryMayBeMinusOneAndNothingElseMay) {
  EngineTranscript t;
  t.Add(R"({"event":"measurement","peak_allocated_bytes":-1,"device_total_bytes":-1})");
  EXPECT_EQ(t.violation(), "");
  t.Add(R"({"event":"measurement","step_time_s":-1})");
  EXPECT_NE(t.violation(), "");
}

// ---- artifacts: capped in number and size, folded in linear time ----

std::string Artifact(size_t i, size_t path_bytes = 10) {
  return nlohmann::json{{"event", "artifact"},
                        {"path", std::to_string(i) + std::string(path_bytes, 'p')},
                        {"sha256", "00"},
                        {"bytes", 1}}
      .dump();
}

TEST(EngineTranscriptArtifacts, EveryArtifactUpToTheCapIsRecordedInOrder) {
  EngineTranscript t;
  for (size_t i = 0; i < kMaxEngineArtifacts; ++i) t.Add(Artifact(i));
  EXPECT_EQ(t.violation(), "");
  const TrainStepMetrics& step = t.result().said;
  ASSERT_TRUE(step.artifacts);
  ASSERT_EQ(step.artifacts->size(), kMaxEngineArtifacts);
  EXPECT_EQ(step.artifacts->back().path, std::to_string(kMaxEngineArtifacts - 1) + "pppppppppp");
}

TEST(EngineTranscriptArtifacts, OneArtifactMoreThanTheCapIsAViolation) {
  EngineTranscript t;
  for (size_t i = 0; i <= kMaxEngineArtifacts; ++i) t.Add(Artifact(i));
  EXPECT_NE(t.violation().find("more than 4096 artifact events"), std::string::npos)
      << t.violation();
}

TEST(EngineTranscriptArtifacts, AnArtifactWithAHugePathIsAViolation) {
  EngineTranscript t;
  t.Add(Artifact(0, 512 * 1024));
  EXPECT_NE(t.violation().find("an artifact event longer than 8192 bytes"), std::string::npos)
      << t.violation();
  EXPECT_FALSE(t.result().said.artifacts);
}

// ---- transcripts recorded from the shipped engines (tests/engines/transcripts) ----
// Every engine that cannot run on this machine (deepspeed, hf-trainer, lightning, fsdp2) is
// held to the protocol through these: the fold the coordinator runs reads them as it reads a
// live engine.

std::filesystem::path TranscriptDir() {
  return testing::SourceDir() / "tests/engines/transcripts";
}

EngineTranscript Replay(const std::string& name) {
  EngineTranscript t;
  std::ifstream in(TranscriptDir() / (name + ".jsonl"));
  EXPECT_TRUE(in) << name;
  for (std::string line; std::getline(in, line);) t.Add(line);
  return t;
}

std::vector<double> LossesOf(const EngineTranscript& t) {
  std::vector<double> out;
  for (const StepEvent& l : t.result().losses) out.push_back(l.loss.value_or(0.0).get<double>());
  return out;
}

TEST(RecordedTranscripts, EveryRecordedRunFoldsWithoutAProtocolProblemAndEndsDoneOrWithAnError) {
  int count = 0;
  for (const auto& e : std::filesystem::directory_iterator(TranscriptDir())) {
    if (e.path().extension() != ".jsonl") continue;
    ++count;
    const EngineTranscript t = Replay(e.path().stem().string());
    const EngineFold& r = t.result();
    EXPECT_EQ(r.ignored_lines, 0) << e.path() << r.first_ignored;
    EXPECT_TRUE(r.hello) << e.path();
    EXPECT_TRUE(r.done || r.error ||
                t.LastCheckpoint("committed").has_value())  // B ends killed after its commit
        << e.path();
  }
  EXPECT_GE(count, 20);
}

// The shipped engines keep the rules an untrusted engine is held to: hello first, naming its
// engine and world size, every number in range, done or error at the end.
TEST(RecordedTranscripts, EveryRecordedRunKeepsTheHelloAndNumberRules) {
  for (const auto& e : std::filesystem::directory_iterator(TranscriptDir())) {
    if (e.path().extension() != ".jsonl") continue;
    const HelloEvent hello = Replay(e.path().stem().string()).result().hello.value_or(HelloEvent{});
    EngineExpectation expect;
    expect.engine = hello.engine.value_or("");
    expect.world_size = hello.world_size.value_or(1);
    EngineTranscript t(expect);
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) t.Add(line);
    t.End(t.result().done);
    EXPECT_EQ(t.violation(), "") << e.path();
  }
}

TEST(RecordedTranscripts, AResumedRunOfEachEngineRepeatsItsUninterruptedRunsLosses) {
  for (const std::string engine : {"ddp", "deepspeed"}) {
    const EngineTranscript a = Replay(engine + "-uninterrupted");
    const EngineTranscript c = Replay(engine + "-resumed");
    const std::vector<double> la = LossesOf(a), lc = LossesOf(c);
    ASSERT_EQ(la.size(), 6u) << engine;
    ASSERT_EQ(lc.size(), 3u) << engine;  // steps 4..6 after the restore of step 3
    EXPECT_EQ(std::vector<double>(la.begin() + 3, la.end()), lc) << engine;
    ASSERT_TRUE(c.result().restore) << engine;
    EXPECT_EQ(c.result().restore->step, 3) << engine;
  }
}

// (That their states diverge is judged from the files they write: tests/engines.)
TEST(RecordedTranscripts, ResumesWithoutTheRngOrTheDataPositionSaySoInTheirRestore) {
  for (const std::string engine : {"ddp", "deepspeed"}) {
    const EngineFold no_rng = Replay(engine + "-no-restore-rng").result();
    const EngineFold no_data = Replay(engine + "-no-restore-data").result();
    ASSERT_TRUE(no_rng.restore && no_data.restore) << engine;
    EXPECT_EQ(no_rng.restore->rng_restored, false) << engine;
    EXPECT_EQ(no_data.restore->data_restored, false) << engine;
  }
}

TEST(RecordedTranscripts, RefusalsCarryTheKindTheChecksReadThem) {
  EXPECT_EQ(Replay("hf-trainer-no-transformers").result().error.value_or(ErrorEvent{}).kind,
            "unsupported");
  EXPECT_EQ(Replay("lightning-not-installed").result().error.value_or(ErrorEvent{}).kind,
            "unsupported");
  EXPECT_EQ(Replay("deepspeed-not-installed").result().error.value_or(ErrorEvent{}).kind,
            "unsupported");
  EXPECT_EQ(Replay("fsdp2-old-torch").result().error.value_or(ErrorEvent{}).kind, "unsupported");
  EXPECT_EQ(Replay("ddp-tampered-shard").result().error.value_or(ErrorEvent{}).kind, "integrity");
  EXPECT_EQ(Replay("ddp-tampered-checkpoint").result().error.value_or(ErrorEvent{}).kind,
            "checkpoint");
  EXPECT_TRUE(Replay("ddp-tampered-shard").result().losses.empty());
}

}  // namespace
}  // namespace trainlock::validate
