// A checkpoint's run state, checked before use (see checkpoint_state.h).
#include "engines/native/checkpoint_state.h"

#include "base/diagnostic.h"
#include "base/sha256.h"
#include "engines/native/checkpoint_manifest.h"

namespace trainlock::validate {

CheckpointRunState ReadCheckpointRunState(const nlohmann::json& state,
                                          const std::string& manifest_path) {
  if (!state.is_object()) throw CheckpointError(manifest_path + ": state is not an object");
  CheckpointRunState s;
  const auto sha = state.find("spec_sha256");
  if (sha == state.end() || !sha->is_string() || !IsSha256Hex(sha->get<std::string>()))
    throw CheckpointError(manifest_path + ": state.spec_sha256 is not a SHA-256");
  s.spec_sha256 = sha->get<std::string>();
  const auto spec = state.find("spec");
  if (spec == state.end()) throw CheckpointError(manifest_path + ": state.spec is missing");
  try {
    s.spec = ReadEngineSpec(*spec, manifest_path);
  } catch (const InputError& e) {
    // "spec.data.length ... is over ...": the member as the state names it.
    throw CheckpointError(manifest_path + ": state." + e.diagnostics().items().front().message);
  }
  return s;
}

}  // namespace trainlock::validate
