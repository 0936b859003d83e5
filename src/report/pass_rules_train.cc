// The pass rules of train.step, train.roundtrip, train.eval and ckpt.portable (pass_rules.h).
// Each recomputes what it can from the check's own numbers and refuses a flag or stated
// difference they contradict: a report can be edited, and a judge can have a bug.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "project/round_trip_engines.h"
#include "report/gpu_throttle.h"
#include "report/measured_shape.h"
#include "report/pass_rules_internal.h"

namespace trainlock::pass_rules {
namespace {

const char* kCarryState =
    "a checkpoint must carry every source of state: RNG streams (CPU and device), data-loader "
    "position, optimizer moments, scheduler and loss scaler";

// The first step (1-based) whose losses differ between the two runs, 0 when every one is
// equal; `max_diff` is the largest difference. A loss that is not a finite number differs.
int64_t FirstDivergentLoss(const std::vector<double>& a, const std::vector<double>& b,
                           double* max_diff) {
  int64_t first = 0;
  *max_diff = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] == b[i]) continue;
    if (first == 0) first = static_cast<int64_t>(i) + 1;
    const double d = std::fabs(a[i] - b[i]);
    *max_diff = std::isfinite(d) ? std::max(*max_diff, d) : INFINITY;
  }
  return first;
}

// The step the resumed process must have restored: checkpoint_at, or the second save's when the
// kill landed after its commit record (kill_point after-commit); nullopt without checkpoint_at.
std::optional<int64_t> StepToRestore(const RoundtripMetrics& m) {
  if (!m.checkpoint_at) return std::nullopt;
  return *m.checkpoint_at + (m.kill_point.value_or("") == kAfterCommit ? 1 : 0);
}

// As many losses in each run as steps, and the resumed process restored the step the preempted
// one committed.
void Counts(const RoundtripMetrics& m, Findings& out) {
  if (!m.steps || *m.steps <= 0) {
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, steps), "it states no steps");
    return;
  }
  for (auto [losses, name] :
       {std::pair{&m.losses_uninterrupted,
                  TRAINLOCK_METRIC_KEY(RoundtripMetrics, losses_uninterrupted)},
        {&m.losses_resumed, TRAINLOCK_METRIC_KEY(RoundtripMetrics, losses_resumed)}}) {
    const size_t have = *losses ? (*losses)->size() : 0;
    if (have != static_cast<size_t>(*m.steps))
      Add(out, name,
          std::string(name) + " has " + std::to_string(have) + " losses for " +
              std::to_string(*m.steps) + " steps");
  }
  const std::optional<int64_t> expected = StepToRestore(m);
  if (!expected) {
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, checkpoint_at), "it states no checkpoint_at");
  } else if (!m.restored_step || !*m.restored_step) {
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, restored_step),
        "it states no restored_step (the step the resumed process restored)",
        "another checkpoint shares the checkpoint directory; give the run its own");
  } else if (**m.restored_step != *expected) {
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, restored_step),
        "restored_step " + std::to_string(**m.restored_step) + " is not " +
            (*expected == *m.checkpoint_at
                 ? "checkpoint_at "
                 : "checkpoint_at + 1 (kill_point " + std::string(kAfterCommit) + ") ") +
            std::to_string(*expected),
        "another checkpoint shares the checkpoint directory; give the run its own");
  }
}

// The checkpoint B committed, as the coordinator read it: present, every file verified, at the
// step the round trip checkpointed at. `name` is the member that holds it.
void VerifiedCheckpoint(const Free& member, const char* name, const Integer& step, Findings& out) {
  if (!member || !member->is_object()) {
    Add(out, name, std::string(name) + " is absent: the coordinator read no checkpoint");
    return;
  }
  const auto v = ReadMetrics<VerifiedCheckpointMetrics>(*member);
  if (Said(v.problem)) {
    Add(out, name, std::string(name) + " states a problem: " + *v.problem,
        "check the storage (checkpoint-dir) for corruption");
  } else if (v.verified_by.value_or("") != "coordinator" || !v.files_verified ||
             *v.files_verified <= 0) {
    Add(out, name, std::string(name) + " verified no file by the coordinator");
  } else if (step && v.step != step) {
    Add(out, name,
        std::string(name) + " is of step " + std::to_string(v.step.value_or(-1)) + ", not step " +
            std::to_string(*step));
  }
}

