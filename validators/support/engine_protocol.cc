// The engine protocol's table; see engine_protocol.h. Member names are spelled here once (the
// CheckMetrics scan treats this file as a definition, as it does check_metrics.h).
#include "support/engine_protocol.h"

#include <algorithm>

#include "report/check_metrics.h"

namespace trainlock::validate {
namespace {

#define TRAINLOCK_PROTOCOL_MEMBER(type, name) #name,

std::vector<ProtocolEvent> MakeTable() {
  return {
      {"hello",
       {"protocol", "engine", "role", "pid", "world_size", "device", "device_name", "versions"}},
      {"artifact", {TRAINLOCK_ARTIFACT_ROW(TRAINLOCK_PROTOCOL_MEMBER)}},
      {"setup", {"data", "model", "seconds"}},
      {"restored", {TRAINLOCK_RESTORED_EVENT(TRAINLOCK_PROTOCOL_MEMBER)}},
      {"step", {"step", "loss"}},
      {"measurement", {TRAINLOCK_TRAIN_STEP_METRICS(TRAINLOCK_PROTOCOL_MEMBER)}},
      {"checkpoint", {TRAINLOCK_CHECKPOINT_EVENT(TRAINLOCK_PROTOCOL_MEMBER)}},
      {"eval", {"when", "loss", "step"}},
      {"state", {"step", "bytes", "file"}},
      {"error", {"kind", "message", "step", "memory"}},
      {"done", {}},
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
