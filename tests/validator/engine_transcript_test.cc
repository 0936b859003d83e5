// The engine protocol's fold (validators/support/engine_transcript.h): what an engine says on
// stdout becomes the result the round trip's checks read, and hostile output is ignored,
// counted and never trusted.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/engine_transcript.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

TEST(EngineTranscript, StepEventsBecomeLossesInOrder) {
  EngineTranscript t;
  EXPECT_EQ(t.Add(R"({"event":"step","step":1,"loss":2.5})"), "step");
  EXPECT_EQ(t.Add(R"({"event":"step","step":2,"loss":2.25})"), "step");
  const nlohmann::json& losses = t.result()["losses"];
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_EQ(losses[1]["step"], 2);
  EXPECT_EQ(losses[1]["loss"], 2.25);
}

TEST(EngineTranscript, CheckpointPhasesAreTrackedSeparately) {
  EngineTranscript t;
  t.Add(R"({"event":"checkpoint","phase":"started","step":4,"async":true})");
  EXPECT_EQ(t.LastCheckpoint("started"), 4);
  EXPECT_FALSE(t.LastCheckpoint("committed"));
  t.Add(R"({"event":"checkpoint","phase":"committed","step":4,"bytes":10,"seconds":0.1})");
  EXPECT_EQ(t.LastCheckpoint("committed"), 4);
  EXPECT_EQ(t.result()["save"]["bytes"], 10);
  EXPECT_FALSE(t.result()["save"].contains("event"));
}

TEST(EngineTranscript, StateDigestsBecomeTheFinalStateFingerprints) {
  EngineTranscript t;
  t.Add(R"({"event":"state","step":6,"digests":{"param/w":"ab","rng/torch_cpu":"cd"},"bytes":8})");
  EXPECT_EQ(t.result()["final_state"]["fingerprints"]["param/w"], "ab");
  EXPECT_EQ(t.result()["final_state"]["bytes"], 8);
}

TEST(EngineTranscript, EvalEventsLandWhereTheChecksReadThem) {
  EngineTranscript t;
  t.Add(R"({"event":"eval","when":"after_save","loss":1.5})");
  t.Add(R"({"event":"eval","when":"after_restore","loss":1.5})");
  t.Add(R"({"event":"eval","when":"portable","loss":1.25})");
  EXPECT_EQ(t.result()["eval_after_save"], 1.5);
  EXPECT_EQ(t.result()["eval_after_restore"], 1.5);
  EXPECT_EQ(t.result()["eval"], 1.25);
}

TEST(EngineTranscript, HelloNamesTheDeviceOfTrainStep) {
  EngineTranscript t;
  t.Add(
      R"({"event":"hello","engine":"ddp","device":"cpu","world_size":2,"versions":{"torch":"1.13.1"}})");
  EXPECT_EQ(t.result()["device"], "cpu");
  EXPECT_EQ(t.result()["hello"]["engine"], "ddp");
}

TEST(EngineTranscript, AnArtifactIsRecordedAsVerifiedByTheWorker) {
  EngineTranscript t;
  t.Add(
      R"({"event":"artifact","path":"data/a.bin","sha256":"00","bytes":4,"verified_by":"nobody"})");
  const auto step = ReadMetrics<TrainStepMetrics>(t.result());
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
  EXPECT_EQ(t.result()["protocol_warnings"]["ignored_lines"], 3);
  EXPECT_FALSE(t.result().contains("losses"));
}

TEST(EngineTranscript, ADeeplyNestedLineIsRefusedNotParsed) {
  EngineTranscript t;
  std::string deep =
      R"({"event":"error","message":)" + std::string(10000, '[') + std::string(10000, ']') + "}";
  EXPECT_EQ(t.Add(deep), "");
  EXPECT_FALSE(t.result().contains("error"));
}

TEST(EngineTranscript, AnOversizedLineIsRefused) {
  EngineTranscript t;
  std::string huge = R"({"event":"step","step":1,"loss":1,"pad":")" +
                     std::string(kMaxEngineLineBytes, 'x') + "\"}";
  EXPECT_EQ(t.Add(huge), "");
  EXPECT_FALSE(t.result().contains("losses"));
}

TEST(EngineTranscript, EventsBeyondTheCapAreIgnored) {
  EngineTranscript t;
  for (size_t i = 0; i < kMaxEngineEvents; ++i) t.Add(R"({"event":"done"})");
  EXPECT_EQ(t.Add(R"({"event":"step","step":1,"loss":1})"), "");
  EXPECT_FALSE(t.result().contains("losses"));
}

TEST(EngineTranscript, RecordedDdpTranscriptsFoldToAResumableRun) {
  // Transcripts recorded from the ddp engine on Debian's torch (tests/engines/transcripts).
  const auto dir = testing::SourceDir() / "tests/engines/transcripts";
  if (!std::filesystem::exists(dir / "ddp-uninterrupted.jsonl"))
    GTEST_SKIP() << "no recorded transcripts under " << dir;
  EngineTranscript t;
  std::ifstream in(dir / "ddp-uninterrupted.jsonl");
  for (std::string line; std::getline(in, line);) t.Add(line);
  EXPECT_TRUE(t.result().value("done", false));
  EXPECT_FALSE(t.result()["losses"].empty());
  EXPECT_FALSE(t.result()["final_state"]["fingerprints"].empty());
  EXPECT_FALSE(t.result().contains("protocol_warnings"));
}

}  // namespace
}  // namespace trainlock::validate
