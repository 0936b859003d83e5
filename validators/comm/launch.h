// `trainlock-validate --nproc N|auto` without a launcher: starts N copies of itself with the
// torchrun variables set (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT),
// so the standalone, torchrun and Slurm modes run one code path.
#pragma once

#include <string>
#include <vector>

namespace trainlock::validate {

// `argv` is this process's command line; --nproc is removed before it is handed on. Waits for
// every rank; returns rank 0's exit code, or 1 when rank 0 passed but another rank failed.
int LaunchRanks(const std::vector<std::string>& argv, int nproc);

}  // namespace trainlock::validate
