// The engine protocol is declared once (support/engine_events.h, engine_protocol.h); the Python
// engines' table (trainlock_engine/protocol_generated.py, whose EVENTS the Emitter refuses
// anything outside of) is generated from it and committed as generated.
#include "support/engine_protocol.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>

#include "report/check_metrics.h"
#include "support/engine_protocol_python.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

// The committed module, as Debian's Python reads it through protocol.py (which imports nothing
// but the standard library): its EVENTS, EXIT_CODES, PROTOCOL and MAX_LINE.
nlohmann::json PythonTables() {
  const std::string engine = (testing::SourceDir() / "validators/engines/python").string();
  const testing::RunResult r = testing::RunCommand(
      {"/usr/bin/python3", "-I", "-B", "-c",
       "import json, sys; sys.path.insert(0, sys.argv[1]); from trainlock_engine import "
       "protocol as p; print(json.dumps([p.EVENTS, p.EXIT_CODES, p.PROTOCOL, p.MAX_LINE]))",
       engine});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

TEST(EngineProtocol, TheCommittedPythonModuleIsTheGeneratedOne) {
  const std::string committed = testing::ReadFile(testing::SourceDir() / kPythonProtocolModule);
  EXPECT_TRUE(committed == EngineProtocolPythonModule())
      << kPythonProtocolModule << " is not what the protocol's declaration generates: run "
      << "`cmake --build build --target engine_protocol_py` and commit the file";
}

TEST(EngineProtocol, ThePythonEnginesReadTheDeclaredTable) {
  const nlohmann::json python = PythonTables();
  ASSERT_TRUE(python.is_array() && python.size() == 4) << python.dump();
  std::vector<std::string> events;
  for (const auto& [event, members] : python[0].items()) {
    events.push_back(event);
    for (const auto& member : members)
      EXPECT_TRUE(ProtocolDeclares(event, member.get<std::string>())) << event << " " << member;
  }
  EXPECT_EQ(events.size(), EngineProtocolEvents().size());
  for (const ProtocolEvent& e : EngineProtocolEvents())
    EXPECT_EQ(python[0].value(std::string(e.name), nlohmann::json()).size(), e.members.size())
        << e.name;
  EXPECT_EQ(python[1].value(kErrorCheckpoint, 0), 4);
  EXPECT_EQ(python[1].value(kErrorOutOfMemory, 0), 5);
  EXPECT_EQ(python[2], kEngineProtocol);
  EXPECT_EQ(python[3], kMaxEngineLineBytes);
}

TEST(EngineProtocol, HelloComesFirstAndDoneCarriesNothing) {
  ASSERT_FALSE(EngineProtocolEvents().empty());
  EXPECT_EQ(EngineProtocolEvents().front().name, "hello");
  EXPECT_TRUE(ProtocolHasEvent("done"));
  EXPECT_FALSE(ProtocolDeclares("done", "step"));
}

TEST(EngineProtocol, TheMeasurementCarriesTrainStepsMetrics) {
  for (const char* member : {"step_time_s", "peak_allocated_bytes", "mode", "measured_shape"})
    EXPECT_TRUE(ProtocolDeclares("measurement", member)) << member;
}

TEST(EngineProtocol, TheRestoredAndCheckpointBodiesAreTheTypedOnes) {
  RestoredEvent restored;
  restored.step = 4;
  restored.rng_restored = true;
  restored.verified_files = 7;
  CheckpointEvent checkpoint;
  checkpoint.phase = "committed";
  checkpoint.blocking_s = 0.3;
  checkpoint.staging_alloc_s = 0.1;
  // (items() of a temporary would outlive it: the JSON is kept.)
  const nlohmann::json restored_body = ToJson(restored), checkpoint_body = ToJson(checkpoint);
  for (const auto& [key, value] : restored_body.items())
    EXPECT_TRUE(ProtocolDeclares("restored", key)) << key;
  for (const auto& [key, value] : checkpoint_body.items())
    EXPECT_TRUE(ProtocolDeclares("checkpoint", key)) << key;
}

TEST(EngineProtocol, AnIllTypedRestoreFlagIsNoRestore) {
  // The coordinator counts a source of state restored only when the engine says true.
  const auto body = nlohmann::json::parse(
      R"({"step": 4, "rng_restored": "yes", "data_restored": true, "bytes": 1.5e3})");
  const RestoredEvent read = ReadMetrics<RestoredEvent>(body);
  EXPECT_FALSE(read.rng_restored);
  EXPECT_EQ(read.data_restored, std::optional<bool>(true));
  EXPECT_EQ(read.step, std::optional<int64_t>(4));
  EXPECT_EQ(read.bytes, std::optional<int64_t>(1500));
}

TEST(EngineProtocol, WhatIsNotDeclaredIsNot) {
  EXPECT_FALSE(ProtocolDeclares("state", "digests"));  // the coordinator digests the file itself
  EXPECT_FALSE(ProtocolHasEvent("progress"));
  EXPECT_FALSE(ProtocolDeclares("progress", "step"));
}

}  // namespace
}  // namespace trainlock::validate