// The losses and the final state: bitwise equal, or within loss_tolerance with the final state
// equal; each flag and stated difference recomputed from the losses where it can be.
void Comparison(const RoundtripMetrics& m, Findings& out) {
  double max_diff = 0;
  const int64_t first = FirstDivergentLoss(*m.losses_uninterrupted, *m.losses_resumed, &max_diff);
  if (!IsTrue(m.final_state_equal))
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, final_state_equal),
        "the final state differs (final_state_equal is not true)", kCarryState);
  if (IsTrue(m.final_state_equal) && m.max_abs_state_diff && *m.max_abs_state_diff &&
      **m.max_abs_state_diff != 0)
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, max_abs_state_diff),
        "max_abs_state_diff " + NumberText(**m.max_abs_state_diff) +
            " contradicts final_state_equal");
  if (IsTrue(m.bitwise_equal) && first != 0)
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, losses_resumed),
        "bitwise_equal is true, but losses_resumed differs from losses_uninterrupted at step " +
            std::to_string(first));
  if (IsTrue(m.bitwise_equal) && (m.first_divergent_step || m.first_divergent_tensor))
    Add(out,
        m.first_divergent_step ? TRAINLOCK_METRIC_KEY(RoundtripMetrics, first_divergent_step)
                               : TRAINLOCK_METRIC_KEY(RoundtripMetrics, first_divergent_tensor),
        "bitwise_equal is true, but it names a first divergent " +
            std::string(m.first_divergent_step ? "step " + std::to_string(*m.first_divergent_step)
                                               : "tensor " + *m.first_divergent_tensor));
  if (m.max_abs_loss_diff && *m.max_abs_loss_diff != max_diff)
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, max_abs_loss_diff),
        "max_abs_loss_diff " + NumberText(*m.max_abs_loss_diff) +
            " is not the losses' own difference " + NumberText(max_diff));
  if (IsTrue(m.bitwise_equal)) return;
  if (!m.loss_tolerance || *m.loss_tolerance <= 0) {
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, bitwise_equal),
        "bitwise_equal is not true and no loss tolerance was used", kCarryState);
  } else if (!(max_diff <= *m.loss_tolerance)) {
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, loss_tolerance),
        "the losses differ by more than loss_tolerance " + NumberText(*m.loss_tolerance) +
            " (from step " + std::to_string(first) + ")",
        kCarryState);
  }
}

// E restored B's checkpoint at another world size and trained to the end bitwise equal to A.
void Reshard(const RoundtripMetrics& m, Findings& out) {
  if (!m.reshard) return;
  const auto r = ReadMetrics<ReshardMetrics>(m.reshard->is_object() ? *m.reshard : Json());
  const std::string what = "reshard " + std::to_string(r.saved_world_size.value_or(0)) + " -> " +
                           std::to_string(r.restored_world_size.value_or(0));
  if (!IsTrue(r.data_position_carried))
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, reshard),
        what +
            ": data_position_carried is not true: the engine cannot carry its data position "
            "across world sizes",
        "resume at the world size the checkpoint was saved at, or use an engine whose sampler "
        "state is global (fsdp2)");
  if (!r.restored_step || !*r.restored_step || **r.restored_step != m.checkpoint_at.value_or(-1))
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, reshard),
        what + ": restored_step is not checkpoint_at");
  if (!IsTrue(r.final_state_equal))
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, reshard),
        what + ": final_state_equal is not true");
  double max_diff = 0;
  const std::vector<double> resharded = r.losses_resharded.value_or(std::vector<double>{});
  const bool same_count = resharded.size() == m.losses_uninterrupted->size();
  if (!IsTrue(r.bitwise_equal) || !same_count ||
      FirstDivergentLoss(*m.losses_uninterrupted, resharded, &max_diff) != 0)
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, reshard),
        what + ": bitwise_equal is not true of losses_resharded against losses_uninterrupted",
        "a reduction over another number of ranks sums in another order; compare within a "
        "tolerance only when the long run will reshard");
}

}  // namespace

