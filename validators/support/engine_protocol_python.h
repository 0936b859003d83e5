// The Python engines' copy of the engine protocol's declaration (engine_events.h,
// engine_protocol.h) as a Python module: the protocol's name, its line limit, the error kinds
// with their exit codes and every event with the members it may carry. The module is committed
// as validators/engines/python/trainlock_engine/protocol_generated.py (so the package runs from
// the source tree as it does from the binary's embedded, pinned copy), written by the
// trainlock-engine-protocol-py program (`cmake --build build --target engine_protocol_py`);
// EngineProtocol.TheCommittedPythonModuleIsTheGeneratedOne fails while the two differ.
#pragma once

#include <string>

namespace trainlock::validate {

// Where the module lives, relative to the source tree.
inline constexpr const char* kPythonProtocolModule =
    "validators/engines/python/trainlock_engine/protocol_generated.py";

// The module's text.
std::string EngineProtocolPythonModule();

}  // namespace trainlock::validate
