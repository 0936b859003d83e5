// Which rank of a distributed validation this process is, read from the environment the
// launcher set: torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), Slurm's
// srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID), or trainlock-validate --nproc, which sets
// the torchrun variables for the processes it starts.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace trainlock {

struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int node_rank = 0;        // which node of the job (torchrun GROUP_RANK, Slurm SLURM_NODEID)
  std::string master_addr;  // where rank 0's rendezvous store listens
  int master_port = 0;
  std::string launcher;  // "torchrun" | "slurm" | "standalone" (trainlock-validate --nproc)
};

// Reads the variables through `getenv` (std::getenv in production). nullopt when no launcher
// variables are set (a single-process run). Throws InputError naming the variable when they
// are inconsistent: a rank outside the world, a missing MASTER_ADDR, a port out of range.
std::optional<RankEnv> DetectRankEnv(const std::function<const char*(const char*)>& getenv);

// How many ranks of this validation may share this host (its memory): torchrun's and --nproc's
// LOCAL_WORLD_SIZE, else the leading count of Slurm's SLURM_TASKS_PER_NODE ("4(x2)" -> 4), else
// every rank of `env` (nothing says where they run), and 1 for a single process. Never below 1;
// a value that is not a count counts as absent.
int RanksOnThisHost(const std::optional<RankEnv>& env,
                    const std::function<const char*(const char*)>& getenv);

// A loopback TCP port that was free a moment ago (rank 0's rendezvous under --nproc; test
// servers). Throws std::runtime_error when none can be bound.
int FreeLoopbackPort();

// The node's name as ranks and reports name it: TRAINLOCK_NODE_NAME when set (a Kubernetes
// pod's spec.nodeName through the downward API, where the pod's hostname is not the node's),
// else gethostname.
std::string HostName();

// The report path of rank `rank` beside `out`: "report.json" -> "report.rank-3.json".
std::string RankReportPath(const std::string& out, int rank);

}  // namespace trainlock
