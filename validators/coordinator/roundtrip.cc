// The resume test's coordinator; see roundtrip.h.
#include "coordinator/roundtrip.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "base/json_file.h"
#include "base/program_path.h"
#include "base/sha256.h"
#include "compat/catalog.h"
#include "engines/native/checkpoint.h"
#include "plan/memory_model.h"
#include "plan/memory_remedies.h"
#include "probes/gpu_telemetry.h"
#include "probes/host_memory.h"
#include "project/project.h"
#include "project/train_shape.h"
#include "report/check_metrics.h"
#include "support/worker_process.h"
#include "worker/worker.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

struct WorkerRun {
  std::string name;
  int pid = -1;
  std::optional<int> exit_code;  // nullopt: timed out
  nlohmann::json result;         // its result file (empty object when none)
  std::string stderr_tail;
  bool killed_by_us = false;
  uint64_t peak_rss_bytes = 0;                                // sampled while it ran
  std::optional<uint64_t> oom_kills_before, oom_kills_after;  // the cgroup's OOM-killer count
};

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class Coordinator {
 public:
  Coordinator(const RoundtripOptions& o, const Project& project) : o_(o), project_(project) {}

  std::vector<CheckResult> Run();

 private:
  std::vector<std::string> Args(const std::string& name,
                                const std::vector<std::string>& extra) const;
  struct Launched {
    WorkerRun run;
    std::unique_ptr<Child> child;
    std::unique_ptr<RssSampler> rss;
    Clock::time_point started;
  };
  Launched Launch(const std::string& name, const std::vector<std::string>& extra) const;
  // Waits for the worker (SIGKILLing it as soon as it announces its checkpoint when
  // `preempt_after_commit`) and collects its result; `*seconds` gets its wall time.
  WorkerRun Finish(Launched launched, bool preempt_after_commit, double* seconds) const;
  WorkerRun Start(const std::string& name, const std::vector<std::string>& extra,
                  bool preempt_after_commit, double* seconds) const {
    return Finish(Launch(name, extra), preempt_after_commit, seconds);
  }
  bool PortableFitsBesideResume(const WorkerRun& a) const;
  static nlohmann::json ReadJson(const fs::path& file);
  std::string Failure(const WorkerRun& run) const;
  void CorruptLatestCheckpoint();

  CheckResult StepCheck(const WorkerRun& a) const;
  CheckResult OutOfMemoryCheck(const WorkerRun& a) const;
  CheckResult RoundtripCheck(const WorkerRun& a, const WorkerRun& b, const WorkerRun& c) const;
  CheckResult EvalCheck(const WorkerRun& b, const WorkerRun& c) const;
  CheckResult PortableCheck(const WorkerRun& b, const WorkerRun& d) const;

  const RoundtripOptions& o_;
  const Project& project_;
};

