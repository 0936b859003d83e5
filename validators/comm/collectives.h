// comm.allreduce and comm.ddp: the collectives every rank of a distributed validation joins,
// through LibTorch's c10d (ProcessGroupGloo on CPU, ProcessGroupNCCL on CUDA) over the ranks'
// shared store (rank_store.h). Every wait is bounded: a rank that never joins, or dies
// mid-collective, is named in a `fail`, and nothing hangs.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "base/rank_env.h"
#include "comm/rank_store.h"
#include "report/report.h"

namespace trainlock::validate {

struct CommOptions {
  RankEnv rank;
  std::string device = "cpu";                   // "cpu" or "cuda:N"
  std::chrono::seconds join_timeout{60};        // every rank must join within this
  std::chrono::seconds collective_timeout{60};  // one collective may take this long
  int64_t max_bytes = int64_t{1} << 30;         // the largest all-reduce size
  double straggler_margin = 0.20;   // slower than the median step by more than this: straggler
  std::string accelerator;          // catalog name of the device, for the busbw threshold
  double busbw_threshold_gbps = 0;  // 0: none known for this accelerator and rank count
  std::string threshold_source;
  int fault_kill_rank = -1;  // fault injection for tests: this rank exits mid-collective
  // Fault injection for tests: this rank sends wrong data into every collective it checks (its
  // all-reduce pattern off by one, its DDP gradients off by 0.01), as a bad link or a rank with
  // other weights would.
  int fault_corrupt_rank = -1;
};

// comm.ddp's straggler rule: the rank whose median step is slower than the median of the ranks'
// medians by more than `margin` (0.2: 20 %), or -1; `spread` gets slowest / median.
int StragglerRank(const std::vector<double>& medians, double margin, double* spread);

struct CommOutcome {
  std::vector<CheckResult> checks;  // comm.allreduce, comm.ddp
};

// Runs both checks on this rank, over the ranks' joined store (rank_store.h). The process
// group is gone and the device's cached memory released when it returns.
CommOutcome RunCommChecks(const CommOptions& options, RankStore& store);

// Both checks failed for `why` (the rendezvous did not complete).
CommOutcome FailedCommChecks(const CommOptions& options, const std::string& why);

// The device a rank uses: "cuda:<local_rank mod device count>" when CUDA is there and not
// refused by `requested` ("cpu"), else "cpu".
std::string CommDevice(const std::string& requested, int local_rank);

// Visible accelerators (CUDA devices); 0 on a CPU build. `--nproc auto` starts this many ranks.
int VisibleAcceleratorCount();

// nccl-tests' bus bandwidth of an all-reduce: algbw x 2(n-1)/n.
double BusBandwidth(double bytes, double seconds, int world_size);

}  // namespace trainlock::validate
