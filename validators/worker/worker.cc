// The worker roles of the resume test; see worker.h.
#include "worker/worker.h"

#include <signal.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>

#include <iostream>
#include <set>
#include <thread>

#include "base/diagnostic.h"
#include "base/elapsed.h"
#include "base/failure.h"
#include "base/file_io.h"
#include "engines/native/async_checkpoint.h"
#include "engines/native/checkpoint_state.h"
#include "engines/native/model_loader.h"
#include "engines/native/state_writer.h"
#include "engines/native/trainer.h"
#include "ops/custom_ops.h"
#include "report/check_metrics.h"
#include "run/engine_spec.h"
#include "support/engine_protocol.h"
#include "support/engine_transcript.h"
#include "support/pinned_files.h"
#include "support/save_cost.h"
#include "support/torch_compat.h"

#if defined(TRAINLOCK_WITH_CUDA)
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>
#endif

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

// A loss that is NaN or infinite: the run would train on garbage from here on. A finding
// (train.step / train.roundtrip fail naming the step), not a crash.
class NonFiniteLoss : public std::runtime_error {
 public:
  NonFiniteLoss(int64_t step, double loss)
      : std::runtime_error("the loss is " + std::string(std::isnan(loss) ? "NaN" : "infinite") +
                           " at step " + std::to_string(step) +
                           ": the run diverged (learning rate, loss scaling, bad data)"),
        step_(step) {}
  int64_t step() const { return step_; }

 private:
  int64_t step_;
};

// Everything a trainer needs: the engine spec (which a checkpoint carries, so that a process
// with nothing but the checkpoint rebuilds the run: the portable role) and, for a run that
// starts from pinned weights, where they are.
struct RunSetup {
  EngineSpec spec;
  fs::path model_dir;                              // "" = seeded initialisation
  std::map<std::string, std::string> model_files;  // model_dir's pinned files -> lock sha256
  nlohmann::json identity;                         // what the checkpoint's state carries
};

// "cpu", "auto", "cuda" (device 0) or "cuda:N" (a rank's own GPU). A CUDA device becomes the
// current one, so that nothing in this process touches (and allocates on) another GPU.
torch::Device PickDevice(const std::string& requested) {
  if (requested == "cpu") return torch::kCPU;
  const bool indexed = requested.rfind("cuda:", 0) == 0;
  if (requested == "cuda" || indexed || (requested == "auto" && torch::cuda::is_available())) {
    if (!torch::cuda::is_available())
      throw Failure("--device " + requested + ": no CUDA device", kExitEnvironment);
    torch::Device device(torch::kCUDA, 0);
    if (indexed) device = torch::Device(requested);
    if (device.index() >= static_cast<int>(torch::cuda::device_count()))
      throw Failure("--device " + requested + ": only " +
                        std::to_string(torch::cuda::device_count()) + " CUDA devices",
                    kExitBadInput);
#if defined(TRAINLOCK_WITH_CUDA)
    c10::cuda::set_device(device.index());
#endif
    return device;
  }
  return torch::kCPU;
}

std::unique_ptr<TokenSource> MakeData(const SpecData& data, int64_t vocab) {
  if (data.kind == "shards") {
    std::vector<fs::path> files;
    std::vector<std::string> sha256;  // the lock's, verified on the mapped bytes
    for (const SpecFile& f : data.files) {
      files.push_back(f.path);
      sha256.push_back(f.sha256);
    }
    return ShardTokens(files, data.bytes_per_token, vocab, sha256);
  }
  return SyntheticTokens(data.seed, vocab, data.length);
}

// The run the coordinator resolved (coordinator/spec_resolver.h), read from the spec file and
// verified against the hash the coordinator gave for it: this worker trains what the spec
// states and reads nothing of the project.
RunSetup SetupFromSpec(const fs::path& file, const std::string& want_sha256) {
  const CoordinatorSpec read = ReadCoordinatorSpec(file, want_sha256, "engine spec");
  const std::string& sha256 = read.sha256;
  VerifyPinned(file.string(), sha256, read.text.size(), want_sha256);  // train.step's row
  RunSetup s;
  s.spec = ParseEngineSpec(read.text, file.string());
  s.model_dir = s.spec.model_dir;
  for (const SpecFile& f : s.spec.model_files) s.model_files[f.name] = f.sha256;
  s.identity = {
      {"spec", EngineSpecJson(s.spec)}, {"spec_sha256", sha256}, {"torch", TorchVersion()}};
  return s;
}

// Runs `body`, which reads a checkpoint's state; a state that lacks or mistypes a member is
// the checkpoint's fault, refused as such and without nlohmann's exception text.
template <typename Body>
auto ReadingCheckpointState(const fs::path& dir, Body&& body) {
  try {
    return body();
  } catch (const nlohmann::json::exception&) {
    throw CheckpointError((dir / "manifest.json").string() +
                          ": state lacks or mistypes a member the trainer restores");
  }
}

