// The round trip's judging half; see roundtrip_checks.h.
#include "coordinator/roundtrip_checks.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/diagnostic.h"
#include "base/failure.h"
#include "base/sha256.h"
#include "compat/catalog.h"
#include "coordinator/state_file.h"
#include "plan/memory_model.h"
#include "plan/memory_remedies.h"
#include "probes/gpu_telemetry.h"
#include "probes/host_memory.h"
#include "project/project.h"
#include "project/train_shape.h"
#include "report/check_metrics.h"
#include "report/golden_digest.h"
#include "report/measured_shape.h"
#include "report/pass_rules.h"
#include "support/check_selection.h"
#include "support/engine_protocol.h"
#include "support/parallel.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

CheckResult OutOfMemoryCheck(const JudgeInputs& in, const WorkerRun& a);

// The error `run` reported (the fold's `error` event); empty when none.
ErrorEvent ErrorOf(const WorkerRun& run) {
  return run.result.error.value_or(ErrorEvent{});
}

// The kind of the error `run` reported, "" when none.
std::string ErrorKind(const WorkerRun& run) {
  return ErrorOf(run).kind.value_or("");
}

// Why `run` failed, as the checks say it ("" when it did not): its timeout, its error event,
// an outside SIGKILL (the OOM killer, when the cgroup counted one) or its exit status.
std::string ProcessFailure(const JudgeInputs& in, const WorkerRun& run) {
  if (!run.exit_code) {
    return "process " + run.name + " did not finish within " + std::to_string(in.o.timeout_s) +
           " s; its output is in " + in.o.work_dir.string();
  }
  if (run.result.error) return run.result.error->message.value_or("failed");
  if (run.killed_by_us) return "";
  if (*run.exit_code == 128 + SIGKILL) {
    return DescribeOutsideKill(run.name, run.peak_rss_bytes, HostMemoryBytes(),
                               run.oom_kills_before, run.oom_kills_after) +
           "; its output is in " + in.o.work_dir.string();
  }
  if (*run.exit_code != 0) {
    return "process " + run.name + " exited with " + std::to_string(*run.exit_code) +
           (run.stderr_tail.empty()
                ? ""
                : ": " + run.stderr_tail.substr(run.stderr_tail.rfind('\n') + 1));
  }
  return "";
}

// The losses `run` said, in order; NaN where it said null.
std::vector<double> Losses(const WorkerRun& run) {
  std::vector<double> out;
  for (const StepEvent& s : run.result.losses) {
    const nlohmann::json loss = s.loss.value_or(nullptr);
    out.push_back(loss.is_number() ? loss.get<double>() : std::nan(""));
  }
  return out;
}

// What the resumed process said of its restore (the `restored` event); empty when it never
// restored. A flag it did not send is nullopt: it restored only what it says it restored.
RestoredEvent RestoreOf(const WorkerRun& run) {
  return run.result.restore.value_or(RestoredEvent{});
}

// The step the resumed process found in the checkpoint it restored, as it reported it;
// nullopt when it reported none.
std::optional<int64_t> RestoredStep(const WorkerRun& run) {
  return RestoreOf(run).step;
}

// What of the config's shape the worker's observed shape (measured_shape) contradicts, "" when
// nothing (report/measured_shape.h: the gate refuses a pass by the same rule).
std::string ShapeMismatch(const TrainStepMetrics& m, const TrainConfig& config) {
  return MeasuredShapeContradiction(m.measured_shape.value_or(nlohmann::json()),
                                    config.training.precision,
                                    config.training.activation_checkpointing);
}

// The per-tensor digests of the final state `run` wrote, as this process computed them from
// the file (an empty object when none): never the digests an engine prints.
nlohmann::json Fingerprints(const WorkerRun& run) {
  nlohmann::json out = nlohmann::json::object();
  if (run.state)
    for (const auto& [name, digest] : run.state->tensors) out[name] = digest;
  return out;
}

// Why `run`'s final state cannot be compared, "" when it can.
std::string StateProblem(const WorkerRun& run) {
  if (!run.state) return "process " + run.name + " was not asked for its final state";
  if (!run.state->problem.empty())
    return "process " + run.name + "'s final state: " + run.state->problem;
  if (run.state->tensors.empty()) return "process " + run.name + "'s final state holds no tensor";
  return "";
}

// The eval loss `b` said after saving the checkpoint of `step` (a process that saves twice says
// one per save), else the last it said after a save; nullopt when none.
std::optional<double> EvalAfterSaveOf(const WorkerRun& b, int64_t step) {
  const auto at = b.result.eval_after_save_at.find(step);
  if (at != b.result.eval_after_save_at.end()) return at->second;
  return b.result.eval_after_save;
}

// The step of the last checkpoint `run` reported committed; -1 when none.
int64_t LastCommittedStep(const WorkerRun& run) {
  return run.result.save ? run.result.save->step.value_or(-1) : -1;
}

// B's checkpoint as train.roundtrip and ckpt.portable report it: the coordinator's reading.
VerifiedCheckpointMetrics VerifiedMetrics(const VerifiedCheckpoint& v) {
  VerifiedCheckpointMetrics m;
  m.step_dir = v.dir.string();
  m.step = v.step;
  m.commit_record = v.record;
  m.verify_s = v.seconds;
  m.verified_by = "coordinator";
  if (!v.problem.empty()) {
    m.problem = v.problem;
    return m;
  }
  m.files_verified = v.files;
  m.bytes_verified = static_cast<int64_t>(v.bytes);
  return m;
}