std::vector<std::string> Coordinator::Args(const std::string& name,
                                           const std::vector<std::string>& extra) const {
  std::vector<std::string> args = {RunningExecutable().string(),
                                   "worker",
                                   "--project",
                                   o_.project.string(),
                                   "--checkpoint-root",
                                   o_.checkpoint_root.string(),
                                   "--result",
                                   (o_.work_dir / (name + ".json")).string(),
                                   "--device",
                                   o_.device,
                                   "--threads",
                                   std::to_string(o_.threads),
                                   "--keep-last",
                                   std::to_string(o_.keep_last)};
  // The config this run records differs from the lock's only under --allow-drift (validate.cc
  // refuses it otherwise): the workers then verify the bytes they read against the recorded one.
  if (project_.lock && project_.lock->config_sha256 != project_.config_sha256) {
    args.push_back("--config-sha256");
    args.push_back(project_.config_sha256);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

nlohmann::json Coordinator::ReadJson(const fs::path& file) {
  std::optional<nlohmann::json> j = TryReadJsonFile(file, nullptr);
  return j && j->is_object() ? std::move(*j) : nlohmann::json::object();
}

Coordinator::Launched Coordinator::Launch(const std::string& name,
                                          const std::vector<std::string>& extra) const {
  Launched l;
  l.run.name = name;
  l.started = Clock::now();
  l.run.oom_kills_before = CgroupOomKills();
  l.child = std::make_unique<Child>(Args(name, extra), o_.work_dir / (name + ".stderr"));
  l.run.pid = l.child->pid();
  l.rss = std::make_unique<RssSampler>(l.run.pid);
  return l;
}

WorkerRun Coordinator::Finish(Launched l, bool preempt_after_commit, double* seconds) const {
  WorkerRun run = std::move(l.run);
  auto deadline = l.started + std::chrono::seconds(o_.timeout_s);
  if (preempt_after_commit) {
    // Preemption: SIGKILL as soon as the checkpoint is committed, while the next step runs.
    while (auto line = l.child->ReadLine(deadline)) {
      if (line->rfind(kCommittedLine, 0) == 0) {
        l.child->Kill();
        run.killed_by_us = true;
        break;
      }
    }
  }
  run.exit_code = l.child->Wait(deadline);
  if (seconds) *seconds = Seconds(l.started);
  run.peak_rss_bytes = l.rss->peak_bytes();
  l.rss.reset();
  run.oom_kills_after = CgroupOomKills();
  run.result = ReadJson(o_.work_dir / (run.name + ".json"));
  run.stderr_tail = TailOfFile(o_.work_dir / (run.name + ".stderr"), 5);
  return run;
}

// The portable process (D) only evaluates, so it can share the device with the resumed one
// (C) when the memory left beside a training step, as process A measured it, holds D's
// weights and eval logits with a margin; otherwise D runs after C.
bool Coordinator::PortableFitsBesideResume(const WorkerRun& a) const {
  const auto m =
      ReadMetrics<TrainStepMetrics>(a.result.value("measurement", nlohmann::json::object()));
  const int64_t total = m.device_total_bytes.value_or(-1);
  const int64_t used = m.device_used_bytes.value_or(-1);
  if (total <= 0 || used < 0) return false;  // CPU, or nothing measured: keep them apart
  MemoryEstimate estimate = EstimateTrainingMemory(project_.config);
  const double need = estimate.weights_bytes + estimate.logits_bytes + 2.0 * (1 << 30);
  return static_cast<double>(total - used) > need;
}

std::string Coordinator::Failure(const WorkerRun& run) const {
  if (!run.exit_code) {
    return "process " + run.name + " did not finish within " + std::to_string(o_.timeout_s) +
           " s; its output is in " + o_.work_dir.string();
  }
  if (run.result.contains("error")) return run.result["error"].value("message", "failed");
  if (run.killed_by_us) return "";
  if (*run.exit_code == 128 + SIGKILL) {
    return DescribeOutsideKill(run.name, run.peak_rss_bytes, HostMemoryBytes(),
                               run.oom_kills_before, run.oom_kills_after) +
           "; its output is in " + o_.work_dir.string();
  }
  if (*run.exit_code != 0) {
    return "process " + run.name + " exited with " + std::to_string(*run.exit_code) +
           (run.stderr_tail.empty()
                ? ""
                : ": " + run.stderr_tail.substr(run.stderr_tail.rfind('\n') + 1));
  }
  return "";
}

void Coordinator::CorruptLatestCheckpoint() {
  // Flip one byte in the middle of the newest checkpoint's first parameter file.
  fs::path latest;
  for (const auto& e : fs::directory_iterator(o_.checkpoint_root)) {
    if (e.path().filename().string().rfind("step-", 0) == 0 && e.path() > latest) latest = e.path();
  }
  fs::path file;
  for (const auto& e : fs::directory_iterator(latest)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("model", 0) == 0 && e.path().extension() == ".safetensors" &&
        (file.empty() || e.path() < file)) {
      file = e.path();
    }
  }
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  auto size = static_cast<std::streamoff>(fs::file_size(file));
  f.seekg(size / 2);
  char byte = 0;
  f.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x01);
  f.seekp(size / 2);
  f.write(&byte, 1);
}

