// Which of the node's GPUs this process can see. NVML lists every GPU of the machine, but a
// process started with CUDA_VISIBLE_DEVICES (Slurm's GPU binding, two simulated nodes on one
// machine, a launcher pinning ranks) sees only some of them, renumbered from 0. The node
// worker reports each visible device's UUID; matching those to NVML's UUIDs gives the GPUs the
// checks judge (env.*, perf.*), numbered as nvidia-smi numbers them.
#pragma once

#include "probes/node_checks.h"
#include "probes/nvml_probe.h"

namespace trainlock::validate {

// Keeps in `node.gpus` only the GPUs the node worker measured (by UUID), moving the rest to
// `node.hidden`, and renumbers the worker's entries from CUDA ordinals to NVML indices (the
// ordinal is kept as `cuda_index`). Changes nothing unless every worker entry carries a UUID
// that NVML knows: without that evidence every NVML GPU stays the node's, so a GPU the worker
// did not reach is still an error in env.arch and perf.*, never dropped.
void RestrictToVisibleGpus(NodeProbe& node, DeviceRuns& runs);

}  // namespace trainlock::validate