// What is wrong with the checkpoint B committed, as the coordinator found it; "" when it
// verified.
std::string CheckpointProblem(const WorkerRun& b, const std::optional<VerifiedCheckpoint>& v) {
  if (!v) return "process " + b.name + " announced no committed checkpoint";
  if (!v->problem.empty())
    return "the checkpoint process " + b.name + " committed does not verify: " + v->problem;
  return "";
}

// Why no process restored a verified checkpoint ("" when C and D did): B's own failure, else
// what the coordinator found.
std::string NotRestoredBecause(const JudgeInputs& in, const RoundtripRuns& r) {
  const std::string problem = CheckpointProblem(r.b, r.checkpoint);
  if (problem.empty()) return "";
  const std::string failure = ProcessFailure(in, r.b);
  return (failure.empty() ? problem : failure) + "; no process restored it (see train.roundtrip)";
}

// What the coordinator checked of the checkpoint, for a passing check's summary.
std::string VerifiedSentence(const VerifiedCheckpoint& v) {
  return "the coordinator hashed the checkpoint before any restore: " + v.dir.filename().string() +
         ", " + std::to_string(v.files) + (v.files == 1 ? " file" : " files") + " of " +
         std::to_string(v.bytes) + " bytes, each as its " + v.record + " records it";
}

// How long `run` took, and when each of its events first arrived (RoundtripMetrics::processes).
nlohmann::json ProcessTimes(const WorkerRun& run) {
  return {{"seconds", run.seconds},
          {"first_event_s", run.first_event_s},
          {"spawned_s", run.spawned_s},
          {"started_s", run.started_s},
          {"ended_s", run.ended_s}};
}

// Which engine trained, as its processes said, and what of the protocol they broke.
void DescribeEngine(const WorkerRun& a, const WorkerRun& b, const WorkerRun& c,
                    RoundtripMetrics* m) {
  const std::optional<HelloEvent>& hello = c.result.hello ? c.result.hello : a.result.hello;
  if (hello) {
    if (hello->engine) m->engine = hello->engine;
    m->engine_versions = hello->versions.value_or(nlohmann::json::object());
    if (hello->world_size) m->world_size = hello->world_size;
  }
  m->skipped_uncommitted = RestoreOf(c).skipped_uncommitted;
  for (const WorkerRun* run : {&a, &b, &c}) {
    if (run->result.ignored_lines > 0) {
      m->protocol_problems = {
          {run->name,
           {{"ignored_lines", run->result.ignored_lines}, {"first", run->result.first_ignored}}}};
      break;
    }
  }
  // Killed where its second save was held (--hold-save-at), before that save's commit record.
  m->killed_during_save = b.killed_by_us && b.result.save_held && LastCommittedStep(b) >= 0 &&
                          b.result.save_held->point.value_or("") != kAfterCommit;
}

// The steady-state saves B said (--steady-saves): each as said, and the costliest one's cost to
// training and blocking, the figures to hold against a long run's budget for a save.
void DescribeSteadySaves(const std::vector<CheckpointEvent>& saves, RoundtripMetrics* m) {
  if (saves.empty()) return;
  nlohmann::json each = nlohmann::json::array();
  double stall = 0, blocking = 0;
  int64_t pinned = 0;
  for (const CheckpointEvent& save : saves) {
    each.push_back(ToJson(save));
    stall = std::max(stall, save.stall_s.value_or(0));
    blocking = std::max(blocking, save.blocking_s.value_or(0));
    const int64_t bytes = save.new_pinned_bytes.value_or(-1);
    pinned = pinned < 0 || bytes < 0 ? -1 : pinned + bytes;
  }
  m->save_steady = each;
  m->save_steady_stall_s = stall;
  m->save_steady_blocking_s = blocking;
  m->save_steady_new_pinned_bytes = pinned;
}

std::vector<CheckResult> CannotRunChecks(const JudgeInputs& in, const WorkerRun& a) {
  TrainStepMetrics m;
  m.cannot_run = "engine " + in.o.engine + ": " + in.python.string() + " cannot run it here (" +
                 ProcessFailure(in, a) +
                 "): install what it names in that interpreter or pass --python PATH";
  std::vector<CheckResult> checks = {
      NotMeasured("train.step", CheckStatus::kError, *m.cannot_run, "", ToJson(m))};
  for (const char* id : {"train.roundtrip", "train.eval", "ckpt.portable"}) {
    checks.push_back(NotMeasured(id, CheckStatus::kSkip, "not run: the engine cannot run here",
                                 "see train.step"));
  }
  return checks;
}

