// The engine protocol is declared once (support/engine_protocol.h); the Python engines' own
// table (trainlock_engine/protocol.py EVENTS, whose Emitter refuses anything else) must say
// nothing the declaration does not.
#include "support/engine_protocol.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>
#include <string>

#include "test_support.h"

namespace trainlock::validate {
namespace {

// protocol.EVENTS as Debian's Python reads it (protocol.py imports nothing but the standard
// library).
nlohmann::json PythonTable() {
  const std::string engine = (testing::SourceDir() / "validators/engines/python").string();
  const testing::RunResult r = testing::RunCommand(
      {"/usr/bin/python3", "-I", "-B", "-c",
       "import json, sys; sys.path.insert(0, sys.argv[1]); from trainlock_engine import "
       "protocol; print(json.dumps(protocol.EVENTS))",
       engine});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

TEST(EngineProtocol, ThePythonTableIsTheDeclaredOne) {
  const nlohmann::json python = PythonTable();
  ASSERT_TRUE(python.is_object()) << python.dump();
  std::set<std::string> python_events;
  for (const auto& [event, members] : python.items()) {
    python_events.insert(event);
    EXPECT_TRUE(ProtocolHasEvent(event)) << "the Python engines emit " << event;
    for (const auto& member : members)
      EXPECT_TRUE(ProtocolDeclares(event, member.get<std::string>()))
          << "the Python engines' " << event << " carries " << member;
  }
  for (const ProtocolEvent& e : EngineProtocolEvents())
    EXPECT_TRUE(python_events.count(std::string(e.name))) << e.name << " is not in protocol.py";
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

TEST(EngineProtocol, WhatIsNotDeclaredIsNot) {
  EXPECT_FALSE(ProtocolDeclares("state", "digests"));  // the coordinator digests the file itself
  EXPECT_FALSE(ProtocolHasEvent("progress"));
  EXPECT_FALSE(ProtocolDeclares("progress", "step"));
}

}  // namespace
}  // namespace trainlock::validate
