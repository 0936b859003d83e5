// The engine protocol's events (trainlock.engine/1) and the members each may carry, declared
// once for every engine: the Python engines' table (trainlock_engine/protocol.py EVENTS) is
// checked against this one by a test, the native worker refuses to emit an undeclared member,
// and docs/validate.md's event table describes the same members. `measurement` carries
// train.step's metrics (check_metrics.h's TrainStepMetrics keys).
#pragma once

#include <string_view>
#include <vector>

namespace trainlock::validate {

struct ProtocolEvent {
  std::string_view name;
  std::vector<std::string_view> members;
};

// Every event, `hello` first.
const std::vector<ProtocolEvent>& EngineProtocolEvents();
// Whether `event` is an event of the protocol and `member` one it may carry.
bool ProtocolDeclares(std::string_view event, std::string_view member);
bool ProtocolHasEvent(std::string_view event);

}  // namespace trainlock::validate