CheckResult StepCheck(const JudgeInputs& in, const WorkerRun& a) {
  std::string failure = ProcessFailure(in, a);
  if (ErrorKind(a) == kErrorOutOfMemory) {
    return OutOfMemoryCheck(in, a);
  }
  if (ErrorKind(a) == kErrorIntegrity) {  // the step was not measured: train.step's rule fails it
    TrainStepMetrics m;
    m.artifacts = a.result.said.artifacts;
    return Judged("train.step", ToJson(m), "a pinned file is not the one the lock pins: " + failure,
                  "restore the file the lock pins, or re-lock (`trainlock lock`) if the change is "
                  "intended");
  }
  if (!failure.empty() || !a.result.measurement) {
    return Judged("train.step", nlohmann::json::object(),
                  "the training step failed at the intended shape: " +
                      (failure.empty() ? "no measurement" : failure),
                  "see the process output in the work directory; an out-of-memory is reported "
                  "with remedies");
  }
  TrainStepMetrics m = *a.result.measurement;
  // The process names its device, data and model with train.step's members.
  const TrainStepMetrics& worker = a.result.said;
  m.device = worker.device.value_or("");
  m.device_name = worker.device_name;
  m.data = worker.data.value_or("");
  m.model = worker.model.value_or(nlohmann::json::object());
  m.artifacts = worker.artifacts;
  m.shape = TrainShapeJson(in.project.config);
  if (const std::string off = ShapeMismatch(m, in.project.config); !off.empty()) {
    return Judged("train.step", ToJson(m), "the step did not run at the config's shape: " + off,
                  "the engine trained another shape than the config states; a validation only "
                  "passes at the shape the long run trains");
  }
  const double step_time_s = m.step_time_s.value_or(0.0);
  std::ostringstream s;
  s.precision(3);
  s << "step " << step_time_s << " s";
  if (m.mode.value_or("") == "default") {
    const auto deterministic =
        ReadMetrics<TrainStepMetrics>(m.deterministic.value_or(nlohmann::json()));
    s << " (the run's default kernels, median of " << (m.step_times_s ? m.step_times_s->size() : 0)
      << "; deterministic " << deterministic.step_time_s.value_or(0.0) << " s)";
  } else {
    s << " (deterministic kernels, as the run's config asks)";
  }
  s << ", " << static_cast<int64_t>(m.tokens_per_s.value_or(0.0)) << " tokens/s at "
    << m.tokens.value_or(0) << " tokens per step";
  if (m.peak_allocated_bytes.value_or(-1) >= 0) {
    s << ", peak allocated " << *m.peak_allocated_bytes / (1 << 20) << " MiB";
  } else {
    s << ", peak RSS " << m.peak_rss_bytes.value_or(0) / (1 << 20) << " MiB";
  }
  // MFU against the catalog's dense peak for this device and precision.
  const Catalog catalog = Catalog::Embedded();  // FindGpu points into it: keep it alive
  const GpuModel* gpu = catalog.FindGpu(m.device_name.value_or(""));
  if (gpu && step_time_s > 0) {
    const std::string& precision = in.project.config.training.precision;
    double peak = (precision == "fp16" ? gpu->fp16_dense_tflops : gpu->bf16_dense_tflops) * 1e12;
    if (peak > 0 && precision != "fp32") {
      double mfu = m.flops.value_or(0.0) / step_time_s / peak;
      m.mfu = mfu;
      m.peak_tflops = peak / 1e12;
      s << ", MFU " << static_cast<int>(mfu * 100 + 0.5) << "% of " << gpu->name << " dense "
        << precision;
    }
  }
  if (!m.mfu) m.mfu = std::optional<double>();  // written as null: unknown
  CheckResult c = Judged("train.step", ToJson(m), s.str());
  c.duration_s = step_time_s;
  return c;
}

// Out of memory at the intended shape is a finding with numbers and ranked remedies: the
// fixes `trainlock plan` gives for this report, from the same engine (plan/memory_remedies.h).
CheckResult OutOfMemoryCheck(const JudgeInputs& in, const WorkerRun& a) {
  const ErrorEvent error = ErrorOf(a);
  TrainStepMetrics m =
      ReadMetrics<TrainStepMetrics>(error.memory.value_or(nlohmann::json::object()));
  const TrainConfig& config = in.project.config;
  double total = static_cast<double>(m.device_total_bytes.value_or(-1));
  MemoryEstimate estimate = EstimateTrainingMemory(config);
  const TrainStepMetrics& worker = a.result.said;
  std::vector<std::string> remedies =
      MemoryRemedies(config, worker.device_name.value_or(""), total, Catalog::Embedded());
  m.device_name = worker.device_name;
  m.out_of_memory = true;
  m.error = error.message.value_or("");
  m.seq_len = config.training.seq_len;
  m.micro_batch = config.training.micro_batch;
  m.shape = TrainShapeJson(config);
  m.estimate = ToJson(MemoryEstimateMetrics{
      estimate.parameters, estimate.weights_bytes, estimate.grads_bytes, estimate.optimizer_bytes,
      estimate.activation_bytes, estimate.logits_bytes, estimate.total_bytes()});
  m.remedies = remedies;
  std::string summary =
      "out of memory at seq_len " + std::to_string(config.training.seq_len) + ", micro_batch " +
      std::to_string(config.training.micro_batch) + ": the step needs about " +
      GiB(estimate.total_bytes()) + " (weights " + GiB(estimate.weights_bytes) + ", grads " +
      GiB(estimate.grads_bytes) + ", AdamW " + GiB(estimate.optimizer_bytes) + ", activations " +
      GiB(estimate.activation_bytes) + ", logits " + GiB(estimate.logits_bytes) + ")" +
      (total > 0 ? "; the device has " + GiB(total) + ", peak reserved " +
                       GiB(static_cast<double>(m.peak_reserved_bytes.value_or(0)))
                 : "");
  std::string remedy;
  for (size_t i = 0; i < remedies.size(); ++i) {
    remedy += (i ? "; " : "") + std::to_string(i + 1) + ") " + remedies[i];
  }
  return Judged("train.step", ToJson(m), std::move(summary),
                remedy.empty() ? "the step does not fit this device" : remedy);
}