std::vector<double> Losses(const nlohmann::json& result) {
  std::vector<double> out;
  const nlohmann::json losses = result.value("losses", nlohmann::json::array());
  for (const auto& l : losses) {
    const nlohmann::json loss = l.is_object() ? l.value("loss", nlohmann::json()) : nullptr;
    out.push_back(loss.is_number() ? loss.get<double>() : std::nan(""));
  }
  return out;
}

// Whether the resumed worker restored `flag` ("rng_restored", "data_restored"): only when it
// says so. A worker that never got to restore restored nothing.
bool RestoredFlag(const nlohmann::json& result, const char* flag) {
  if (!result.contains("restore") || !result["restore"].is_object()) return false;
  const nlohmann::json& value = result["restore"].value(flag, nlohmann::json());
  return value.is_boolean() && value.get<bool>();
}

// The step the resumed process found in the checkpoint it restored, as it reported it
// (worker.cc's restore object); nullopt when it reported none.
std::optional<int64_t> RestoredStep(const nlohmann::json& result) {
  if (!result.contains("restore") || !result["restore"].is_object()) return std::nullopt;
  const nlohmann::json& step = result["restore"].value("step", nlohmann::json());
  return step.is_number_integer() ? std::optional<int64_t>(step.get<int64_t>()) : std::nullopt;
}

// What of the config's shape the worker's observed shape (measured_shape) contradicts, "" when
// nothing: a step measured at another precision or without the recomputation the config asks
// for is not the config's step. A worker that reported no observed shape contradicts it too.
std::string ShapeMismatch(const TrainStepMetrics& m, const TrainConfig& config) {
  if (!m.measured_shape || !m.measured_shape->is_object()) return "the worker reported no shape";
  const auto seen = ReadMetrics<MeasuredShapeMetrics>(*m.measured_shape);
  const TrainingConfig& t = config.training;
  const std::string dtype = seen.activation_dtype.value_or("none");
  if (dtype != t.precision)
    return "activations in " + dtype + ", the config's precision is " + t.precision;
  if (seen.activation_checkpointing.value_or(!t.activation_checkpointing) !=
      t.activation_checkpointing)
    return std::string("activation checkpointing ") + (t.activation_checkpointing ? "off" : "on") +
           ", the config asks for it " + (t.activation_checkpointing ? "on" : "off");
  return "";
}

CheckResult Coordinator::StepCheck(const WorkerRun& a) const {
  CheckResult c{"train.step", CheckStatus::kPass, 0, "", "", nlohmann::json::object()};
  std::string failure = Failure(a);
  if (a.result.contains("error") && a.result["error"].value("kind", "") == "out_of_memory") {
    return OutOfMemoryCheck(a);
  }
  if (a.result.contains("error") && a.result["error"].value("kind", "") == "integrity") {
    c.status = CheckStatus::kFail;
    c.summary = "a pinned file is not the one the lock pins: " + failure;
    c.remedy =
        "restore the file the lock pins, or re-lock (`trainlock lock`) if the change is "
        "intended";
    TrainStepMetrics m;
    m.artifacts = ReadMetrics<TrainStepMetrics>(a.result).artifacts;
    c.metrics = ToJson(m);
    return c;
  }
  if (!failure.empty() || !a.result.contains("measurement")) {
    c.status = CheckStatus::kFail;
    c.summary = "the training step failed at the intended shape: " +
                (failure.empty() ? "no measurement" : failure);
    c.remedy =
        "see the process output in the work directory; an out-of-memory is reported with remedies";
    return c;
  }
  TrainStepMetrics m = ReadMetrics<TrainStepMetrics>(a.result["measurement"]);
  // The worker names its device, data and model with train.step's members (worker.cc).
  const auto worker = ReadMetrics<TrainStepMetrics>(a.result);
  m.device = worker.device.value_or("");
  m.device_name = worker.device_name;
  m.data = worker.data.value_or("");
  m.model = worker.model.value_or(nlohmann::json::object());
  m.artifacts = worker.artifacts;
  m.shape = TrainShapeJson(project_.config);
  if (const std::string off = ShapeMismatch(m, project_.config); !off.empty()) {
    c.status = CheckStatus::kFail;
    c.metrics = ToJson(m);
    c.summary = "the step did not run at the config's shape: " + off;
    c.remedy =
        "the engine trained another shape than the config states; a validation only "
        "passes at the shape the long run trains";
    return c;
  }
  const double step_time_s = m.step_time_s.value_or(0.0);
  c.duration_s = step_time_s;
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
    const std::string& precision = project_.config.training.precision;
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
  c.metrics = ToJson(m);
  c.summary = s.str();
  return c;
}

