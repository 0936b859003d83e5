// What one engine process said, as a value: the engine protocol's events folded by
// engine_transcript.h into the protocol's types (engine_events.h, report/check_metrics.h). The
// round trip's checks read this value (coordinator/roundtrip_runs.h holds one per process), never
// the lines.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/check_metrics.h"
#include "support/engine_events.h"

namespace trainlock::validate {

// What one engine process said, folded into the protocol's types (engine_events.h):
// what the round trip's checks read, whatever engine said it. Each event's members are read
// tolerantly (a mistyped member is left unset); an event the checks need whole (a step without
// a numeric loss) is a protocol warning instead.
struct EngineFold {
  std::optional<HelloEvent> hello;
  // train.step's members the process named: its device (hello), the data and model it trains
  // (setup), and the pinned files it read and verified (artifact events, in order).
  TrainStepMetrics said;
  std::optional<double> setup_s;  // the setup event's seconds
  std::optional<RestoredEvent> restore;
  std::vector<StepEvent>
      losses;  // in the order said; each step an integer, each loss a number or null
  std::optional<TrainStepMetrics> measurement;  // train.step's metrics
  std::optional<CheckpointEvent> save;          // the last checkpoint committed
  std::optional<CheckpointEvent> save_started;  // the last save begun
  std::optional<CheckpointEvent> save_held;     // where a save stopped (--hold-save-at), if it did
  // The steady-state saves (--steady-saves), in order; at most kMaxSteadySaves are kept.
  std::vector<CheckpointEvent> steady_saves;
  std::optional<double> eval_after_save, eval_after_restore, eval;  // eval events by `when`
  // The after_save evals that said their step, by step: a process that saves twice (the kill
  // during a save) is judged at the step its checkpoint was restored at.
  std::map<int64_t, double> eval_after_save_at;
  std::optional<StateEvent> final_state;  // where it wrote its final state and its size
  std::optional<ErrorEvent> error;        // always with a kind and a message
  bool done = false;
  // Lines that were not the protocol's, ignored: how many and the first one's reason.
  int64_t ignored_lines = 0;
  std::string first_ignored;
};

}  // namespace trainlock::validate