// The round trip's facts before any judgement: the losses of A and of B-then-C, the processes,
// the save and the restore, and the engine as its processes described it.
RoundtripMetrics RoundtripFacts(const JudgeInputs& in, const WorkerRun& a, const WorkerRun& b,
                                const WorkerRun& c,
                                const std::optional<VerifiedCheckpoint>& checkpoint) {
  std::vector<double> lb = Losses(b);
  std::vector<double> resumed;
  for (int64_t i = 0; i < static_cast<int64_t>(lb.size()) && i < StepToRestore(in.o); ++i)
    resumed.push_back(lb[i]);
  for (double l : Losses(c)) resumed.push_back(l);
  RoundtripMetrics m;
  m.steps = in.o.steps;
  m.checkpoint_at = in.o.checkpoint_at;
  if (in.o.kill_during_save) m.kill_point = in.o.kill_point;
  m.pids = {{"uninterrupted", a.pid}, {"preempted", b.pid}, {"resumed", c.pid}};
  m.preempted_with = "SIGKILL";
  m.losses_uninterrupted = Losses(a);
  m.losses_resumed = resumed;
  const RestoredEvent restore = RestoreOf(c);
  m.rng_restored = restore.rng_restored.value_or(false);
  m.data_restored = restore.data_restored.value_or(false);
  m.restored_step = RestoredStep(c);
  DescribeEngine(a, b, c, &m);
  auto raw = [](const auto& value) {  // the report keeps null for a value not said
    return value ? nlohmann::json(*value) : nlohmann::json();
  };
  // The checkpoint's bytes are what the coordinator hashed, never what B said it wrote.
  const bool verified = checkpoint && checkpoint->problem.empty();
  m.checkpoint_bytes = verified ? nlohmann::json(checkpoint->bytes) : nlohmann::json();
  if (checkpoint) m.checkpoint_verified = ToJson(VerifiedMetrics(*checkpoint));
  if (b.result.save) {
    const CheckpointEvent& save = *b.result.save;
    m.save_s = raw(save.seconds);  // to durable storage
    m.save_gbps = raw(save.gbps);
    // What training was held up for (the copy into staging memory); the write went on beside it.
    m.save_blocking_s = save.blocking_s;
    m.save_staging_wait_s = save.staging_wait_s;
    m.save_staging_alloc_s = save.staging_alloc_s;
    m.save_write_s = save.write_s;
    m.save_stall_s = save.stall_s;
    m.save_release_s = save.release_s;
  }
  DescribeSteadySaves(b.result.steady_saves, &m);
  if (c.result.restore) {
    m.restore_s = raw(restore.seconds);
    m.restore_gbps = raw(restore.gbps);
  }
  return m;
}

// Why A and C cannot be compared, in the words of train.roundtrip's result: `not_exercised` when
// the round trip did not happen as planned (an error: nothing was measured), else a failure the
// check's rule finds in its metrics.
struct NotComparable {
  bool not_exercised = false;
  std::string summary;
  std::string remedy;
};

// train.roundtrip's failure when the coordinator did not verify the checkpoint B committed
// (then C and D were never started), or when B announced its checkpoint somewhere else than
// the step directory the coordinator verified; nullopt when neither.
std::optional<NotComparable> CheckpointNotVerified(const JudgeInputs& in, const RoundtripRuns& r) {
  const std::string stderr_file = r.b.stderr_file.string();
  if (const std::string problem = CheckpointProblem(r.b, r.checkpoint); !problem.empty()) {
    return NotComparable{false, problem + "; the resumed and portable processes were not started",
                         "an engine may say `committed` only once its save wrote every file its "
                         "commit record lists, and no other; see " +
                             stderr_file};
  }
  const std::optional<std::string> said = r.b.result.save ? r.b.result.save->dir : std::nullopt;
  if (said && LastCommittedStep(r.b) == StepToRestore(in.o) &&
      fs::path(*said).lexically_normal() != r.checkpoint->dir.lexically_normal()) {
    return NotComparable{
        false,
        "process " + r.b.name + " announced its checkpoint in " + Quoted(*said) +
            ", not in the step directory the coordinator verified, " + r.checkpoint->dir.string(),
        "an engine commits step N to CHECKPOINT_ROOT/step-<N, 8 digits>; see " + stderr_file};
  }
  return std::nullopt;
}

// Why A and C cannot be compared (a process failed, the preemption or the kill during a save
// did not happen, B's checkpoint did not verify, another step was restored, a final state is
// missing), as the check's result; nullopt when they can.
std::optional<NotComparable> RoundtripNotComparable(const JudgeInputs& in, const RoundtripRuns& r) {
  const WorkerRun &a = r.a, &b = r.b, &c = r.c;
  auto failure_of = [](std::string summary, std::string remedy) {
    return NotComparable{false, std::move(summary), std::move(remedy)};
  };
  auto not_exercised = [](std::string summary, std::string remedy = "") {
    return NotComparable{true, std::move(summary), std::move(remedy)};
  };
  auto failed = [&](const WorkerRun& run) -> std::optional<NotComparable> {
    const std::string failure = ProcessFailure(in, run);
    if (failure.empty()) return std::nullopt;
    return failure_of("process " + run.name + ": " + failure,
                      ErrorKind(run) == kErrorCheckpoint
                          ? "the checkpoint did not verify: check the storage (checkpoint-dir) for "
                            "corruption"
                          : "see the worker's stderr in " + in.o.work_dir.string());
  };
  for (const WorkerRun* run : {&a, &b})
    if (std::optional<NotComparable> failure = failed(*run)) return failure;
  if (!b.killed_by_us) {
    return not_exercised(in.o.kill_during_save
                             ? "the preempted process never held its second save at " +
                                   in.o.kill_point
                             : "the preempted process never announced its checkpoint");
  }
  if (in.o.kill_during_save && b.result.save_held &&
      b.result.save_held->point.value_or("") != in.o.kill_point) {
    return failure_of("process " + b.name + " held its save at " +
                          Quoted(b.result.save_held->point.value_or("")) + ", not at " +
                          in.o.kill_point + " as --hold-save-at asked",
                      "an engine holds a save exactly at the point it is given");
  }
  if (in.o.kill_during_save && LastCommittedStep(b) != in.o.checkpoint_at) {
    // The second save became durable before the SIGKILL landed: nothing was torn, so the
    // restore proves nothing about torn checkpoints.
    return not_exercised(
        "the save after step " + std::to_string(in.o.checkpoint_at) +
            " was committed before the kill landed: the kill during a save was not exercised",
        "rerun; a larger model's save takes long enough to be killed while it writes");
  }
  if (std::optional<NotComparable> unverified = CheckpointNotVerified(in, r)) return unverified;
  if (std::optional<NotComparable> failure = failed(c)) return failure;
  // The resume must start from the checkpoint the preempted process committed, not an older
  // or newer one left in the storage.
  const std::optional<int64_t> restored = RestoredStep(c);
  if (restored != StepToRestore(in.o)) {
    return failure_of(
        "the resumed process restored " +
            (restored ? "step " + std::to_string(*restored) : std::string("no step it reported")) +
            ", not the checkpoint committed at step " + std::to_string(StepToRestore(in.o)),
        "another checkpoint shares the checkpoint directory; give the run its own");
  }
  for (const WorkerRun* run : {&a, &c}) {
    if (const std::string problem = StateProblem(*run); !problem.empty()) {
      return failure_of(
          problem +
              ": the round trip is judged from the states the processes wrote, "
              "never from digests they print",
          "the engine must write its final state (safetensors) to --final-state; see " +
              run->stderr_file.string());
    }
  }
  return std::nullopt;
}