// Out of memory at the intended shape is a finding with numbers and ranked remedies: the
// fixes `trainlock plan` gives for this report, from the same engine (plan/memory_remedies.h).
CheckResult Coordinator::OutOfMemoryCheck(const WorkerRun& a) const {
  CheckResult c{"train.step", CheckStatus::kFail, 0, "", "", nlohmann::json::object()};
  TrainStepMetrics m =
      ReadMetrics<TrainStepMetrics>(a.result["error"].value("memory", nlohmann::json::object()));
  const TrainConfig& config = project_.config;
  double total = static_cast<double>(m.device_total_bytes.value_or(-1));
  MemoryEstimate estimate = EstimateTrainingMemory(config);
  const auto worker = ReadMetrics<TrainStepMetrics>(a.result);
  std::vector<std::string> remedies =
      MemoryRemedies(config, worker.device_name.value_or(""), total, Catalog::Embedded());
  m.device_name = worker.device_name;
  m.out_of_memory = true;
  m.error = a.result["error"].value("message", "");
  m.seq_len = config.training.seq_len;
  m.micro_batch = config.training.micro_batch;
  m.shape = TrainShapeJson(config);
  m.estimate = ToJson(MemoryEstimateMetrics{
      estimate.parameters, estimate.weights_bytes, estimate.grads_bytes, estimate.optimizer_bytes,
      estimate.activation_bytes, estimate.logits_bytes, estimate.total_bytes()});
  m.remedies = remedies;
  c.metrics = ToJson(m);
  c.summary = "out of memory at seq_len " + std::to_string(config.training.seq_len) +
              ", micro_batch " + std::to_string(config.training.micro_batch) +
              ": the step needs about " + GiB(estimate.total_bytes()) + " (weights " +
              GiB(estimate.weights_bytes) + ", grads " + GiB(estimate.grads_bytes) + ", AdamW " +
              GiB(estimate.optimizer_bytes) + ", activations " + GiB(estimate.activation_bytes) +
              ", logits " + GiB(estimate.logits_bytes) + ")" +
              (total > 0 ? "; the device has " + GiB(total) + ", peak reserved " +
                               GiB(static_cast<double>(m.peak_reserved_bytes.value_or(0)))
                         : "");
  for (size_t i = 0; i < remedies.size(); ++i) {
    c.remedy += (i ? "; " : "") + std::to_string(i + 1) + ") " + remedies[i];
  }
  return c;
}

