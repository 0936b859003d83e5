// The run a round trip trains, resolved once from the project's lock and training config into
// the engine spec (run/engine_spec.h) that every engine process reads, the native worker's
// included: the rules of what runs (weights only when .safetensors files are pinned, the
// synthetic stream's length, where a pinned file is) are written here and nowhere else.
#pragma once

#include <cstdint>

#include "project/project.h"
#include "run/engine_spec.h"

namespace trainlock::validate {

// The spec for a round trip of `steps` steps over project.dir's lock (which must exist),
// trained by `engine`. Throws ArtifactPathError when a pinned file leads out of the project
// (ResolvePinnedFile's rule): the round trip then trains nothing.
EngineSpec ResolveEngineSpec(const Project& project, int64_t steps, const std::string& engine);

}  // namespace trainlock::validate