// A's losses and final state beside those of the run B began and C resumed.
struct RoundtripComparison {
  bool losses_equal = false;
  double max_loss_diff = 0;
  int64_t first_divergent_step = 0;  // 1-based; 0 when every loss is equal
  bool states_equal = false;
  std::string first_divergent_tensor;
  std::optional<double> max_state_diff;  // unknown unless both states were kept
};

RoundtripComparison CompareRoundtrip(const WorkerRun& a, const WorkerRun& c,
                                     const std::vector<double>& la,
                                     const std::vector<double>& resumed, int64_t steps) {
  RoundtripComparison out;
  out.losses_equal = la.size() == static_cast<size_t>(steps) && resumed.size() == la.size();
  for (size_t i = 0; i < la.size() && i < resumed.size(); ++i) {
    const double d = std::fabs(la[i] - resumed[i]);
    if (d != 0 && out.first_divergent_step == 0)
      out.first_divergent_step = static_cast<int64_t>(i) + 1;
    out.max_loss_diff = std::max(out.max_loss_diff, d);
    out.losses_equal = out.losses_equal && la[i] == resumed[i];
  }
  const nlohmann::json fa = Fingerprints(a);
  const nlohmann::json fc = Fingerprints(c);
  out.states_equal = fa == fc && !fa.empty();
  out.max_state_diff = 0.0;
  if (out.states_equal) return out;
  for (auto& [name, fingerprint] : fa.items()) {
    if (!fc.contains(name) || fc[name] != fingerprint) {
      out.first_divergent_tensor = name;
      break;
    }
  }
  out.max_state_diff = std::nullopt;
  if (!a.state_file.empty() && !c.state_file.empty()) {
    std::string ignored;
    out.max_state_diff = MaxAbsStateDifference(a.state_file, c.state_file, &ignored);
  }
  return out;
}

// The torn-snapshot check (--kill-during-save): the state C holds right after its restore
// against A's after the same step, both digested here from the files the coordinator named.
// Sets `m`'s snapshot members; a summary when the check fails or cannot run, "" when it passes.
std::string TornSnapshot(const JudgeInputs& in, RoundtripMetrics& m) {
  const StateDigest at = DigestStateFile(StateAtRestoredStepFile(in.o), IoThreads());
  const StateDigest restored = DigestStateFile(RestoredStateFile(in.o), IoThreads());
  const std::string step = std::to_string(StepToRestore(in.o));
  m.snapshot_equal = false;
  for (const StateDigest* d : {&at, &restored}) {
    if (!d->problem.empty() || d->tensors.empty()) {
      m.snapshot_first_different = "";
      return "the torn-snapshot check has no state to compare: " +
             (d->problem.empty() ? std::string("a state file holds no tensor") : d->problem) +
             " (the engine must write --state-at and --restored-state)";
    }
  }
  for (const auto& [name, digest] : at.tensors) {
    const auto other = restored.tensors.find(name);
    if (other == restored.tensors.end() || other->second != digest) {
      m.snapshot_first_different = name;
      return "the checkpoint of step " + step + " holds a state other than step " + step +
             "'s: " + name + (other == restored.tensors.end() ? " is missing" : " differs");
    }
  }
  if (restored.tensors.size() != at.tensors.size()) {
    m.snapshot_first_different = "";
    return "the checkpoint of step " + step + " holds tensors the state of step " + step +
           " does not";
  }
  m.snapshot_equal = true;
  return "";
}