CheckResult Coordinator::RoundtripCheck(const WorkerRun& a, const WorkerRun& b,
                                        const WorkerRun& c) const {
  CheckResult r{"train.roundtrip", CheckStatus::kPass, 0, "", "", nlohmann::json::object()};
  std::vector<double> la = Losses(a.result), lb = Losses(b.result), lc = Losses(c.result);
  std::vector<double> resumed;
  for (int64_t i = 0; i < static_cast<int64_t>(lb.size()) && i < o_.checkpoint_at; ++i)
    resumed.push_back(lb[i]);
  for (double l : lc) resumed.push_back(l);
  RoundtripMetrics m;
  m.steps = o_.steps;
  m.checkpoint_at = o_.checkpoint_at;
  m.pids = {{"uninterrupted", a.pid}, {"preempted", b.pid}, {"resumed", c.pid}};
  m.preempted_with = "SIGKILL";
  m.losses_uninterrupted = la;
  m.losses_resumed = resumed;
  m.rng_restored = RestoredFlag(c.result, "rng_restored");
  m.data_restored = RestoredFlag(c.result, "data_restored");
  m.restored_step = RestoredStep(c.result);
  if (b.result.contains("save")) {
    const auto& save = b.result["save"];
    m.checkpoint_bytes = save["bytes"];
    m.save_s = save["seconds"];  // to durable storage
    m.save_gbps = save["gbps"];
    // What training was held up for (the copy into staging memory); the write went on beside it.
    auto seconds = [&](const char* key) {
      return save.contains(key) && save[key].is_number() ? Number(save[key].get<double>())
                                                         : std::nullopt;
    };
    m.save_blocking_s = seconds("blocking_s");
    m.save_staging_wait_s = seconds("staging_wait_s");
    m.save_staging_alloc_s = seconds("staging_alloc_s");
    m.save_write_s = seconds("write_s");
  }
  if (c.result.contains("restore")) {
    m.restore_s = c.result["restore"]["seconds"];
    m.restore_gbps = c.result["restore"]["gbps"];
  }
  for (const WorkerRun* run : {&a, &b, &c}) {
    std::string failure = Failure(*run);
    if (!failure.empty()) {
      r.status = CheckStatus::kFail;
      r.summary = "process " + run->name + ": " + failure;
      r.remedy =
          run->result.contains("error") && run->result["error"]["kind"] == "checkpoint"
              ? "the checkpoint did not verify: check the storage (checkpoint-dir) for corruption"
              : "see the worker's stderr in " + o_.work_dir.string();
      m.bitwise_equal = false;
      r.metrics = ToJson(m);
      return r;
    }
  }
  if (!b.killed_by_us) {
    r.status = CheckStatus::kError;
    r.summary = "the preempted process never announced its checkpoint";
    m.bitwise_equal = false;
    r.metrics = ToJson(m);
    return r;
  }
  // The resume must start from the checkpoint the preempted process committed, not an older
  // or newer one left in the storage.
  if (*m.restored_step != o_.checkpoint_at) {
    r.status = CheckStatus::kFail;
    r.summary = "the resumed process restored " +
                (*m.restored_step ? "step " + std::to_string(**m.restored_step)
                                  : std::string("no step it reported")) +
                ", not the checkpoint committed at step " + std::to_string(o_.checkpoint_at);
    r.remedy = "another checkpoint shares the checkpoint directory; give the run its own";
    m.bitwise_equal = false;
    r.metrics = ToJson(m);
    return r;
  }
  double max_diff = 0;
  int64_t first_divergent = 0;
  bool losses_equal = la.size() == static_cast<size_t>(o_.steps) && resumed.size() == la.size();
  for (size_t i = 0; i < la.size() && i < resumed.size(); ++i) {
    double d = std::fabs(la[i] - resumed[i]);
    if (d != 0 && first_divergent == 0) first_divergent = static_cast<int64_t>(i) + 1;
    max_diff = std::max(max_diff, d);
    losses_equal = losses_equal && la[i] == resumed[i];
  }
  const nlohmann::json& fa = a.result["final_state"]["fingerprints"];
  const nlohmann::json& fc = c.result["final_state"]["fingerprints"];
  bool states_equal = fa == fc && !fa.empty();
  // What the uninterrupted run computed, to the bit: ranks on GPUs of one model must agree.
  m.reference_digest = Sha256Hex(nlohmann::json(la).dump() + fa.dump());
  std::string first_tensor;
  std::optional<double> state_diff = 0.0;
  if (!states_equal) {
    for (auto& [name, fingerprint] : fa.items()) {
      if (!fc.contains(name) || fc[name] != fingerprint) {
        first_tensor = name;
        break;
      }
    }
    state_diff = std::nullopt;  // unknown unless both states were written out
    if (a.result["final_state"].contains("file") && c.result["final_state"].contains("file")) {
      std::string ignored;
      state_diff =
          MaxAbsStateDifference(a.result["final_state"]["file"].get<std::string>(),
                                c.result["final_state"]["file"].get<std::string>(), &ignored);
    }
  }
  bool bitwise = losses_equal && states_equal;
  m.bitwise_equal = bitwise;
  m.max_abs_loss_diff = max_diff;
  m.final_state_equal = states_equal;
  m.max_abs_state_diff = state_diff;
  m.loss_tolerance = o_.loss_tolerance;
  m.mode = "deterministic";  // every process of the round trip, for the bitwise check
  r.metrics = ToJson(m);
  if (bitwise) {
    r.summary =
        "resumed run is bitwise equal to the uninterrupted one (losses, parameters, AdamW moments) "
        "after SIGKILL at step " +
        std::to_string(o_.checkpoint_at) + " of " + std::to_string(o_.steps);
    return r;
  }
  // A tolerance forgives loss noise only: never a final state that differs, nor a resume that
  // did not restore every source of state.
  const bool restored_everything =
      m.rng_restored.value_or(false) && m.data_restored.value_or(false);
  if (o_.loss_tolerance > 0 && max_diff <= o_.loss_tolerance && la.size() == resumed.size() &&
      states_equal && restored_everything) {
    r.summary = "resumed run within the documented tolerance " + std::to_string(o_.loss_tolerance) +
                " (max loss difference " + std::to_string(max_diff) + "), not bitwise";
    return r;
  }
  r.status = CheckStatus::kFail;
  m.first_divergent_step = first_divergent;
  if (!first_tensor.empty()) m.first_divergent_tensor = first_tensor;
  r.metrics = ToJson(m);
  std::ostringstream s;
  s << "resumed run diverges from the uninterrupted one";
  if (first_divergent)
    s << " at step " << first_divergent << " (max loss difference " << max_diff << ")";
  if (!states_equal)
    s << "; final state differs"
      << (first_tensor.empty() ? "" : " first in '" + first_tensor + "'");
  r.summary = s.str();
  r.remedy =
      "a checkpoint must carry every source of state: RNG streams (CPU and device), data-loader "
      "position, optimizer moments, scheduler and loss scaler";
  return r;
}