// train.step: a step was timed at the shape the report states (measured_shape agrees with
// shape), nothing slowed a GPU down while the round trip trained (gpu_throttle.h), and no rank
// of a merged run trained slower than the straggler margin allows.
Findings Step(const Json& metrics, const RuleContext& context) {
  const auto m = ReadMetrics<TrainStepMetrics>(metrics);
  Findings out;
  if (IsTrue(m.out_of_memory))
    Add(out, TRAINLOCK_METRIC_KEY(TrainStepMetrics, out_of_memory), "out_of_memory is true");
  if (!m.step_time_s || !(*m.step_time_s > 0)) {
    Add(out, TRAINLOCK_METRIC_KEY(TrainStepMetrics, step_time_s), "it has no step_time_s");
    return out;
  }
  const Json shape = m.shape.value_or(Json());
  const auto precision = shape.is_object() ? shape.find("precision") : shape.end();
  const auto recompute = shape.is_object() ? shape.find("activation_checkpointing") : shape.end();
  if (!shape.is_object() || precision == shape.end() || !precision->is_string() ||
      recompute == shape.end() || !recompute->is_boolean()) {
    Add(out, TRAINLOCK_METRIC_KEY(TrainStepMetrics, shape),
        "it states no shape (precision, activation_checkpointing)");
  } else if (std::string why =
                 MeasuredShapeContradiction(m.measured_shape.value_or(Json()),
                                            precision->get<std::string>(), recompute->get<bool>());
             !why.empty()) {
    Add(out, TRAINLOCK_METRIC_KEY(TrainStepMetrics, measured_shape),
        "measured_shape contradicts shape: " + why,
        "the engine trained another shape than the config states; a validation only passes at "
        "the shape the long run trains");
  }
  if (m.slowest_to_median && m.straggler_margin && *m.slowest_to_median < 1.0 - *m.straggler_margin)
    Add(out, TRAINLOCK_METRIC_KEY(TrainStepMetrics, slowest_to_median),
        "slowest_to_median " + NumberText(*m.slowest_to_median) + " is below 1 - straggler_margin",
        "the slowest rank trains more slowly than its peers by more than the margin: check its "
        "clocks, temperature and throttle reasons (env.health) and perf.* for that GPU");
  if (auto f = FindThrottle(ReadMetrics<TelemetryMetrics>(context.telemetry)))
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, telemetry), f->summary, f->remedy);
  return out;
}

// train.roundtrip: see Counts, VerifiedCheckpoint, Comparison and Reshard; the resumed process
// restored its RNG and data-loader state, a kill during a save left a torn checkpoint the
// resume skipped, and no GPU of a merged run computed other bits than its peers.
Findings Roundtrip(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<RoundtripMetrics>(metrics);
  Findings out;
  if (!IsTrue(m.rng_restored))
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, rng_restored), "rng_restored is not true",
        kCarryState);
  if (!IsTrue(m.data_restored))
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, data_restored), "data_restored is not true",
        kCarryState);
  Counts(m, out);
  if (!out.empty() && (!m.losses_uninterrupted || !m.losses_resumed ||
                       m.losses_uninterrupted->size() != m.losses_resumed->size()))
    return out;
  VerifiedCheckpoint(m.checkpoint_verified,
                     TRAINLOCK_METRIC_KEY(RoundtripMetrics, checkpoint_verified), StepToRestore(m),
                     out);
  Comparison(m, out);
  if (IsTrue(m.killed_during_save) && !Lists(m.skipped_uncommitted))
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, skipped_uncommitted),
        "killed_during_save is true, but skipped_uncommitted names no torn checkpoint the resume "
        "passed over");
  if (m.snapshot_equal && !*m.snapshot_equal)
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, snapshot_equal),
        "snapshot_equal is false: the checkpoint holds another state than the step it says (" +
            m.snapshot_first_different.value_or("a tensor") + " differs)",
        "stage a checkpoint's tensors before the next optimizer step changes them (copy, or "
        "wait for the staged copy before stepping)");
  Reshard(m, out);
  if (Lists(m.ranks_computing_differently))
    Add(out, TRAINLOCK_METRIC_KEY(RoundtripMetrics, ranks_computing_differently),
        "ranks_computing_differently names GPUs that computed other bits than their peers",
        "take the named GPU out of service and run `dcgmi diag -r 3` on it");
  return out;
}