CheckResult RoundtripCheck(const JudgeInputs& in, const RoundtripRuns& runs) {
  const WorkerRun &a = runs.a, &c = runs.c;
  RoundtripMetrics m = RoundtripFacts(in, a, runs.b, c, runs.checkpoint);
  if (std::optional<NotComparable> refused = RoundtripNotComparable(in, runs)) {
    m.bitwise_equal = false;
    if (refused->not_exercised)
      return NotMeasured("train.roundtrip", CheckStatus::kError, refused->summary, refused->remedy,
                         ToJson(m));
    return Judged("train.roundtrip", ToJson(m), refused->summary, refused->remedy);
  }
  if (in.o.kill_during_save) {
    if (const std::string torn = TornSnapshot(in, m); !torn.empty()) {
      m.bitwise_equal = false;
      return Judged("train.roundtrip", ToJson(m), torn,
                    "stage a checkpoint's tensors before the next optimizer step changes them, "
                    "and write the state the coordinator asks for");
    }
  }
  const std::vector<double>& la = *m.losses_uninterrupted;
  const std::vector<double>& resumed = *m.losses_resumed;
  const RoundtripComparison cmp = CompareRoundtrip(a, c, la, resumed, in.o.steps);
  // What the uninterrupted run computed, to the bit: ranks on GPUs of one model must agree.
  m.reference_digest = Sha256Hex(nlohmann::json(la).dump() + Fingerprints(a).dump());
  // The state alone, the coordinator's reading of the file: what another node must agree with.
  if (StateProblem(a).empty()) m.golden_digest = GoldenStateDigest(a.state->tensors);
  const bool bitwise = cmp.losses_equal && cmp.states_equal;
  m.bitwise_equal = bitwise;
  m.max_abs_loss_diff = cmp.max_loss_diff;
  m.final_state_equal = cmp.states_equal;
  m.max_abs_state_diff = cmp.max_state_diff;
  m.loss_tolerance = in.o.loss_tolerance;
  m.mode = "deterministic";  // every process of the round trip, for the bitwise check
  std::string summary;
  if (bitwise) {
    const std::string at = std::to_string(in.o.checkpoint_at), of = std::to_string(in.o.steps);
    summary = a.pid == runs.b.pid
                  ? "resumed run is bitwise equal to the uninterrupted one: the process that "
                    "saved at step " +
                        at + " trained on to step " + of +
                        " and was killed with SIGKILL, a fresh one resumed from step " + at
                  : "resumed run is bitwise equal to the uninterrupted one after SIGKILL at step " +
                        at + " of " + of;
    if (in.o.engine != "native") summary += " (engine " + in.o.engine + ")";
    summary +=
        ": the final states the coordinator read from the processes' files, and the "
        "losses they reported";
    const nlohmann::json skipped = m.skipped_uncommitted.value_or(nlohmann::json());
    if (m.killed_during_save.value_or(false))
      summary += "; killed at " + in.o.kill_point + " of the next save" +
                 (skipped.is_array() && !skipped.empty()
                      ? ", whose torn directory the resumed process reported it skipped"
                      : "");
    else if (in.o.kill_during_save)
      summary += "; killed at " + in.o.kill_point + " of the next save, which it restored";
    if (m.snapshot_equal.value_or(false))
      summary += "; the restored state is bitwise the state of step " +
                 std::to_string(StepToRestore(in.o));
    summary += "; " + VerifiedSentence(*runs.checkpoint);
    return Judged("train.roundtrip", ToJson(m), summary);
  }
  // A tolerance forgives loss noise only: never a final state that differs, nor a resume that
  // did not restore every source of state.
  const bool restored_everything =
      m.rng_restored.value_or(false) && m.data_restored.value_or(false);
  if (in.o.loss_tolerance > 0 && cmp.max_loss_diff <= in.o.loss_tolerance &&
      la.size() == resumed.size() && cmp.states_equal && restored_everything) {
    return Judged("train.roundtrip", ToJson(m),
                  "resumed run within the documented tolerance " +
                      std::to_string(in.o.loss_tolerance) + " (max loss difference " +
                      std::to_string(cmp.max_loss_diff) + "), not bitwise; " +
                      VerifiedSentence(*runs.checkpoint));
  }
  m.first_divergent_step = cmp.first_divergent_step;
  if (!cmp.first_divergent_tensor.empty()) m.first_divergent_tensor = cmp.first_divergent_tensor;
  std::ostringstream s;
  s << "resumed run diverges from the uninterrupted one";
  if (cmp.first_divergent_step)
    s << " at step " << cmp.first_divergent_step << " (max loss difference " << cmp.max_loss_diff
      << ")";
  if (!cmp.states_equal)
    s << "; final state differs"
      << (cmp.first_divergent_tensor.empty() ? ""
                                             : " first in '" + cmp.first_divergent_tensor + "'");
  return Judged("train.roundtrip", ToJson(m), s.str(),
                "a checkpoint must carry every source of state: RNG streams (CPU and device), "
                "data-loader position, optimizer moments, scheduler and loss scaler");
}