CheckResult Coordinator::EvalCheck(const WorkerRun& b, const WorkerRun& c) const {
  CheckResult r{"train.eval", CheckStatus::kPass, 0, "", "", nlohmann::json::object()};
  if (!b.result.contains("eval_after_save") || !c.result.contains("eval_after_restore")) {
    r.status = CheckStatus::kFail;
    r.summary =
        "no eval loss around the checkpoint: " + Failure(c.result.contains("error") ? c : b);
    return r;
  }
  double before = b.result["eval_after_save"], after = c.result["eval_after_restore"];
  double diff = std::fabs(before - after);
  r.metrics = ToJson(EvalMetrics{before, after, diff, o_.eval_tolerance});
  if (diff > o_.eval_tolerance) {
    r.status = CheckStatus::kFail;
    r.summary = "eval loss changed across save/restore: " + std::to_string(before) + " -> " +
                std::to_string(after);
    r.remedy =
        "the restored parameters differ from the saved ones; check the checkpoint writer and "
        "reader";
  } else {
    r.summary = "eval loss " + std::to_string(before) + " before the save and after the restore";
  }
  return r;
}

CheckResult Coordinator::PortableCheck(const WorkerRun& b, const WorkerRun& d) const {
  CheckResult r{"ckpt.portable", CheckStatus::kPass, 0, "", "", nlohmann::json::object()};
  std::string failure = Failure(d);
  if (!failure.empty() || !b.result.contains("eval_after_save")) {
    r.status = CheckStatus::kFail;
    r.summary = "a fresh process could not use the checkpoint: " +
                (failure.empty() ? "no reference eval loss" : failure);
    r.remedy =
        "the checkpoint must be self-describing: config, seed and data description in "
        "manifest.json";
    return r;
  }
  double want = b.result["eval_after_save"], got = d.result["eval"];
  r.metrics = ToJson(PortableMetrics{d.pid, got, want, std::fabs(got - want),
                                     d.result.value("checkpoint", nlohmann::json::object()),
                                     o_.eval_tolerance});
  if (std::fabs(got - want) > o_.eval_tolerance) {
    r.status = CheckStatus::kFail;
    r.summary = "a process with only the checkpoint computes eval loss " + std::to_string(got) +
                ", the run computed " + std::to_string(want);
    r.remedy = "the checkpoint does not carry everything the model needs";
  } else {
    r.summary =
        "a separate process verified the checkpoint from its manifest alone and reproduced eval "
        "loss " +
        std::to_string(got);
  }
  return r;
}