// train.eval: the two losses' own difference within the tolerance; a stated abs_diff other than
// theirs is a contradiction (it could be edited to 0).
Findings Eval(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<EvalMetrics>(metrics);
  Findings out;
  if (!m.eval_loss_before_save || !m.eval_loss_after_restore) {
    Add(out, TRAINLOCK_METRIC_KEY(EvalMetrics, eval_loss_after_restore),
        "it has no eval_loss_before_save and eval_loss_after_restore");
    return out;
  }
  const double diff = std::fabs(*m.eval_loss_before_save - *m.eval_loss_after_restore);
  if (!m.abs_diff) {
    Add(out, TRAINLOCK_METRIC_KEY(EvalMetrics, abs_diff), "it has no abs_diff");
  } else if (*m.abs_diff != diff) {
    Add(out, TRAINLOCK_METRIC_KEY(EvalMetrics, abs_diff),
        "abs_diff " + NumberText(*m.abs_diff) + " is not the eval losses' own difference " +
            NumberText(diff));
  }
  if (!m.tolerance) {
    Add(out, TRAINLOCK_METRIC_KEY(EvalMetrics, tolerance), "it states no tolerance");
  } else if (!(diff <= *m.tolerance)) {
    Add(out, TRAINLOCK_METRIC_KEY(EvalMetrics, eval_loss_after_restore),
        "eval_loss_after_restore differs from eval_loss_before_save by more than tolerance " +
            NumberText(*m.tolerance),
        "the restored parameters differ from the saved ones; check the checkpoint writer and "
        "reader");
  }
  return out;
}

// ckpt.portable: a fresh process restored the checkpoint the coordinator verified, and its eval
// loss is within the tolerance of the saving process's, from the two losses themselves.
Findings Portable(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<PortableMetrics>(metrics);
  Findings out;
  VerifiedCheckpoint(m.checkpoint, TRAINLOCK_METRIC_KEY(PortableMetrics, checkpoint), std::nullopt,
                     out);
  const auto checkpoint = ReadMetrics<VerifiedCheckpointMetrics>(m.checkpoint.value_or(Json()));
  if (!m.restored_step || !*m.restored_step || **m.restored_step != checkpoint.step.value_or(-1))
    Add(out, TRAINLOCK_METRIC_KEY(PortableMetrics, restored_step),
        "restored_step is not the verified checkpoint's step",
        "another checkpoint shares the checkpoint directory; give the run its own");
  if (!m.eval_loss || !m.eval_loss_reference) {
    Add(out, TRAINLOCK_METRIC_KEY(PortableMetrics, eval_loss),
        "it has no eval_loss and eval_loss_reference");
    return out;
  }
  const double diff = std::fabs(*m.eval_loss - *m.eval_loss_reference);
  if (m.abs_diff && *m.abs_diff != diff)
    Add(out, TRAINLOCK_METRIC_KEY(PortableMetrics, abs_diff),
        "abs_diff " + NumberText(*m.abs_diff) + " is not the eval losses' own difference " +
            NumberText(diff));
  if (!m.tolerance) {
    Add(out, TRAINLOCK_METRIC_KEY(PortableMetrics, tolerance), "it states no tolerance");
  } else if (!(diff <= *m.tolerance)) {
    Add(out, TRAINLOCK_METRIC_KEY(PortableMetrics, eval_loss),
        "eval_loss differs from eval_loss_reference by more than tolerance " +
            NumberText(*m.tolerance),
        "the checkpoint does not carry everything the model needs");
  }
  return out;
}

}  // namespace trainlock::pass_rules