// Process E restored B's checkpoint at another world size and trained to the end. The round
// trip passes only when E too reproduced A; an engine that cannot carry its data position
// across world sizes says so, and that is the finding instead of a pass.
CheckResult ReshardCheck(const JudgeInputs& in, const WorkerRun& a, const WorkerRun& e,
                         CheckResult roundtrip) {
  ReshardMetrics m;
  m.saved_world_size = in.o.engine_nproc;
  m.restored_world_size = in.o.reshard_to;
  m.restored_step = RestoredStep(e);
  m.data_position_carried = RestoreOf(e).data_position_carried.value_or(false);
  const auto rt = ReadMetrics<RoundtripMetrics>(roundtrip.metrics);
  std::vector<double> la = Losses(a), resharded;
  const std::vector<double> before = rt.losses_resumed.value_or(std::vector<double>{});
  for (int64_t i = 0; i < StepToRestore(in.o) && i < static_cast<int64_t>(before.size()); ++i)
    resharded.push_back(before[static_cast<size_t>(i)]);
  for (double l : Losses(e)) resharded.push_back(l);
  m.losses_resharded = resharded;
  double max_diff = 0;
  bool losses_equal = resharded.size() == la.size();
  for (size_t i = 0; i < la.size() && i < resharded.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(la[i] - resharded[i]));
    losses_equal = losses_equal && la[i] == resharded[i];
  }
  const nlohmann::json fa = Fingerprints(a);
  const nlohmann::json fe = Fingerprints(e);
  m.final_state_equal = !fa.empty() && fa == fe;
  m.bitwise_equal = losses_equal && *m.final_state_equal;
  m.max_abs_loss_diff = max_diff;
  RoundtripMetrics holder;
  holder.reshard = ToJson(m);
  AddMetrics(&roundtrip.metrics, ToJson(holder));
  const std::string what =
      "resharding " + std::to_string(in.o.engine_nproc) + " -> " + std::to_string(in.o.reshard_to);
  if (roundtrip.status != CheckStatus::kPass) return roundtrip;  // the resume already said why
  std::string summary = roundtrip.summary, remedy = "see process e-resharded's stderr";
  if (const std::string failure = ProcessFailure(in, e); !failure.empty()) {
    summary = what + ": process e-resharded: " + failure;
  } else if (const std::string problem = StateProblem(e); !problem.empty()) {
    summary = what + ": " + problem;
  } else if (m.restored_step != std::optional<int64_t>(StepToRestore(in.o))) {
    summary = what + ": the resharded process did not restore the committed step " +
              std::to_string(StepToRestore(in.o));
  } else if (!*m.data_position_carried) {
    summary = what +
              ": the engine cannot carry its data position across world sizes, so a resharded "
              "resume does not continue the run's data order";
    remedy =
        "resume at the world size the checkpoint was saved at, or use an engine whose sampler "
        "state is global (fsdp2)";
  } else if (*m.bitwise_equal) {
    summary += "; " + what + " also bitwise equal to the uninterrupted run";
    remedy.clear();
  } else {
    std::ostringstream s;
    s << what << ": the resumed run is not bitwise equal to the uninterrupted one (max loss "
      << "difference " << max_diff << (*m.final_state_equal ? "" : "; final state differs") << ")";
    summary = s.str();
    remedy =
        "a reduction over another number of ranks sums in another order; compare within a "
        "tolerance only when the long run will reshard";
  }
  CheckResult judged = Judged("train.roundtrip", roundtrip.metrics, summary, remedy);
  judged.duration_s = roundtrip.duration_s;
  return judged;
}

CheckResult EvalCheck(const JudgeInputs& in, const RoundtripRuns& runs) {
  const WorkerRun &b = runs.b, &c = runs.c;
  if (const std::string why = NotRestoredBecause(in, runs); !why.empty())
    return Judged("train.eval", nlohmann::json::object(), "no eval loss after a restore: " + why,
                  "see train.roundtrip");
  const std::optional<double> saved = EvalAfterSaveOf(b, StepToRestore(in.o));
  if (!saved || !c.result.eval_after_restore) {
    return Judged(
        "train.eval", nlohmann::json::object(),
        "no eval loss around the checkpoint: " + ProcessFailure(in, c.result.error ? c : b),
        "see the processes' stderr in " + in.o.work_dir.string());
  }
  double before = *saved;
  double after = *c.result.eval_after_restore;
  double diff = std::fabs(before - after);
  const nlohmann::json m = ToJson(EvalMetrics{before, after, diff, in.o.eval_tolerance});
  if (diff > in.o.eval_tolerance) {
    return Judged("train.eval", m,
                  "eval loss changed across save/restore: " + std::to_string(before) + " -> " +
                      std::to_string(after),
                  "the restored parameters differ from the saved ones; check the checkpoint "
                  "writer and reader");
  }
  return Judged("train.eval", m,
                "eval loss " + std::to_string(before) +
                    " before the save and after the restore, as the processes reported it");
}

CheckResult PortableCheck(const JudgeInputs& in, const RoundtripRuns& runs) {
  const WorkerRun &b = runs.b, &d = runs.d;
  if (const std::string why = NotRestoredBecause(in, runs); !why.empty()) {
    PortableMetrics m;
    if (runs.checkpoint) m.checkpoint = ToJson(VerifiedMetrics(*runs.checkpoint));
    return Judged("ckpt.portable", ToJson(m), "no checkpoint to restore in a fresh process: " + why,
                  "see train.roundtrip");
  }
  const VerifiedCheckpoint& verified = *runs.checkpoint;
  std::string failure = ProcessFailure(in, d);
  const std::optional<double> saved = EvalAfterSaveOf(b, StepToRestore(in.o));
  if (!failure.empty() || !saved) {
    return Judged("ckpt.portable", nlohmann::json::object(),
                  "a fresh process could not use the checkpoint: " +
                      (failure.empty() ? "no reference eval loss" : failure),
                  "the checkpoint must be self-describing: config, seed and data description in "
                  "manifest.json");
  }
  double want = *saved, got = d.result.eval.value_or(0.0);
  const std::optional<int64_t> restored = RestoredStep(d);
  const PortableMetrics m{d.pid,
                          got,
                          want,
                          std::fabs(got - want),
                          ToJson(VerifiedMetrics(verified)),
                          in.o.eval_tolerance,
                          restored};
  if (restored != verified.step) {
    return Judged(
        "ckpt.portable", ToJson(m),
        "process " + d.name + " restored " +
            (restored ? "step " + std::to_string(*restored) : std::string("no step it reported")) +
            ", not the checkpoint the coordinator verified (" + verified.dir.filename().string() +
            ")",
        "another checkpoint shares the checkpoint directory; give the run its own");
  }
  const std::string words = "a fresh process restored step " + std::to_string(verified.step) +
                            " and reported eval loss " + std::to_string(got);
  if (std::fabs(got - want) > in.o.eval_tolerance) {
    return Judged("ckpt.portable", ToJson(m),
                  words + ", the saving process reported " + std::to_string(want),
                  "the checkpoint does not carry everything the model needs");
  }
  return Judged("ckpt.portable", ToJson(m),
                words + " (the saving process reported " + std::to_string(want) + "); " +
                    VerifiedSentence(verified));
}

}  // namespace

