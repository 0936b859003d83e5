// Static compatibility rules: a valid project checked against the knowledge base.
//
// Finding ids (stable; documented in README.md):
//   compat.cuda-unknown        target CUDA release not in the driver table
//   compat.driver              driver-min older than the target CUDA needs
//   compat.accelerator-unknown accelerator not in the GPU catalog
//   compat.vendor              NVIDIA accelerator in a rocm target, AMD in a cuda target, or a
//                              GPU in the cpu target
//   compat.arch                accelerator architecture not supported by the target CUDA/ROCm
//   compat.precision           bf16 training on an accelerator without bf16 tensor cores
//   compat.torch-tag           torch build tag disagrees with the target's CUDA/ROCm/CPU
//   lock.stale                 the lock was not made from this manifest (manifest-sha256)
//   lock.config                the config file changed since the lock (config-sha256)
#pragma once

#include <vector>

#include "compat/catalog.h"
#include "compat/finding.h"
#include "project/project.h"

namespace trainlock {

std::vector<Finding> CheckCompatibility(const Project& project, const Catalog& catalog);

}  // namespace trainlock