std::vector<CheckResult> Coordinator::Run() {
  fs::create_directories(o_.work_dir);
  fs::create_directories(o_.checkpoint_root);
  TelemetryWindow telemetry(o_.device);  // NVML samples while the processes train
  const std::string steps = std::to_string(o_.steps), at = std::to_string(o_.checkpoint_at);
  double a_s = 0, b_s = 0, c_s = 0, d_s = 0;
  WorkerRun a =
      Start("a-uninterrupted",
            {"--steps", steps, "--measure-step", std::to_string(std::min<int64_t>(2, o_.steps)),
             "--final-state", (o_.work_dir / "a-final.safetensors").string()},
            false, &a_s);
  if (a.result.contains("error") && a.result["error"].value("kind", "") == "out_of_memory") {
    // Nothing to resume: every later process would fail the same way.
    const std::string why = "the training step does not fit (see train.step); nothing to resume";
    std::vector<CheckResult> checks = {StepCheck(a)};
    for (const char* id : {"train.roundtrip", "train.eval", "ckpt.portable"}) {
      checks.push_back({id, CheckStatus::kSkip, 0, why, "apply a train.step remedy first",
                        nlohmann::json::object()});
    }
    checks[0].duration_s = a_s;
    return checks;
  }
  WorkerRun b = Start("b-preempted", {"--steps", steps, "--save-at", at}, true, &b_s);
  if (o_.negative_control == NegativeControl::kCorruptCheckpoint && b.killed_by_us)
    CorruptLatestCheckpoint();
  std::vector<std::string> c_args = {"--steps", steps, "--restore", "--final-state",
                                     (o_.work_dir / "c-final.safetensors").string()};
  if (o_.negative_control == NegativeControl::kSkipRngRestore) c_args.push_back("--no-restore-rng");
  if (o_.negative_control == NegativeControl::kSkipDataRestore)
    c_args.push_back("--no-restore-data");
  // C and D only read the committed checkpoint: run them side by side when they fit.
  const bool beside = PortableFitsBesideResume(a);
  Launched c_launched = Launch("c-resumed", c_args);
  std::optional<Launched> d_launched;
  if (beside) d_launched = Launch("d-portable", {"--role", "portable"});
  WorkerRun d = beside ? Finish(std::move(*d_launched), false, &d_s) : WorkerRun{};
  WorkerRun c = Finish(std::move(c_launched), false, &c_s);
  if (!beside) d = Start("d-portable", {"--role", "portable"}, false, &d_s);

  std::vector<CheckResult> checks = {StepCheck(a), RoundtripCheck(a, b, c), EvalCheck(b, c),
                                     PortableCheck(b, d)};
  checks[1].duration_s = a_s + b_s + c_s;
  RoundtripMetrics placement;
  placement.portable_beside_resume = beside;
  const TelemetryMetrics sampled =
      telemetry.Finish(ReadMetrics<TrainStepMetrics>(a.result).device.value_or(""));
  placement.telemetry = ToJson(sampled);
  ApplyThrottleFinding(sampled, &checks[0]);  // a throttled step time is not the node's
  AddMetrics(&checks[1].metrics, ToJson(placement));
  checks[2].duration_s = c_s;
  checks[3].duration_s = d_s;
  return checks;
}

}  // namespace

std::vector<CheckResult> RunRoundtrip(const RoundtripOptions& options, const Project& project) {
  return Coordinator(options, project).Run();
}

}  // namespace trainlock::validate