RunSetup SetupFromCheckpoint(const CheckpointContents& c, const fs::path& dir) {
  CheckpointRunState state = ReadCheckpointRunState(c.state, (dir / "manifest.json").string());
  RunSetup s;
  s.identity = c.state;
  s.spec = std::move(state.spec);
  return s;
}

std::unique_ptr<Trainer> MakeTrainer(const RunSetup& s, torch::Device device, SetupEvent* made) {
  TrainerOptions options{device, s.spec.seed, s.spec.eval_batches, s.identity};
  auto trainer = std::make_unique<Trainer>(s.spec.config, options,
                                           MakeData(s.spec.data, s.spec.config.model.vocab_size));
  // What the setup event says it trains on (train.step's data and model).
  made->data = trainer->data().Describe();
  if (!s.model_dir.empty()) {
    LoadedWeights w = LoadHfWeights(trainer->model(), s.model_dir, s.model_files);
    trainer->model()->to(device);
    made->model =
        nlohmann::json::object({{"source", "weights"}, {"files", w.files}, {"dtypes", w.dtypes}});
  } else {
    made->model = nlohmann::json::object({{"source", "seeded initialisation"}});
  }
  return trainer;
}

double Gbps(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
}

// The node and ops roles' findings. Invalid UTF-8 in a message becomes U+FFFD: the result is
// always written, and never carries the JSON library's own error in its place.
void WriteResult(const WorkerOptions& o, const nlohmann::json& result) {
  WriteFileAtomically(o.result,
                      result.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

// One event of the engine protocol (support/engine_transcript.h) on stdout, flushed: what the
// coordinator reads of the train and portable roles, as it reads any engine's.
void Emit(const char* event, nlohmann::json body = nlohmann::json::object()) {
  for (const auto& [member, value] : body.items()) {
    if (!ProtocolDeclares(event, member))  // a programming error of this worker, never a pass
      throw Failure(std::string("the native worker's ") + event + " event carries " + member +
                        ", which the engine protocol does not declare (support/engine_protocol.cc)",
                    kExitEnvironment);
  }
  body[kEventMember] = event;
  std::cout << body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
}

void EmitEval(const char* when, double loss, std::optional<int64_t> step = std::nullopt) {
  EvalEvent eval;
  eval.when = when;
  eval.loss = loss;
  if (step) eval.step = *step;
  Emit(kEventEval, ToJson(eval));
}

ErrorEvent Failed(const std::string& kind, const std::string& message) {
  ErrorEvent error;
  error.kind = kind;
  error.message = message;
  return error;
}

void EmitHello(const WorkerOptions& o, const torch::Device& device) {
  TrainStepMetrics where;  // train.step's device members, as the hello says them
  where.device = device.str();
#if defined(TRAINLOCK_WITH_CUDA)
  if (device.is_cuda()) where.device_name = at::cuda::getDeviceProperties(device.index())->name;
#endif
  HelloEvent hello;
  hello.protocol = kEngineProtocol;
  hello.engine = "native";
  hello.role = o.role;
  hello.pid = ::getpid();
  hello.world_size = 1;
  hello.device = where.device;
  hello.device_name = where.device_name;
  hello.versions = nlohmann::json::object();
  (*hello.versions)["torch"] = TorchVersion();
  Emit(kEventHello, ToJson(hello));
}

// The data and model MakeTrainer recorded, and the setup's seconds.
void EmitSetup(SetupEvent setup, double seconds) {
  setup.seconds = seconds;
  Emit(kEventSetup, ToJson(setup));
}

// Seconds since RunWorker began: the setup a worker pays before its work (reading the
// spec, creating the CUDA context, building the model on the device).
double SecondsSinceWorkerStart() {
  static const auto start = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The measurement as train.step reports it.
TrainStepMetrics MeasurementMetrics(int64_t step, const StepMeasurement& m) {
  TrainStepMetrics out;
  out.step = step;
  out.step_time_s = m.step_time_s;
  out.tokens = m.tokens;
  out.tokens_per_s = m.tokens_per_s;
  out.flops = m.flops;
  out.peak_rss_bytes = m.peak_rss_bytes;
  out.peak_allocated_bytes = m.peak_allocated_bytes;
  out.peak_reserved_bytes = m.peak_reserved_bytes;
  out.device_used_bytes = m.device_used_bytes;
  out.device_total_bytes = m.device_total_bytes;
  out.measured_shape = ToJson(MeasuredShapeMetrics{"native", m.param_dtype, m.activation_dtype,
                                                   m.world_size, m.activation_checkpointing});
  return out;
}

// The reference steps ran with deterministic kernels (the bitwise round trip needs them); a run
// that does not ask for them gets torch's default, faster kernels, so once the reference is
// recorded the process switches to them and takes an untimed warm-up step, in which they pick
// their algorithms. False when the run is deterministic (nothing to switch).
bool SwitchToRunMode(Trainer& trainer, bool deterministic) {
  if (deterministic) return false;
  at::globalContext().setDeterministicAlgorithms(false, false);
  const double loss = trainer.Step();
  if (!std::isfinite(loss)) throw NonFiniteLoss(trainer.step(), loss);
  return true;
}

// train.step in the mode the long run trains in (after SwitchToRunMode): the median of measured
// steps; the reference's own measurement when the run is deterministic.
TrainStepMetrics MeasureInRunMode(Trainer& trainer, bool switched, TrainStepMetrics reference) {
  reference.mode = "deterministic";
  if (!switched) return reference;
  const int measured = trainer.model()->parameters().front().is_cuda() ? 5 : 3;
  std::vector<StepMeasurement> steps;
  for (int i = 0; i < measured; ++i) {
    StepMeasurement m;
    const double loss = trainer.MeasuredStep(&m);
    if (!std::isfinite(loss)) throw NonFiniteLoss(trainer.step(), loss);
    steps.push_back(m);
  }
  std::vector<double> times;
  StepMeasurement peak = steps.front();
  for (const StepMeasurement& m : steps) {
    times.push_back(m.step_time_s);
    peak.peak_allocated_bytes = std::max(peak.peak_allocated_bytes, m.peak_allocated_bytes);
    peak.peak_reserved_bytes = std::max(peak.peak_reserved_bytes, m.peak_reserved_bytes);
    peak.device_used_bytes = std::max(peak.device_used_bytes, m.device_used_bytes);
    peak.peak_rss_bytes = std::max(peak.peak_rss_bytes, m.peak_rss_bytes);
  }
  peak.step_time_s = MedianSeconds(times);
  peak.tokens_per_s = static_cast<double>(peak.tokens) / peak.step_time_s;
  TrainStepMetrics run_mode = MeasurementMetrics(trainer.step(), peak);
  run_mode.mode = "default";
  run_mode.step_times_s = times;
  run_mode.deterministic = ToJson(reference);
  return run_mode;
}

// Waits for the checkpoint write in flight, records it and tells the coordinator (which may
// SIGKILL this process from then on) that the checkpoint of `step` is committed.
void AnnounceCommitted(int64_t step, AsyncCheckpointer& checkpointer) {
  const CheckpointIo io = checkpointer.Wait();
  const AsyncSaveTimes& t = checkpointer.times();
  CheckpointEvent save;
  save.dir = io.dir.string();
  save.step = step;
  save.files = static_cast<int64_t>(io.files);
  save.bytes = static_cast<int64_t>(io.bytes);
  save.seconds = t.durable_s;  // from the save's start to the committed rename
  save.write_s = io.seconds;
  save.blocking_s = t.blocking_s;
  save.staging_wait_s = t.staging_wait_s;
  save.staging_alloc_s = t.staging_alloc_s;
  save.gbps = Gbps(io.bytes, t.durable_s);
  save.phase = "committed";
  save.async = true;
  Emit(kEventCheckpoint, ToJson(save));
}

void EmitSaveStarted(int64_t step) {
  CheckpointEvent started;
  started.phase = "started";
  started.step = step;
  started.async = true;
  Emit(kEventCheckpoint, ToJson(started));
}

// Writes `state` where the coordinator asked (it digests the file itself, coordinator/
// state_file.h: nothing printed here stands in for it); `announce` says it as a `state` event
// (the final state's; a state at a step or after a restore is only written).
void WriteState(const fs::path& file, const std::vector<NamedTensor>& state, int64_t step,
                bool announce, std::optional<PreparedStateFile>* prepared = nullptr) {
  // The coordinator digests the file itself (coordinator/state_file.h): nothing printed here
  // stands in for it.
  const WrittenFile written =
      WriteStateFile(file, state, prepared && *prepared ? (*prepared)->Ready(file) : std::nullopt);
  if (!announce) return;
  StateEvent said;
  said.step = step;
  said.bytes = static_cast<int64_t>(written.bytes);
  said.file = file.string();
  Emit(kEventState, ToJson(said));
}

// The save --hold-save-at names (the last --save-at's), written on this thread: at its point it
// says `checkpoint` phase "held" and waits for the coordinator's SIGKILL, so the kill lands
// exactly there and never races the write.
void SaveAndHold(const WorkerOptions& o, const CheckpointContents& contents) {
  EmitSaveStarted(contents.step);
  SaveCheckpoint(o.checkpoint_root, contents, o.keep_last, kDefaultShardBytes,
                 [&](const char* point) {
                   if (o.hold_save_at != point) return;
                   CheckpointEvent held;
                   held.phase = "held";
                   held.step = contents.step;
                   held.point = point;
                   Emit(kEventCheckpoint, ToJson(held));
                   while (true) ::pause();
                 });
  throw Failure("internal: the save held at " + o.hold_save_at + " did not hold", kExitEnvironment);
}

// Restores the newest complete checkpoint into `trainer` and says so, naming the torn ones
// (temporaries of a save that never committed) it passed over.
void RestoreLatest(const WorkerOptions& o, const RunSetup& setup, Trainer& trainer) {
  auto latest = LatestCheckpoint(o.checkpoint_root);
  if (!latest)
    throw CheckpointError(o.checkpoint_root.string() + ": no complete checkpoint to restore");
  CheckpointIo io;
  CheckpointContents contents = LoadCheckpoint(*latest, &io);
  ReadingCheckpointState(*latest, [&] {
    // The checkpoint's spec is this run's: the same model, recipe, data and seed.
    if (contents.state.value("spec_sha256", "") !=
        setup.identity["spec_sha256"].get<std::string>()) {
      throw CheckpointError(latest->string() + ": written for the run of spec " +
                            Quoted(contents.state.value("spec_sha256", "?").substr(0, 12)) +
                            "..., not this run's");
    }
    trainer.Restore(contents, {o.restore_rng, o.restore_data});
  });
  RestoredEvent restored;
  restored.dir = latest->string();
  restored.step = contents.step;
  restored.bytes = static_cast<int64_t>(io.bytes);
  restored.seconds = io.seconds;
  restored.gbps = Gbps(io.bytes, io.seconds);
  restored.rng_restored = o.restore_rng;
  restored.data_restored = o.restore_data;
  // One process, one world size: the position is carried as restored.
  restored.data_position_carried = o.restore_data;
  restored.world_size_saved = 1;
  std::vector<std::string> torn;
  for (const fs::path& dir : UncommittedCheckpoints(o.checkpoint_root))
    torn.push_back(dir.string());
  if (!torn.empty()) restored.skipped_uncommitted = torn;
  Emit(kEventRestored, ToJson(restored));
  if (!o.restored_state.empty())
    WriteState(o.restored_state, trainer.FinalState(/*on_device=*/true), contents.step, false);
  EmitEval("after_restore", trainer.EvalLoss());
}

// One training step of RunTrain, measured when it is the one to measure; says its loss.
void TrainOneStep(const WorkerOptions& o, Trainer& trainer,
                  std::optional<TrainStepMetrics>& measurement) {
  double loss;
  if (trainer.step() + 1 == o.measure_step) {
    StepMeasurement m;
    loss = trainer.MeasuredStep(&m);
    measurement = MeasurementMetrics(trainer.step(), m);
  } else {
    loss = trainer.Step();
  }
  if (!std::isfinite(loss)) throw NonFiniteLoss(trainer.step(), loss);
  // A process that only writes its state after its last step (the resumed one) gives the device
  // back before saying that step: the coordinator may start the portable process then.
  const bool trains_on = o.measure_step > 0 || o.save_at > 0 || !o.state_at_file.empty();
  if (trainer.step() == o.steps && !trains_on) trainer.ReleaseTrainingMemory();
  StepEvent stepped;
  stepped.step = trainer.step();
  stepped.loss = loss;
  Emit(kEventStep, ToJson(stepped));
}

// The saves of RunTrain after the step just taken: the first --save-at staged and written beside
// the next steps; a second one after the first is committed, held when --hold-save-at says.
// `leaked` is the first save's capture under --leak-step-into-save (a planted fault): its
// tensors are the live ones, written only after this step changed them.
void SaveAfterStep(const WorkerOptions& o, Trainer& trainer, AsyncCheckpointer& checkpointer,
                   std::optional<CheckpointContents>& leaked) {
  if (leaked) {
    EmitSaveStarted(leaked->step);
    checkpointer.Start(o.checkpoint_root, *leaked, o.keep_last);
    leaked.reset();
    AnnounceCommitted(o.save_at, checkpointer);
  }
  if (trainer.step() == o.save_at) {
    if (o.leak_step_into_save) {
      leaked = trainer.Capture();  // the state's step, RNG and data position; live tensors
    } else {
      // Training is held up only for the copy into the staging buffers; the write goes on
      // beside the next steps, and the coordinator hears of the checkpoint once it is durable.
      checkpointer.Start(o.checkpoint_root, trainer.Capture(), o.keep_last);
      EmitSaveStarted(o.save_at);
    }
    EmitEval("after_save", trainer.EvalLoss(), o.save_at);
  } else if (o.save_again_at > 0 && trainer.step() == o.save_again_at) {
    if (checkpointer.in_flight()) AnnounceCommitted(o.save_at, checkpointer);
    CheckpointContents contents = trainer.Capture();
    EmitEval("after_save", trainer.EvalLoss(), o.save_again_at);
    if (!o.hold_save_at.empty()) SaveAndHold(o, contents);
    checkpointer.Start(o.checkpoint_root, contents, o.keep_last);
    EmitSaveStarted(o.save_again_at);
    AnnounceCommitted(o.save_again_at, checkpointer);
  }
  if (checkpointer.Finished()) AnnounceCommitted(o.save_at, checkpointer);
}

// One training step outside the round trip's count (no step event: B's losses are the
// reference's), timed from its start to its loss on the host.
double TimedStep(Trainer& trainer) {
  const auto start = std::chrono::steady_clock::now();
  const double loss = trainer.Step();
  if (!std::isfinite(loss)) throw NonFiniteLoss(trainer.step(), loss);
  return SecondsSince(start);
}

// The steps timed before each steady-state save (with the run-mode measurement's, the median
// its stretch is taken against; the first save needs none when that measurement just timed as
// many) and after it (the steps its write and copies go on beside).
constexpr size_t kStepsBeforeSteadySave = 3;
constexpr int kStepsAfterSteadySave = 3;

// What a save costs training once its staging buffers exist (--steady-saves; docs/validate.md,
// "Steady-state saves"): after the run-mode measurement the worker trains on in the run's mode
// and saves again into --steady-root, which nothing restores, each save said as `checkpoint`
// phase "steady". Each save but the last is waited for before the next, as a long run's saves
// are minutes apart; the last one's write goes on until the coordinator's SIGKILL (a native
// save releases nothing at its commit, so there is nothing left to time).
void SteadySaves(const WorkerOptions& o, Trainer& trainer, AsyncCheckpointer& checkpointer,
                 std::vector<double> before) {
  const bool pinned = trainer.model()->parameters().front().is_cuda();
  for (int i = 0; i < o.steady_saves; ++i) {
    const bool measured_just_now = i == 0 && before.size() >= kStepsBeforeSteadySave;
    const size_t steps_before = measured_just_now ? 0 : kStepsBeforeSteadySave;
    for (size_t s = 0; s < steps_before; ++s) before.push_back(TimedStep(trainer));
    const int64_t resident = ResidentBytes();
    const int64_t step = trainer.step();
    checkpointer.Start(o.steady_root, trainer.Capture(), /*keep_last=*/1);
    const AsyncSaveTimes times = checkpointer.times();
    std::vector<double> after;
    for (int s = 0; s < kStepsAfterSteadySave; ++s) after.push_back(TimedStep(trainer));
    CheckpointEvent said;
    said.phase = "steady";
    said.step = step;
    said.ordinal = i + 2;  // the checkpoint of the round trip was the first
    said.async = true;
    said.blocking_s = times.blocking_s;
    said.median_step_s = MedianSeconds(before);
    said.stretch_s = StretchSeconds(before, after);
    said.stall_s = times.blocking_s + *said.stretch_s;
    said.steps_after = static_cast<int64_t>(after.size());
    said.new_pinned_bytes = pinned ? times.new_staging_bytes : 0;
    const int64_t grown = ResidentBytes();
    said.host_growth_bytes =
        resident < 0 || grown < 0 ? -1 : std::max<int64_t>(0, grown - resident);
    if (i + 1 < o.steady_saves) checkpointer.Wait();
    Emit(kEventCheckpoint, ToJson(said));
  }
}

// Starts allocating the final state's file (state_writer.h) once the measured step is behind:
// beside the steps after it, never beside the one timed.
void PrepareFinalState(const WorkerOptions& o, Trainer& trainer,
                       std::optional<PreparedStateFile>& prepared) {
  if (o.final_state.empty() || prepared || trainer.step() < o.measure_step) return;
  prepared.emplace(o.final_state, trainer.FinalState(/*on_device=*/true));
}

int RunTrain(const WorkerOptions& o) {
  torch::Device device = PickDevice(o.device);
  RunSetup setup = SetupFromSpec(o.spec, o.spec_sha256);
  SetupEvent made;
  std::unique_ptr<Trainer> trainer = MakeTrainer(setup, device, &made);
  const double setup_s = SecondsSinceWorkerStart();
  EmitHello(o, device);
  EmitSetup(made, setup_s);
  if (o.restore) RestoreLatest(o, setup, *trainer);
  AsyncCheckpointer checkpointer;
  if (o.save_at > 0) checkpointer.Prepare(trainer->Capture());
  std::optional<TrainStepMetrics> measurement;
  std::optional<CheckpointContents> leaked;
  std::optional<PreparedStateFile> prepared_state;
  PrepareFinalState(o, *trainer, prepared_state);
  while (trainer->step() < o.steps) {
    TrainOneStep(o, *trainer, measurement);
    if (trainer->step() == o.flip_bit_at) trainer->FlipLowestMantissaBit();
    PrepareFinalState(o, *trainer, prepared_state);
    if (!o.state_at_file.empty() && trainer->step() == o.state_at)
      WriteState(o.state_at_file, trainer->FinalState(/*on_device=*/true), o.state_at, false);
    SaveAfterStep(o, *trainer, checkpointer, leaked);
  }
  // The final state and the run mode's untimed warm-up step go on beside the checkpoint's
  // upload; the timed steps only once it is done: no write shares the host with the timing.
  if (!o.final_state.empty())
    WriteState(o.final_state, trainer->FinalState(/*on_device=*/true), trainer->step(), true,
               &prepared_state);
  const bool switched =
      measurement && SwitchToRunMode(*trainer, setup.spec.config.training.deterministic);
  if (checkpointer.in_flight()) AnnounceCommitted(o.save_at, checkpointer);
  // The saving worker never returns to say which pinned files it read: it says so here, before
  // the measurement, after which the coordinator may kill it.
  if (o.save_at > 0)
    for (const ArtifactRow& row : VerifiedArtifacts()) Emit(kEventArtifact, ToJson(row));
  std::vector<double> run_mode_steps;
  if (measurement) {
    const TrainStepMetrics run_mode = MeasureInRunMode(*trainer, switched, *measurement);
    if (run_mode.step_times_s && run_mode.step_times_s->is_array())
      run_mode_steps = run_mode.step_times_s->get<std::vector<double>>();
    Emit(kEventMeasurement, ToJson(run_mode));
  }
  if (o.steady_saves > 0 && o.save_at > 0)
    SteadySaves(o, *trainer, checkpointer, std::move(run_mode_steps));
  if (o.save_at > 0) {
    // The saving worker is the one the coordinator preempts: wait for its SIGKILL.
    std::cout << "trainlock-waiting-for-kill" << std::endl;
    while (true) ::pause();
  }
  return 0;
}

int RunOps(const WorkerOptions& o, nlohmann::json& result) {
  const std::vector<OpsLibrary> libraries = ReadOpsSpecFile(o.ops_spec, o.ops_spec_sha256);
  result.update(RunCustomOps(libraries, DescribeOpsDevice(PickDevice(o.device))));
  return 0;
}

int RunPortable(const WorkerOptions& o) {
  torch::Device device = PickDevice(o.device);
  auto latest = LatestCheckpoint(o.checkpoint_root);
  if (!latest) throw CheckpointError(o.checkpoint_root.string() + ": no complete checkpoint");
  CheckpointIo io;
  CheckpointContents contents = LoadCheckpoint(*latest, &io);
  SetupEvent made;
  std::unique_ptr<Trainer> trainer = ReadingCheckpointState(
      *latest, [&] { return MakeTrainer(SetupFromCheckpoint(contents, *latest), device, &made); });
  const double setup_s = SecondsSinceWorkerStart();
  EmitHello(o, device);
  EmitSetup(made, setup_s);
  ReadingCheckpointState(*latest, [&] { trainer->Restore(contents); });
  RestoredEvent verified;
  verified.dir = latest->string();
  verified.step = contents.step;
  verified.bytes = static_cast<int64_t>(io.bytes);
  verified.verified_files = static_cast<int64_t>(io.files + 2);  // + manifest and its hash
  Emit(kEventRestored, ToJson(verified));
  EmitEval("portable", trainer->EvalLoss());
  return 0;
}

// Seconds per call of `work` on CUDA device `index`: warm-ups, then the median of timed
// repetitions, synchronizing that device around each (synchronizing the current device
// instead would time nothing on any other GPU).
template <typename Work>
double MedianSeconds(Work work, int index, int warmups, int repetitions) {
  for (int i = 0; i < warmups; ++i) work();
  torch::cuda::synchronize(index);
  std::vector<double> times;
  for (int i = 0; i < repetitions; ++i) {
    auto start = std::chrono::steady_clock::now();
    work();
    torch::cuda::synchronize(index);
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// perf.matmul's sustained rate: 8192^3 products into a preallocated output back to back for
// about kSustainedRunS, synchronizing after every batch; the rate over the last kSustainedRateS,
// once the power limiter has acted (a healthy H100 settles within about 0.5 s at its 700 W cap:
// bench/results/2026-12-07-clock-under-load/h100). The host's gap per batch is a few
// microseconds of a batch's tens of milliseconds.
constexpr double kSustainedRunS = 1.5, kSustainedRateS = 1.0;

double SustainedMatmulTflops(const torch::TensorOptions& options, int index) {
  const int64_t n = 8192;
  torch::Tensor a = torch::randn({n, n}, options.dtype(torch::kBFloat16));
  torch::Tensor b = torch::randn({n, n}, options.dtype(torch::kBFloat16));
  torch::Tensor out = torch::empty({n, n}, options.dtype(torch::kBFloat16));
  const double flops = 2.0 * static_cast<double>(n) * n * n;
  constexpr int kBatch = 8;                                 // about 12 ms on an H100 at its cap
  std::vector<std::pair<double, int64_t>> marks{{0.0, 0}};  // (seconds, products done)
  torch::cuda::synchronize(index);
  const auto start = std::chrono::steady_clock::now();
  double t = 0;
  for (int64_t done = 0; t < kSustainedRunS && marks.size() < 100000;) {
    for (int k = 0; k < kBatch; ++k) at::mm_out(out, a, b);
    torch::cuda::synchronize(index);
    done += kBatch;
    t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    marks.emplace_back(t, done);
  }
  std::pair<double, int64_t> from = marks.front();  // the last mark a second or more before the end
  for (const auto& mark : marks)
    if (mark.first <= t - kSustainedRateS) from = mark;
  return flops * static_cast<double>(marks.back().second - from.second) / (t - from.first) / 1e12;
}

// Dense bf16 matmul throughput as a datasheet states it: square matmuls of several sizes into a
// preallocated output, each timed over bursts of back-to-back launches (launch gaps and the
// host's synchronization do not count) of about 6 ms, shorter than the power limiter's reaction,
// which is the clock a datasheet's peak assumes. The best burst of three per size, the best
// overall reported; every figure is kept under matmul_method; then the rate at the power limit
// (SustainedMatmulTflops), which replaced the 60 ms bursts this probe also timed until
// 2026-12-07 (a second of the verdict's time, never the judged figure). The probe runs with
// torch's default kernels and cuBLAS workspace (not the round trip's deterministic settings).
constexpr double kBurstSeconds = 0.006;

void MeasureMatmul(const torch::TensorOptions& options, int index, nlohmann::json& d) {
  nlohmann::json per_size = nlohmann::json::object();
  double best = 0;
  for (const int64_t n : {int64_t{4096}, int64_t{8192}, int64_t{12288}, int64_t{16384}}) {
    torch::Tensor a = torch::randn({n, n}, options.dtype(torch::kBFloat16));
    torch::Tensor b = torch::randn({n, n}, options.dtype(torch::kBFloat16));
    torch::Tensor out = torch::empty({n, n}, options.dtype(torch::kBFloat16));
    const double flops = 2.0 * static_cast<double>(n) * n * n;
    const double guess_s = flops / 800e12;  // an H200's order of magnitude; only sizes bursts
    const int burst = static_cast<int>(std::max(2.0, std::round(kBurstSeconds / guess_s)));
    double fastest = 1e30;
    for (int round = 0; round < 4; ++round) {  // the first burst warms up
      const double s = MedianSeconds(
          [&] {
            for (int k = 0; k < burst; ++k) at::mm_out(out, a, b);
          },
          index, 0, 1);
      if (round > 0) fastest = std::min(fastest, s / burst);
    }
    const double tflops = flops / fastest / 1e12;
    per_size[std::to_string(n) + "/6ms"] = tflops;
    best = std::max(best, tflops);
  }
  d["matmul_tflops"] = best;
  d["matmul_tflops_sustained"] = SustainedMatmulTflops(options, index);
  d["matmul_method"] = {
      {"dtype", "bf16"},
      {"tflops_by_size", per_size},
      {"timing", "best of 3 bursts of back-to-back mm_out of about 6 ms per size, best overall"},
      {"sustained",
       "8192^3 mm_out back to back for 1.5 s, synchronized every 8; the rate over the last "
       "second (matmul_tflops_sustained)"}};
}

// The device's UUID as NVML and nvidia-smi write it ("GPU-" and 8-4-4-4-12 hex digits), so
// the coordinator can tell which of NVML's GPUs this process sees (visible_gpus.h); "" where
// the build has no CUDA runtime to ask.
std::string DeviceUuid(int64_t index) {
#if defined(TRAINLOCK_WITH_CUDA) && !defined(TRAINLOCK_WITH_ROCM)
  const cudaDeviceProp* prop = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index));
  const auto* b = reinterpret_cast<const unsigned char*>(prop->uuid.bytes);
  char text[48];
  std::snprintf(text, sizeof text,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return text;
#else
  (void)index;
  return "";
#endif
}

// Every visible device: a kernel launch with a known answer (proves the library's code runs
// there), bf16 dense matmul TFLOP/s (8192^3, random data) and device-copy TB/s (2 GiB,
// bytes read + written).
int RunNodeProbe(nlohmann::json& result) {
  nlohmann::json devices = nlohmann::json::array();
  const int64_t count =
      torch::cuda::is_available() ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
  for (int64_t i = 0; i < count; ++i) {
    torch::Device device(torch::kCUDA, static_cast<c10::DeviceIndex>(i));
    const c10::DeviceGuard current(device);  // cuBLAS handles and streams of this GPU
    nlohmann::json d = {{"index", i}};
    try {
      if (std::string uuid = DeviceUuid(i); !uuid.empty()) d["uuid"] = uuid;
      auto options = torch::TensorOptions().device(device);
      torch::Tensor ones = torch::ones({256, 256}, options);
      double sum = ones.mm(ones).sum().item<double>();
      d["launch_ok"] = sum == 256.0 * 256.0 * 256.0;
      MeasureMatmul(options, static_cast<int>(i), d);
      const int64_t bytes = int64_t{2} << 30;
      torch::Tensor src = torch::randn({bytes / 4}, options);
      torch::Tensor dst = torch::empty_like(src);
      double copy_s = MedianSeconds([&] { dst.copy_(src); }, static_cast<int>(i), 3, 10);
      d["copy_tbps"] = 2.0 * static_cast<double>(bytes) / copy_s / 1e12;
    } catch (const std::exception& e) {
      std::string message = e.what();
      d["error"] = message.substr(0, message.find('\n'));
      d["launch_ok"] = false;
    }
    devices.push_back(d);
  }
  result["devices"] = devices;
  return 0;
}

// Runs `role`; a failure becomes the `error` event's body (one of the protocol's kinds) and the
// worker's exit code.
int RunCatching(const WorkerOptions& o, const std::function<int()>& role,
                std::optional<ErrorEvent>* error) {
  try {
    return role();
  } catch (const ArtifactMismatch& e) {
    // A pinned file is not what the lock pins: the using check fails naming it (roundtrip.cc).
    *error = Failed(kErrorIntegrity, e.what());
    return kWorkerTrainingFailed;
  } catch (const CheckpointError& e) {
    *error = Failed(kErrorCheckpoint, e.what());
    return kWorkerCheckpointRefused;
  } catch (const ModelLoadError& e) {
    // The model directory's config or weights do not fit the training config: the model's
    // fault, named as such, not a training failure.
    *error = Failed("model", e.what());
    return kWorkerTrainingFailed;
  } catch (const NonFiniteLoss& e) {
    *error = Failed("non_finite_loss", e.what());
    (*error)->step = e.step();
    return kWorkerTrainingFailed;
  } catch (const InputError& e) {
    *error = Failed("input", e.what());
    return kWorkerBadInput;
  } catch (const std::exception& e) {
    const std::string message = e.what();
    *error = Failed(IsOutOfMemory(e) ? kErrorOutOfMemory : "training",
                    message.substr(0, message.find('\n')));
    if (IsOutOfMemory(e)) {
      DeviceMemory m = ReadDeviceMemory(PickDevice(o.device));
      TrainStepMetrics memory;
      memory.peak_allocated_bytes = m.peak_allocated_bytes;
      memory.peak_reserved_bytes = m.peak_reserved_bytes;
      memory.device_used_bytes = m.device_used_bytes;
      memory.device_total_bytes = m.device_total_bytes;
      (*error)->memory = ToJson(memory);
    }
    return kWorkerTrainingFailed;
  }
}

// The node and ops roles: their findings, a failure and the pinned files read go to the result
// file the coordinator reads (node_run.cc, ops/ops_check.cc).
int RunWritingResult(const WorkerOptions& o, std::optional<ErrorEvent>* error) {
  HelloEvent who;  // the result file says which process wrote it
  who.role = o.role;
  who.pid = ::getpid();
  nlohmann::json result = ToJson(who);
  const int code = RunCatching(
      o, [&] { return o.role == "node" ? RunNodeProbe(result) : RunOps(o, result); }, error);
  if (*error) result[kEventError] = ToJson(**error);
  if (const std::vector<ArtifactRow> rows = VerifiedArtifacts(); !rows.empty()) {
    TrainStepMetrics artifacts;
    artifacts.artifacts = rows;
    AddMetrics(&result, ToJson(artifacts));
  }
  WriteResult(o, result);
  return code;
}

// The train and portable roles speak the engine protocol on stdout alone, as every engine does:
// the pinned files they read and verified, then `done` or the `error`.
int RunSpeakingProtocol(const WorkerOptions& o, std::optional<ErrorEvent>* error) {
  const int code = RunCatching(
      o, [&] { return o.role == "portable" ? RunPortable(o) : RunTrain(o); }, error);
  for (const ArtifactRow& row : VerifiedArtifacts()) Emit(kEventArtifact, ToJson(row));
  if (*error)
    Emit(kEventError, ToJson(**error));
  else
    Emit(kEventDone);
  return code;
}

// --start-after: the process exists, LibTorch and its CUDA libraries loaded, before its turn;
// it opens no device and reads nothing until the coordinator creates the file. False when the
// process that started it ended first (nothing would ever create the file).
bool WaitForRelease(const std::filesystem::path& gate) {
  const pid_t parent = ::getppid();
  while (::access(gate.c_str(), F_OK) != 0) {
    if (::getppid() != parent) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace

int RunWorker(const WorkerOptions& o) {
  // Deterministic kernels for the round trip's processes (cuBLAS needs its workspace pinned
  // before CUDA starts); the node probe measures the device with torch's defaults instead.
  if (o.role != "node") {
    ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
    at::globalContext().setDeterministicAlgorithms(true, false);
  }
  if (!o.start_after.empty() && !WaitForRelease(o.start_after)) {
    Emit(kEventError, ToJson(Failed("input", "--start-after " + o.start_after.string() +
                                                 ": the process that started this one ended "
                                                 "before releasing it")));
    return kWorkerBadInput;
  }
  SecondsSinceWorkerStart();  // starts the clock (at the release of a process started early)
  if (o.threads > 0) torch::set_num_threads(o.threads);
  std::optional<ErrorEvent> error;
  const int code =
      WorkerWritesResult(o.role) ? RunWritingResult(o, &error) : RunSpeakingProtocol(o, &error);
  if (error) std::cerr << "worker " << o.role << ": " << error->message.value_or("") << "\n";
  return code;
}

bool WorkerWritesResult(const std::string& role) {
  return role == "node" || role == "ops";
}

}  // namespace trainlock::validate
