// What a checkpoint's state says the run was (manifest.json's "state": the engine spec it was
// trained from and that spec's SHA-256), read without trusting it and without LibTorch, so
// that the fuzz build exercises it. The state is written by the validator, but a checkpoint
// directory is only as trustworthy as the disk it sits on: the spec is read as any spec is
// (run/engine_spec.h: every member checked for type and range) before anything is built.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "run/engine_spec.h"

namespace trainlock::validate {

struct CheckpointRunState {
  EngineSpec spec;
  std::string spec_sha256;  // the spec file's, as the saving process read it
};

// The run `state` describes. Throws CheckpointError naming `manifest_path` and the member when
// one is missing, mistyped or out of range; never a JSON library exception.
CheckpointRunState ReadCheckpointRunState(const nlohmann::json& state,
                                          const std::string& manifest_path);

}  // namespace trainlock::validate
