// The GPU architectures a lock's target must be compiled for, from its accelerators and the
// catalog: CUDA compute capabilities ("90") or AMD gfx targets ("gfx942"). What a custom-op
// build takes (examples/ops: TRAINLOCK_OPS_CUDA_ARCHS / TRAINLOCK_OPS_HIP_ARCHS).
#pragma once

#include <string>
#include <vector>

#include "compat/catalog.h"
#include "project/project.h"

namespace trainlock {

// Sorted and unique. Throws InputError naming the lock (or manifest) when the project has no
// such target, the target is "cpu", or an accelerator is not in the catalog.
std::vector<std::string> TargetArchitectures(const Project& project, const std::string& target,
                                             const Catalog& catalog);

}  // namespace trainlock
