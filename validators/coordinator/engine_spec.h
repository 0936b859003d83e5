// The run a Python engine trains (`trainlock.engine-spec/1`, docs/validate.md "The engine
// protocol"): what the coordinator resolved from the lock and the training config, written
// as one JSON file that every engine process reads instead of parsing the project itself.
// Pinned files go down with the lock's hashes, which the engine verifies while reading them.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>

#include "project/project.h"

namespace trainlock::validate {

inline constexpr const char* kEngineSpecSchema = "trainlock.engine-spec/1";

// The spec for a round trip of `steps` steps over project.dir's lock (which must exist).
// Throws InputError when a pinned file leads out of the project (ResolvePinnedFile's rule).
nlohmann::json EngineSpec(const Project& project, int64_t steps);

}  // namespace trainlock::validate
