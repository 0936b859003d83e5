// The Python engines' protocol module; see engine_protocol_python.h.
#include "support/engine_protocol_python.h"

#include <string_view>

#include "project/validate_defaults.h"
#include "support/engine_events.h"
#include "support/engine_protocol.h"

namespace trainlock::validate {
namespace {

std::string PythonString(std::string_view text) {
  return "\"" + std::string(text) + "\"";  // names, kinds and points: [a-z0-9_./-] only
}

std::string ErrorKinds() {
  std::string out = "EXIT_CODES = {\n";
#define TRAINLOCK_PYTHON_ERROR_KIND(kind, code) \
  out += "    " + PythonString(#kind) + ": " + std::to_string(code) + ",\n";
  TRAINLOCK_ENGINE_ERROR_KINDS(TRAINLOCK_PYTHON_ERROR_KIND)
#undef TRAINLOCK_PYTHON_ERROR_KIND
  return out + "}\n";
}

// The points --hold-save-at names, in the order a save passes them.
std::string SavePoints() {
  std::string out = "SAVE_POINTS = (\n";
#define TRAINLOCK_PYTHON_SAVE_POINT(name, text) out += "    " + PythonString(text) + ",\n";
  TRAINLOCK_SAVE_POINTS(TRAINLOCK_PYTHON_SAVE_POINT)
#undef TRAINLOCK_PYTHON_SAVE_POINT
  return out + ")\n";
}

std::string Events() {
  std::string out = "EVENTS = {\n";
  for (const ProtocolEvent& e : EngineProtocolEvents()) {
    if (e.members.empty()) {
      out += "    " + PythonString(e.name) + ": (),\n";
      continue;
    }
    out += "    " + PythonString(e.name) + ": (\n";
    for (std::string_view member : e.members) out += "        " + PythonString(member) + ",\n";
    out += "    ),\n";
  }
  return out + "}\n";
}

}  // namespace

std::string EngineProtocolPythonModule() {
  return std::string(
             "# Generated from the engine protocol's declaration (validators/support/"
             "engine_events.h,\n"
             "# engine_protocol.cc) by trainlock-engine-protocol-py; do not edit. Regenerate "
             "with\n"
             "# `cmake --build build --target engine_protocol_py`.\n"
             "\"\"\"The engine protocol as every engine speaks it: its name, the longest line, "
             "the most steady-state\nsaves, the suffix of a final state's file allocated ahead, "
             "the error kinds "
             "with the exit code of each, and every event with the members it may carry "
             "(protocol.py).\"\"\"\n\n") +
         "PROTOCOL = " + PythonString(kEngineProtocol) + "\n" +
         "MAX_LINE = " + std::to_string(kMaxEngineLineBytes) + "\n" +
         "MAX_STEADY_SAVES = " + std::to_string(kMaxSteadySaves) + "\n" +
         "PREPARED_STATE_SUFFIX = " + PythonString(kPreparedStateSuffix) + "\n\n" + ErrorKinds() +
         "\n" + SavePoints() + "\n" + Events();
}

}  // namespace trainlock::validate
