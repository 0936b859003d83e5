// The engine protocol's events (trainlock.engine/1) and the members each may carry, declared
// once for every engine: the Python engines' table (trainlock_engine/protocol.py EVENTS) is
// checked against this one by a test, the native worker refuses to emit an undeclared member,
// and docs/validate.md's event table describes the same members. `measurement` carries
// train.step's metrics (check_metrics.h's TrainStepMetrics keys); `restored` and `checkpoint`
// carry check_metrics.h's RestoredEvent and CheckpointEvent, which both sides read and write
// typed.
#pragma once

#include <string_view>
#include <vector>

namespace trainlock::validate {

// The `error` event's kinds the round trip's checks tell apart (docs/validate.md, "The engine
// protocol"): a step that does not fit, a checkpoint that did not verify, a pinned file that is
// not the lock's, an engine that cannot run here, a process that broke the protocol.
inline constexpr const char* kErrorOutOfMemory = "out_of_memory";
inline constexpr const char* kErrorCheckpoint = "checkpoint";
inline constexpr const char* kErrorIntegrity = "integrity";
inline constexpr const char* kErrorUnsupported = "unsupported";
inline constexpr const char* kErrorProtocol = "protocol";

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
