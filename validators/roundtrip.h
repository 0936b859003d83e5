// The coordinator of the train -> checkpoint -> kill -> restore -> resume test. It starts
// the worker processes (worker.h), preempts the saving one with SIGKILL, compares what they
// report and turns that into the train.step, train.roundtrip, train.eval and ckpt.portable
// checks.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "project/validate_defaults.h"
#include "report/report.h"

namespace trainlock::validate {

// Negative controls: deliberately break the resume to prove the check can fail.
enum class NegativeControl { kNone, kSkipRngRestore, kSkipDataRestore, kCorruptCheckpoint };

struct RoundtripOptions {
  std::filesystem::path project;
  std::filesystem::path work_dir;         // results and final states
  std::filesystem::path checkpoint_root;  // where B saves and C restores
  int64_t steps = kDefaultValidateSteps;
  int64_t checkpoint_at = kDefaultCheckpointAt;
  int64_t keep_last = kDefaultKeepLast;
  double loss_tolerance = kDefaultLossTolerance;  // 0 = bitwise
  double eval_tolerance = kDefaultEvalTolerance;
  std::string device = "auto";
  int threads = 0;
  int timeout_s = 900;  // per worker process
  NegativeControl negative_control = NegativeControl::kNone;
};

// Runs the processes and returns the four checks, in report order.
std::vector<CheckResult> RunRoundtrip(const RoundtripOptions& options);

// Largest absolute element difference between two state files of the same tensors, and the
// name of the first tensor that differs ("" when identical). Implemented with LibTorch.
double MaxAbsStateDifference(const std::filesystem::path& a, const std::filesystem::path& b,
                             std::string* first_different);

}  // namespace trainlock::validate
