// The engine protocol's events (trainlock.engine/1) and the members each may carry, declared
// once for every engine: the event bodies are engine_events.h's field lists (`measurement`
// carries train.step's metrics, check_metrics.h's TrainStepMetrics keys, and `artifact` its
// ArtifactRow); the Python engines' table (trainlock_engine/protocol_generated.py) is written
// from this one by engine_protocol_python.h; the native worker refuses to emit an undeclared
// member, and docs/validate.md's event table describes the same members.
#pragma once

#include <string_view>
#include <vector>

#include "support/engine_events.h"

namespace trainlock::validate {

// The `error` event's kinds the round trip's checks tell apart (docs/validate.md, "The engine
// protocol"): a step that does not fit, a checkpoint that did not verify, a pinned file that is
// not the lock's, an engine that cannot run here, a process that broke the protocol.
inline constexpr const char* kErrorOutOfMemory = "out_of_memory";
inline constexpr const char* kErrorCheckpoint = "checkpoint";
inline constexpr const char* kErrorIntegrity = "integrity";
inline constexpr const char* kErrorUnsupported = "unsupported";
inline constexpr const char* kErrorProtocol = "protocol";

// The suffix of the file a native process allocates its final state in, beside the name the
// coordinator gave and renamed to it once written (engines/native/state_writer.h); the
// coordinator removes one that a killed process left (coordinator/engine_process.h).
inline constexpr const char* kPreparedStateSuffix = ".prepared";

// The member that names a line's event, and the events' names in the order a process says them.
inline constexpr const char* kEventMember = "event";
inline constexpr const char* kEventHello = "hello";
inline constexpr const char* kEventArtifact = "artifact";
inline constexpr const char* kEventSetup = "setup";
inline constexpr const char* kEventRestored = "restored";
inline constexpr const char* kEventStep = "step";
inline constexpr const char* kEventMeasurement = "measurement";
inline constexpr const char* kEventCheckpoint = "checkpoint";
inline constexpr const char* kEventEval = "eval";
inline constexpr const char* kEventState = "state";
inline constexpr const char* kEventError = "error";
inline constexpr const char* kEventDone = "done";

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
