// The engine protocol's table; see engine_protocol.h. The members are engine_events.h's and
// check_metrics.h's field lists (#name): no member is spelled here.
#include "support/engine_protocol.h"

#include <algorithm>

#include "report/check_metrics.h"
#include "support/engine_events.h"

namespace trainlock::validate {
namespace {

#define TRAINLOCK_PROTOCOL_MEMBER(type, name) #name,

std::vector<ProtocolEvent> MakeTable() {
  return {
      {kEventHello, {TRAINLOCK_HELLO_EVENT(TRAINLOCK_PROTOCOL_MEMBER)}},
      {kEventArtifact, {TRAINLOCK_ARTIFACT_ROW(TRAINLOCK_PROTOCOL_MEMBER)}},
      {kEventSetup, {TRAINLOCK_SETUP_EVENT(TRAINLOCK_PROTOCOL_MEMBER)}},
      {kEventRestored, {TRAINLOCK_RESTORED_EVENT(TRAINLOCK_PROTOCOL_MEMBER)}},
      {kEventStep, {TRAINLOCK_STEP_EVENT(TRAINLOCK_PROTOCOL_MEMBER)}},
      {kEventMeasurement, {TRAINLOCK_TRAIN_STEP_METRICS(TRAINLOCK_PROTOCOL_MEMBER)}},
      {kEventCheckpoint, {TRAINLOCK_CHECKPOINT_EVENT(TRAINLOCK_PROTOCOL_MEMBER)}},
      {kEventEval, {TRAINLOCK_EVAL_EVENT(TRAINLOCK_PROTOCOL_MEMBER)}},
      {kEventState, {TRAINLOCK_STATE_EVENT(TRAINLOCK_PROTOCOL_MEMBER)}},
      {kEventError, {TRAINLOCK_ERROR_EVENT(TRAINLOCK_PROTOCOL_MEMBER)}},
      {kEventDone, {}},
  };
}

#undef TRAINLOCK_PROTOCOL_MEMBER

const ProtocolEvent* Find(std::string_view event) {
  for (const ProtocolEvent& e : EngineProtocolEvents())
    if (e.name == event) return &e;
  return nullptr;
}

}  // namespace

const std::vector<ProtocolEvent>& EngineProtocolEvents() {
  static const std::vector<ProtocolEvent> table = MakeTable();
  return table;
}

bool ProtocolHasEvent(std::string_view event) {
  return Find(event) != nullptr;
}

bool ProtocolDeclares(std::string_view event, std::string_view member) {
  const ProtocolEvent* e = Find(event);
  return e && std::find(e->members.begin(), e->members.end(), member) != e->members.end();
}

}  // namespace trainlock::validate
