// The train -> checkpoint -> kill -> restore -> resume test, in two halves: roundtrip.cc's plan
// runs the engine's processes A to E (deciding which run, in which order and where the saving
// one is preempted with SIGKILL; engine_process.h starts, watches, kills and collects each) into
// a value of what they did (roundtrip_runs.h), and roundtrip_checks.h's free functions judge
// that value into the train.step, train.roundtrip, train.eval and ckpt.portable checks.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "coordinator/roundtrip_runs.h"
#include "project/project.h"
#include "project/validate_defaults.h"
#include "report/report.h"
#include "support/engine_events.h"
#include "support/validate_options.h"

namespace trainlock::validate {

struct RoundtripOptions {
  std::filesystem::path work_dir;  // results (and the final states when state_dir is "")
  // Where the processes write their final states (state_dir.h); "" the work directory.
  std::filesystem::path state_dir;
  // Ranks of this validation that may share this host's memory (RanksOnThisHost): each keeps
  // its own states.
  int ranks_on_host = 1;
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
  // The engine that trains (the lock's validate.engine) and how (docs/validate.md, "Engines").
  std::string engine = "native";
  int engine_nproc = 1;           // processes of one engine run (world size); native: 1
  int reshard_to = 0;             // > 0: also restore B's checkpoint at this world size (E)
  bool kill_during_save = false;  // B saves again after its checkpoint and dies mid-save
  // Where that second save is held and B killed (--kill-point: a point of TRAINLOCK_SAVE_POINTS,
  // support/engine_events.h); mid-file when --kill-during-save names none.
  std::string kill_point;
  // Saves B makes after its checkpoint, in the run's mode, once the run-mode step is measured,
  // into steady_root (never restored): what a save costs training in steady state.
  int steady_saves = kDefaultSteadySaves;
  std::string python;  // a Python engine's interpreter ("" = the image's, python3)
  // Inside an image: the sys.path its record names and the validator verified
  // (checks/python_files.h), which the engine runs with; empty outside one.
  std::vector<std::string> engine_sys_path;
  // --only selects train.step alone: only process A runs, and train.roundtrip, train.eval and
  // ckpt.portable are the skip "not selected (--only)".
  bool step_only = false;
  // --only's list (empty: every check): an unselected check of the four is never judged, even
  // when its processes ran for a selected one.
  std::vector<std::string> only;
  // Called once, if the round trip gets there, when the portable process (D) runs and nothing
  // trains beside it any more: work that needs the GPU briefly and times nothing (ops.custom)
  // starts then, beside D, instead of before the round trip.
  std::function<void()> beside_portable;
};

// The step the resumed process must restore: the checkpoint at checkpoint_at, or, when the kill
// during a save lands after that save's commit record, the second save's (checkpoint_at + 1).
inline int64_t StepToRestore(const RoundtripOptions& o) {
  return o.kill_during_save && o.kill_point == kAfterCommit ? o.checkpoint_at + 1 : o.checkpoint_at;
}

// The final state file `name` of this run: in state_dir, else the work directory.
inline std::filesystem::path StateFile(const RoundtripOptions& o, const std::string& name) {
  return (o.state_dir.empty() ? o.work_dir : o.state_dir) / name;
}

// The torn-snapshot check's states (--kill-during-save only): A's after the step C restores, C's
// right after its restore. They must be bitwise equal, or the checkpoint holds another step's
// state than the step it says (an optimizer step leaked into the staged copy).
inline std::filesystem::path StateAtRestoredStepFile(const RoundtripOptions& o) {
  return StateFile(o, "a-state-at-restored-step.safetensors");
}
inline std::filesystem::path RestoredStateFile(const RoundtripOptions& o) {
  return StateFile(o, "c-restored-state.safetensors");
}

// Runs the processes (their final states where StateDirectory::Choose puts them when
// options.state_dir is "") and returns the four checks roundtrip_checks.h judges, in report order.
// `project` is the project the validation loaded: the coordinator reads its config from here and
// never loads it again; the processes read the engine spec resolved from it.
std::vector<CheckResult> RunRoundtrip(const RoundtripOptions& options, const Project& project);

}  // namespace trainlock::validate