bool DecidedByA(const JudgeInputs& in, const WorkerRun& a) {
  const std::string kind = ErrorKind(a);
  return kind == kErrorUnsupported || kind == kErrorOutOfMemory || in.o.step_only;
}

namespace {

// The four checks when DecidedByA: from runs.a (and runs.telemetry) alone.
std::vector<CheckResult> JudgeFromA(const JudgeInputs& in, const RoundtripRuns& runs) {
  const WorkerRun& a = runs.a;
  const std::string kind = ErrorKind(a);
  std::vector<CheckResult> checks;
  if (kind == kErrorUnsupported) {
    // The engine refused what this environment gives it (engine_probe.h decides most of it
    // before any work): the node is not judged, nothing is failed.
    checks = CannotRunChecks(in, a);
  } else if (kind == kErrorOutOfMemory) {
    // Nothing to resume: every later process would fail the same way.
    const std::string why = "the training step does not fit (see train.step); nothing to resume";
    checks = {StepCheck(in, a)};
    for (const char* id : {"train.roundtrip", "train.eval", "ckpt.portable"})
      checks.push_back(NotMeasured(id, CheckStatus::kSkip, why, "apply a train.step remedy first"));
  } else {  // only train.step was selected
    checks = {StepCheck(in, a)};
    for (const char* id : {"train.roundtrip", "train.eval", "ckpt.portable"})
      checks.push_back(NotMeasured(id, CheckStatus::kSkip, "not selected (--only)"));
    // train.step's rule reads the telemetry where the gate finds it: in train.roundtrip.
    RoundtripMetrics sampled;
    sampled.telemetry = ToJson(runs.telemetry);
    checks[1].metrics = ToJson(sampled);
    JudgeStepBesideTelemetry(runs.telemetry, &checks[0]);
  }
  checks[0].duration_s = runs.a_s;
  return checks;
}

std::vector<CheckResult> JudgeEveryProcess(const JudgeInputs& in, const RoundtripRuns& r) {
  const WorkerRun& a = r.a;
  // A check outside --only is never judged, though its processes ran for a selected one.
  std::vector<CheckResult> checks = {
      RunSelected(in.o.only, "train.step", [&] { return StepCheck(in, a); }),
      RunSelected(in.o.only, "train.roundtrip", [&] { return RoundtripCheck(in, r); }),
      RunSelected(in.o.only, "train.eval", [&] { return EvalCheck(in, r); }),
      RunSelected(in.o.only, "ckpt.portable", [&] { return PortableCheck(in, r); })};
  const bool roundtrip_judged = Selected(in.o.only, {"train.roundtrip"});
  if (roundtrip_judged) checks[1].duration_s = r.a_s + r.b_s + r.c.seconds;
  nlohmann::json processes = nlohmann::json::object();
  for (const WorkerRun* run : {&a, &r.b, &r.c, &r.d})
    if (!run->name.empty()) processes[run->name] = ProcessTimes(*run);  // C and D may not have run
  if (r.e && roundtrip_judged) {
    checks[1] = ReshardCheck(in, a, *r.e, std::move(checks[1]));
    checks[1].duration_s += r.e_s;
    processes[r.e->name] = ProcessTimes(*r.e);
  }
  RoundtripMetrics placement;
  placement.portable_beside_resume = r.beside;
  if (r.beside_end) placement.portable_beside_resume_end = true;
  if (!r.states_in.empty()) placement.states_in = r.states_in;
  if (!r.states_not_in_memory.empty()) placement.states_not_in_memory = r.states_not_in_memory;
  placement.processes = processes;
  placement.telemetry = ToJson(r.telemetry);
  JudgeStepBesideTelemetry(r.telemetry, &checks[0]);  // a throttled step time is not the node's
  if (roundtrip_judged) AddMetrics(&checks[1].metrics, ToJson(placement));
  if (Selected(in.o.only, {"train.eval"})) checks[2].duration_s = r.c.seconds;
  if (Selected(in.o.only, {"ckpt.portable"})) checks[3].duration_s = r.d.seconds;
  return checks;
}

// train.step fails with `summary` and `remedy`; the other three skip, since nothing trained.
std::vector<CheckResult> NothingTrainedChecks(const std::string& summary, const std::string& remedy,
                                              const std::string& skipped) {
  std::vector<CheckResult> checks = {
      Judged("train.step", nlohmann::json::object(), summary, remedy)};  // nothing measured
  for (const char* id : {"train.roundtrip", "train.eval", "ckpt.portable"})
    checks.push_back(NotMeasured(id, CheckStatus::kSkip, skipped, "see train.step"));
  return checks;
}

std::vector<CheckResult> RefusedChecks(const RoundtripRefusal& refused) {
  if (refused.why == RoundtripRefusal::Why::kEngineFiles) {
    // Nothing may train: the engine's files are not the ones the lock pins.
    return NothingTrainedChecks(refused.message,
                                "re-lock with this trainlock, or validate in the image built "
                                "from the lock",
                                "the engine's files are not the pinned ones");
  }
  return NothingTrainedChecks("a pinned file is not trained on: " + refused.message,
                              "keep pinned files inside the project (data.* names the file)",
                              "nothing was trained: a pinned file leads outside the project");
}

}  // namespace

std::vector<CheckResult> JudgeRoundtrip(const JudgeInputs& in, const RoundtripRuns& runs) {
  if (runs.refused) return RefusedChecks(*runs.refused);
  if (runs.decided_by_a) return JudgeFromA(in, runs);
  return JudgeEveryProcess(in, runs);
}

}  // namespace trainlock::validate
