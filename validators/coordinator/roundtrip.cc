// The resume test's coordinator; see roundtrip.h.
#include "coordinator/roundtrip.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#include "base/failure.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "base/program_path.h"
#include "base/sha256.h"
#include "compat/catalog.h"
#include "coordinator/engine_command.h"
#include "coordinator/engine_spec.h"
#include "coordinator/state_file.h"
#include "engines/native/checkpoint.h"
#include "plan/memory_model.h"
#include "plan/memory_remedies.h"
#include "probes/gpu_telemetry.h"
#include "probes/host_memory.h"
#include "project/project.h"
#include "project/train_shape.h"
#include "report/check_metrics.h"
#include "support/check_selection.h"
#include "support/engine_protocol.h"
#include "support/engine_transcript.h"
#include "support/torch_build.h"
#include "support/worker_process.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;
// The Coordinator's member Failure() hides the type's name inside its members.
using EngineFilesFailure = trainlock::Failure;

// When the coordinator SIGKILLs a process: never, once its checkpoint is committed (the
// preemption of the round trip), or as soon as a later save begins (a kill during the save).
enum class Preempt { kNever, kAfterCommit, kDuringSave };

struct WorkerRun {
  std::string name;
  int pid = -1;
  std::optional<int> exit_code;  // nullopt: timed out
  nlohmann::json result;         // its result file (empty object when none)
  std::string stderr_tail;
  bool killed_by_us = false;
  uint64_t peak_rss_bytes = 0;                                // sampled while it ran
  std::optional<uint64_t> oom_kills_before, oom_kills_after;  // the cgroup's OOM-killer count
  double seconds = 0;                                         // from its start to its end
  // Seconds from the round trip's start until it was spawned, released (its clock's start:
  // the same as spawned unless it was started ahead of its turn) and its output ended.
  double spawned_s = 0, started_s = 0, ended_s = 0;
  // Its final state, as this process read it from the file it told the engine to write.
  std::optional<StateDigest> state;
  fs::path state_file;  // that file while it is kept (small enough to diff), else empty
  // Seconds from its start to the first event of each name: where a process's time goes
  // (interpreter and imports before `hello`, the model and restore before the first `step`).
  nlohmann::json first_event_s = nlohmann::json::object();
};

// How often the coordinator looks at an engine's stderr while it waits for its output, how
// long output may go on after the engine itself exited (something it left holding stdout),
// and the caps on what an engine writes (docs/validate.md, "The engine protocol").
constexpr std::chrono::milliseconds kEngineWatchSlice(100);
constexpr std::chrono::milliseconds kEngineLeftoverGrace(500);
constexpr uint64_t kMaxEngineOutputBytes = uint64_t{256} << 20;
constexpr uint64_t kMaxEngineStderrBytes = uint64_t{256} << 20;
// Final states up to this size stay in the work directory, for the element-wise difference.
constexpr uint64_t kKeptStateBytes = uint64_t{1} << 30;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class Coordinator {
 public:
  Coordinator(const RoundtripOptions& o, const Project& project)
      : o_(o), project_(project), epoch_(Clock::now()) {}

  std::vector<CheckResult> Run();

 private:
  std::vector<std::string> CommonArgs(const std::string& name) const;
  struct Launched {
    WorkerRun run;
    std::unique_ptr<Child> child;
    std::unique_ptr<RssSampler> rss;
    Clock::time_point started;
    EngineTranscript transcript;
    std::optional<fs::path> final_state;  // where it was told to write its final state
    // While its output is read: every line kept beside the results, up to the cap.
    std::unique_ptr<std::ofstream> log;
    uint64_t logged = 0;
    std::optional<Clock::time_point> exited_at;
    bool output_done = false;
    Clock::time_point output_done_at;
    std::optional<fs::path> gate;         // a process started ahead of its turn waits for this file
    std::vector<std::string> argv_extra;  // its own options, after the common ones
    bool stepped_after_save = false;      // it sent a step after a checkpoint's start
  };
  // Starts a process. A gated Python engine is started ahead of its turn: it does its imports
  // and waits (--start-after) until Release, so the seconds of its interpreter and framework
  // imports pass while the process before it still runs. The native worker has no gate to
  // wait at (and starts in a second): a gated one is spawned at its release.
  Launched Launch(const std::string& name, const std::vector<std::string>& extra,
                  bool gated = false) const;
  void Spawn(Launched& l) const;
  // Lets a gated process go (spawning it if it waits unspawned); its times and its deadline
  // count from now.
  void Release(Launched& l) const;
  EngineExpectation Expectation(const std::vector<std::string>& extra) const;
  // Reads the process's output lines into its transcript and log until the output ends (or
  // the process exited and what it left holds the output past a grace), the deadline passes,
  // or the output or its stderr passes its cap (a violation).
  bool ReadSome(Launched& l, Preempt preempt) const;
  bool Done(Launched& l) const;
  bool ShouldPreempt(const EngineTranscript& t, Preempt preempt) const;
  // Reads the process's events until its output ends (SIGKILLing it as `preempt` says), waits
  // for it and folds what it said into its result; `*seconds` gets its wall time.
  WorkerRun Finish(Launched launched, Preempt preempt, double* seconds) const;
  // Finishes two processes that run side by side, reading both as they go (so each one's
  // times are its own, not the time the other took).
  std::pair<WorkerRun, WorkerRun> FinishBoth(Launched first, Launched second) const;
  WorkerRun Collect(Launched& launched) const;
  void ReadFinalState(const fs::path& file, WorkerRun& run) const;
  WorkerRun Start(const std::string& name, const std::vector<std::string>& extra, Preempt preempt,
                  double* seconds) const {
    return Finish(Launch(name, extra), preempt, seconds);
  }
  void PrepareEngine();
  CheckResult ReshardCheck(const WorkerRun& a, const WorkerRun& e, CheckResult roundtrip) const;
  bool PortableFitsBesideResume(const WorkerRun& a) const;
  std::string Failure(const WorkerRun& run) const;
  void CorruptLatestCheckpoint();

  // What processes B, C and D did: with A's run, what the round trip's checks judge.
  struct ResumeRuns {
    WorkerRun b, c, d;
    bool beside = false;  // C and D ran side by side
    double b_s = 0;       // B's wall time, its waiting for the kill included
  };
  std::optional<std::vector<CheckResult>> VerdictFromA(const WorkerRun& a, double a_s,
                                                       TelemetryWindow& telemetry) const;
  ResumeRuns RunResume(Launched b_launched, const WorkerRun& a);
  std::vector<CheckResult> Judge(const WorkerRun& a, double a_s, const ResumeRuns& r,
                                 TelemetryWindow& telemetry) const;

  CheckResult StepCheck(const WorkerRun& a) const;
  CheckResult OutOfMemoryCheck(const WorkerRun& a) const;
  std::vector<CheckResult> CannotRunChecks(const WorkerRun& a) const;
  RoundtripMetrics RoundtripFacts(const WorkerRun& a, const WorkerRun& b, const WorkerRun& c) const;
  std::optional<CheckResult> RoundtripNotComparable(const WorkerRun& a, const WorkerRun& b,
                                                    const WorkerRun& c) const;
  CheckResult RoundtripCheck(const WorkerRun& a, const WorkerRun& b, const WorkerRun& c) const;
  CheckResult EvalCheck(const WorkerRun& b, const WorkerRun& c) const;
  CheckResult PortableCheck(const WorkerRun& b, const WorkerRun& d) const;

  double SinceStart() const { return Seconds(epoch_); }

  const RoundtripOptions& o_;
  const Project& project_;
  Clock::time_point epoch_;  // the round trip's start: what each process's times count from
  fs::path engine_dir_;      // a Python engine's verified package
  fs::path python_;
  fs::path spec_file_;
};

// The protocol's options every process of this run gets (docs/validate.md, "The engine
// protocol"); the native worker also reads the project itself and writes a result file.
std::vector<std::string> Coordinator::CommonArgs(const std::string& name) const {
  std::vector<std::string> args = {"--checkpoint-root", o_.checkpoint_root.string(),
                                   "--device",          o_.device,
                                   "--threads",         std::to_string(o_.threads),
                                   "--keep-last",       std::to_string(o_.keep_last)};
  if (o_.engine != "native") {
    // Several processes of one engine run share the node's GPUs: each rank picks its own.
    if (std::max(o_.engine_nproc, o_.reshard_to) > 1 && o_.device.rfind("cuda:", 0) == 0)
      args[3] = "cuda";
    args.insert(args.end(), {"--spec", spec_file_.string()});
    return args;
  }
  args.insert(args.end(), {"--project", o_.project.string(), "--result",
                           (o_.work_dir / (name + ".json")).string()});
  // The config this run records differs from the lock's only under --allow-drift (validate.cc
  // refuses it otherwise): the workers then verify the bytes they read against the recorded one.
  if (project_.lock && project_.lock->config_sha256 != project_.config_sha256) {
    args.push_back("--config-sha256");
    args.push_back(project_.config_sha256);
  }
  return args;
}

// A Python engine runs from the lock's pinned package, copied into this run's directory, and
// trains the run the spec states.
void Coordinator::PrepareEngine() {
  if (o_.engine == "native") return;
  engine_dir_ = InstallVerifiedEngine(*project_.lock, o_.work_dir);
  python_ = fs::absolute(EnginePython(o_.python));  // the engine runs in the work directory
  spec_file_ = o_.work_dir / "engine-spec.json";
  WriteFileAtomically(spec_file_, EngineSpec(project_, o_.steps).dump(2) + "\n");
}

Coordinator::Launched Coordinator::Launch(const std::string& name,
                                          const std::vector<std::string>& extra, bool gated) const {
  Launched l;
  l.run.name = name;
  std::vector<std::string> with_world = extra;
  if (o_.engine != "native" && std::find(extra.begin(), extra.end(), "--nproc") == extra.end())
    with_world.insert(with_world.end(), {"--nproc", std::to_string(o_.engine_nproc)});
  l.argv_extra = with_world;
  if (gated && o_.engine != "native") {
    l.gate = o_.work_dir / (name + ".start");
    std::error_code ec;
    fs::remove(*l.gate, ec);
    l.argv_extra.insert(l.argv_extra.end(), {"--start-after", l.gate->string()});
  }
  l.transcript = EngineTranscript(Expectation(with_world));
  if (const auto at = std::find(extra.begin(), extra.end(), "--final-state");
      at != extra.end() && at + 1 != extra.end())
    l.final_state = *(at + 1);
  if (!gated || l.gate) Spawn(l);
  return l;
}

void Coordinator::Spawn(Launched& l) const {
  l.started = Clock::now();
  l.run.spawned_s = l.run.started_s = SinceStart();
  l.run.oom_kills_before = CgroupOomKills();
  const std::string& name = l.run.name;
  EngineLaunch launch =
      EngineCommand(o_.engine, python_, engine_dir_, CommonArgs(name), l.argv_extra);
  // CUDA refuses to start inside a new PID namespace in some sandboxes (cudaGetDeviceCount: error
  // 304, "operation not supported on this OS", on the H200 machine of bench/results/
  // 2026-12-02-h200-pilot-pass): an engine that may train on a GPU gets its own process group,
  // and what holds its stdout after it ends is found through /proc and killed.
  const bool may_use_gpu = BuiltTorchFlavour() != "cpu" && o_.device != "cpu";
  ChildIsolation isolation{launch.env, launch.clean_env, launch.python,
                           launch.python && !may_use_gpu, launch.cwd};
  l.child = std::make_unique<Child>(launch.argv, o_.work_dir / (name + ".stderr"), isolation);
  l.run.pid = l.child->pid();
  l.rss = std::make_unique<RssSampler>(l.run.pid);
}

void Coordinator::Release(Launched& l) const {
  if (!l.child) {
    Spawn(l);
    return;
  }
  if (l.gate) WriteFileAtomically(*l.gate, "");
  l.started = Clock::now();
  l.run.started_s = SinceStart();
}

// What the lock says each process's hello must say: its engine, the torch of its targets (a
// Python engine's; the native engine's is this validator's LibTorch, which env.versions
// checks) and the world size this process was started at.
EngineExpectation Coordinator::Expectation(const std::vector<std::string>& extra) const {
  EngineExpectation e;
  e.engine = o_.engine;
  if (o_.engine != "native" && project_.lock) {
    for (const auto& [flavour, target] : project_.lock->targets)
      if (!target.torch.empty()) e.torch.push_back(target.torch);
  }
  const auto nproc = std::find(extra.begin(), extra.end(), "--nproc");
  if (nproc != extra.end() && nproc + 1 != extra.end()) e.world_size = std::stoll(*(nproc + 1));
  return e;
}

// Reads what is there of `l`'s output, waiting at most one watch slice; false once its
// output is done (ended, capped, broken, or left held by something it started).
bool Coordinator::ReadSome(Launched& l, Preempt preempt) const {
  WorkerRun& run = l.run;
  const auto deadline = l.started + std::chrono::seconds(o_.timeout_s);
  if (l.output_done || Clock::now() >= deadline) return Done(l);
  if (!l.log) l.log = std::make_unique<std::ofstream>(o_.work_dir / (run.name + ".jsonl"));
  auto line = l.child->ReadLine(std::min(deadline, Clock::now() + kEngineWatchSlice));
  std::error_code ec;
  const fs::path stderr_file = o_.work_dir / (run.name + ".stderr");
  if (const auto err = fs::file_size(stderr_file, ec); !ec && err > kMaxEngineStderrBytes) {
    l.transcript.Violate("its stderr passed " + std::to_string(kMaxEngineStderrBytes >> 20) +
                         " MiB");
    return Done(l);
  }
  if (!line) {
    if (l.child->OutputEnded()) return Done(l);
    // Exited, but something it started holds its stdout: that one is not waited for.
    if (!l.exited_at && l.child->Exited()) l.exited_at = Clock::now();
    if (l.exited_at && Clock::now() - *l.exited_at > kEngineLeftoverGrace) return Done(l);
    return true;
  }
  l.logged += line->size() + 1;
  if (l.logged > kMaxEngineOutputBytes) {
    l.transcript.Violate("its output passed " + std::to_string(kMaxEngineOutputBytes >> 20) +
                         " MiB");
    return Done(l);
  }
  if (line->size() <= kMaxEngineLineBytes) *l.log << *line << "\n";
  const std::string event = l.transcript.Add(*line);
  if (!event.empty() && !run.first_event_s.contains(event))
    run.first_event_s[event] = Seconds(l.started);
  if (event == "step" && l.transcript.LastCheckpoint("started")) l.stepped_after_save = true;
  if (!l.transcript.violation().empty()) return Done(l);  // nothing more it says counts
  if (event == "checkpoint" && !run.killed_by_us && ShouldPreempt(l.transcript, preempt)) {
    l.child->Kill();
    run.killed_by_us = true;
  }
  return true;
}

bool Coordinator::Done(Launched& l) const {
  if (l.output_done) return false;
  if (!l.transcript.violation().empty()) l.child->Kill();
  l.output_done = true;
  l.output_done_at = Clock::now();
  l.run.ended_s = SinceStart();
  return false;
}

// Whether the checkpoint events so far are where `preempt` says the process dies.
bool Coordinator::ShouldPreempt(const EngineTranscript& t, Preempt preempt) const {
  const bool committed = t.LastCheckpoint("committed").has_value();
  const std::optional<int64_t> started = t.LastCheckpoint("started");
  return (preempt == Preempt::kAfterCommit && committed) ||
         (preempt == Preempt::kDuringSave && committed && started && *started > o_.checkpoint_at);
}

WorkerRun Coordinator::Finish(Launched l, Preempt preempt, double* seconds) const {
  while (ReadSome(l, preempt)) {
  }
  WorkerRun run = Collect(l);
  if (seconds) *seconds = run.seconds;
  return run;
}

std::pair<WorkerRun, WorkerRun> Coordinator::FinishBoth(Launched first, Launched second) const {
  bool first_open = true, second_open = true;
  while (first_open || second_open) {
    if (first_open) first_open = ReadSome(first, Preempt::kNever);
    if (second_open) second_open = ReadSome(second, Preempt::kNever);
  }
  // The one whose output ended first is collected first: its seconds end when it did.
  WorkerRun a = Collect(first);
  WorkerRun b = Collect(second);
  return {std::move(a), std::move(b)};
}

// After its output is done: waits for `l`, ends what it left, and folds what it said.
WorkerRun Coordinator::Collect(Launched& l) const {
  WorkerRun run = std::move(l.run);
  l.log.reset();
  run.exit_code = l.child->Wait(l.started + std::chrono::seconds(o_.timeout_s));
  l.child->KillLeftovers();  // what it started ends with it (a daemon holding its stdout too)
  run.seconds = std::chrono::duration<double>(l.output_done_at - l.started).count();
  run.peak_rss_bytes = l.rss->peak_bytes();
  l.rss.reset();
  run.oom_kills_after = CgroupOomKills();
  l.transcript.End(run.exit_code == 0 && !run.killed_by_us);
  run.result = l.transcript.result();
  if (!l.transcript.violation().empty()) {
    // Nothing this process said counts: its result is the violation.
    run.result["error"] = {{"kind", kErrorProtocol},
                           {"message", "process " + run.name + " broke the engine protocol: " +
                                           l.transcript.violation()}};
  }
  run.stderr_tail = TailOfFile(o_.work_dir / (run.name + ".stderr"), 5);
  if (l.final_state) ReadFinalState(*l.final_state, run);
  return run;
}

// Digests the state file `run` was told to write. A large one is deleted once digested: the
// next process's state must fit beside the checkpoints, and only small states are diffed.
void Coordinator::ReadFinalState(const fs::path& file, WorkerRun& run) const {
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  run.state = DigestStateFile(file, threads);
  std::error_code ec;
  if (run.state->problem.empty() && run.state->bytes <= kKeptStateBytes) {
    run.state_file = file;
  } else if (fs::is_regular_file(fs::symlink_status(file, ec))) {
    fs::remove(file, ec);
  }
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
  // Flip one byte in the middle of the newest checkpoint's largest file (whatever the engine's
  // format: the native engine's safetensors, a framework's state files).
  fs::path latest;
  for (const auto& e : fs::directory_iterator(o_.checkpoint_root)) {
    if (e.path().filename().string().rfind("step-", 0) == 0 && e.path() > latest) latest = e.path();
  }
  if (latest.empty()) return;  // nothing saved: the resume fails on its own
  fs::path file;
  uintmax_t largest = 0;
  for (const auto& e : fs::recursive_directory_iterator(latest)) {
    if (!e.is_regular_file() || e.is_symlink() || e.file_size() <= largest) continue;
    largest = e.file_size();
    file = e.path();
  }
  if (file.empty()) return;
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  const auto middle = static_cast<std::streamoff>(largest / 2);
  f.seekg(middle);
  char byte = 0;
  f.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x01);
  f.seekp(middle);
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

// What the resumed process said of its restore (the `restored` event); empty when it never
// restored. A flag it did not send is nullopt: it restored only what it says it restored.
RestoredEvent RestoreOf(const nlohmann::json& result) {
  return ReadMetrics<RestoredEvent>(result.value("restore", nlohmann::json::object()));
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

// The step of the last checkpoint `run` reported committed; -1 when none.
int64_t LastCommittedStep(const WorkerRun& run) {
  const nlohmann::json save = run.result.value("save", nlohmann::json::object());
  const nlohmann::json step = save.is_object() ? save.value("step", nlohmann::json()) : nullptr;
  return step.is_number_integer() ? step.get<int64_t>() : -1;
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
  const nlohmann::json hello = c.result.value("hello", a.result.value("hello", nlohmann::json()));
  if (hello.is_object()) {
    const nlohmann::json engine = hello.value("engine", nlohmann::json());
    if (engine.is_string()) m->engine = engine.get<std::string>();
    m->engine_versions = hello.value("versions", nlohmann::json::object());
    const nlohmann::json world = hello.value("world_size", nlohmann::json());
    if (world.is_number_integer()) m->world_size = world.get<int64_t>();
  }
  m->skipped_uncommitted = RestoreOf(c.result).skipped_uncommitted;
  for (const WorkerRun* run : {&a, &b, &c}) {
    if (run->result.contains("protocol_warnings")) {
      m->protocol_problems = {{run->name, run->result["protocol_warnings"]}};
      break;
    }
  }
  m->killed_during_save = b.result.contains("save_started") && b.killed_by_us &&
                          LastCommittedStep(b) >= 0 &&
                          b.result["save_started"].value("step", nlohmann::json()) !=
                              b.result["save"].value("step", nlohmann::json());
}

std::vector<CheckResult> Coordinator::CannotRunChecks(const WorkerRun& a) const {
  TrainStepMetrics m;
  m.cannot_run = "engine " + o_.engine + ": " + python_.string() + " cannot run it here (" +
                 Failure(a) + "): install what it names in that interpreter or pass --python PATH";
  std::vector<CheckResult> checks = {
      {"train.step", CheckStatus::kError, 0, *m.cannot_run, "", ToJson(m)}};
  for (const char* id : {"train.roundtrip", "train.eval", "ckpt.portable"}) {
    checks.push_back({id, CheckStatus::kSkip, 0, "not run: the engine cannot run here",
                      "see train.step", nlohmann::json::object()});
  }
  return checks;
}

CheckResult Coordinator::StepCheck(const WorkerRun& a) const {
  CheckResult c{"train.step", CheckStatus::kPass, 0, "", "", nlohmann::json::object()};
  std::string failure = Failure(a);
  if (a.result.contains("error") && a.result["error"].value("kind", "") == kErrorOutOfMemory) {
    return OutOfMemoryCheck(a);
  }
  if (a.result.contains("error") && a.result["error"].value("kind", "") == kErrorIntegrity) {
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

// The round trip's facts before any judgement: the losses of A and of B-then-C, the processes,
// the save and the restore, and the engine as its processes described it.
RoundtripMetrics Coordinator::RoundtripFacts(const WorkerRun& a, const WorkerRun& b,
                                             const WorkerRun& c) const {
  std::vector<double> lb = Losses(b.result);
  std::vector<double> resumed;
  for (int64_t i = 0; i < static_cast<int64_t>(lb.size()) && i < o_.checkpoint_at; ++i)
    resumed.push_back(lb[i]);
  for (double l : Losses(c.result)) resumed.push_back(l);
  RoundtripMetrics m;
  m.steps = o_.steps;
  m.checkpoint_at = o_.checkpoint_at;
  m.pids = {{"uninterrupted", a.pid}, {"preempted", b.pid}, {"resumed", c.pid}};
  m.preempted_with = "SIGKILL";
  m.losses_uninterrupted = Losses(a.result);
  m.losses_resumed = resumed;
  const RestoredEvent restore = RestoreOf(c.result);
  m.rng_restored = restore.rng_restored.value_or(false);
  m.data_restored = restore.data_restored.value_or(false);
  m.restored_step = RestoredStep(c.result);
  DescribeEngine(a, b, c, &m);
  auto raw = [](const auto& value) {  // the report keeps null for a value not said
    return value ? nlohmann::json(*value) : nlohmann::json();
  };
  if (b.result.contains("save")) {
    const CheckpointEvent save = ReadMetrics<CheckpointEvent>(b.result["save"]);
    m.checkpoint_bytes = raw(save.bytes);
    m.save_s = raw(save.seconds);  // to durable storage
    m.save_gbps = raw(save.gbps);
    // What training was held up for (the copy into staging memory); the write went on beside it.
    m.save_blocking_s = save.blocking_s;
    m.save_staging_wait_s = save.staging_wait_s;
    m.save_staging_alloc_s = save.staging_alloc_s;
    m.save_write_s = save.write_s;
  }
  if (c.result.contains("restore")) {
    m.restore_s = raw(restore.seconds);
    m.restore_gbps = raw(restore.gbps);
  }
  return m;
}

// Why A and C cannot be compared (a process failed, the preemption or the kill during a save
// did not happen, another step was restored, a final state is missing), as the check's
// result; nullopt when they can.
std::optional<CheckResult> Coordinator::RoundtripNotComparable(const WorkerRun& a,
                                                               const WorkerRun& b,
                                                               const WorkerRun& c) const {
  auto result = [](CheckStatus status, std::string summary, std::string remedy = "") {
    return CheckResult{"train.roundtrip",       status, 0, std::move(summary), std::move(remedy),
                       nlohmann::json::object()};
  };
  for (const WorkerRun* run : {&a, &b, &c}) {
    if (std::string failure = Failure(*run); !failure.empty()) {
      const bool checkpoint = run->result.contains("error") &&
                              run->result["error"].value("kind", "") == kErrorCheckpoint;
      return result(CheckStatus::kFail, "process " + run->name + ": " + failure,
                    checkpoint
                        ? "the checkpoint did not verify: check the storage (checkpoint-dir) for "
                          "corruption"
                        : "see the worker's stderr in " + o_.work_dir.string());
    }
  }
  if (!b.killed_by_us) {
    return result(CheckStatus::kError,
                  o_.kill_during_save
                      ? "the preempted process never began its second save after the committed one"
                      : "the preempted process never announced its checkpoint");
  }
  if (o_.kill_during_save && LastCommittedStep(b) != o_.checkpoint_at) {
    // The second save became durable before the SIGKILL landed: nothing was torn, so the
    // restore proves nothing about torn checkpoints.
    return result(
        CheckStatus::kError,
        "the save after step " + std::to_string(o_.checkpoint_at) +
            " was committed before the kill landed: the kill during a save was not exercised",
        "rerun; a larger model's save takes long enough to be killed while it writes");
  }
  // The resume must start from the checkpoint the preempted process committed, not an older
  // or newer one left in the storage.
  const std::optional<int64_t> restored = RestoredStep(c.result);
  if (restored != o_.checkpoint_at) {
    return result(
        CheckStatus::kFail,
        "the resumed process restored " +
            (restored ? "step " + std::to_string(*restored) : std::string("no step it reported")) +
            ", not the checkpoint committed at step " + std::to_string(o_.checkpoint_at),
        "another checkpoint shares the checkpoint directory; give the run its own");
  }
  for (const WorkerRun* run : {&a, &c}) {
    if (const std::string problem = StateProblem(*run); !problem.empty()) {
      return result(CheckStatus::kFail,
                    problem +
                        ": the round trip is judged from the states the processes wrote, "
                        "never from digests they print",
                    "the engine must write its final state (safetensors) to --final-state; see " +
                        (o_.work_dir / (run->name + ".stderr")).string());
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

CheckResult Coordinator::RoundtripCheck(const WorkerRun& a, const WorkerRun& b,
                                        const WorkerRun& c) const {
  RoundtripMetrics m = RoundtripFacts(a, b, c);
  if (std::optional<CheckResult> refused = RoundtripNotComparable(a, b, c)) {
    m.bitwise_equal = false;
    refused->metrics = ToJson(m);
    return *refused;
  }
  CheckResult r{"train.roundtrip", CheckStatus::kPass, 0, "", "", nlohmann::json::object()};
  const std::vector<double>& la = *m.losses_uninterrupted;
  const std::vector<double>& resumed = *m.losses_resumed;
  const RoundtripComparison cmp = CompareRoundtrip(a, c, la, resumed, o_.steps);
  // What the uninterrupted run computed, to the bit: ranks on GPUs of one model must agree.
  m.reference_digest = Sha256Hex(nlohmann::json(la).dump() + Fingerprints(a).dump());
  const bool bitwise = cmp.losses_equal && cmp.states_equal;
  m.bitwise_equal = bitwise;
  m.max_abs_loss_diff = cmp.max_loss_diff;
  m.final_state_equal = cmp.states_equal;
  m.max_abs_state_diff = cmp.max_state_diff;
  m.loss_tolerance = o_.loss_tolerance;
  m.mode = "deterministic";  // every process of the round trip, for the bitwise check
  r.metrics = ToJson(m);
  if (bitwise) {
    r.summary =
        "resumed run is bitwise equal to the uninterrupted one (losses, parameters, AdamW moments) "
        "after SIGKILL at step " +
        std::to_string(o_.checkpoint_at) + " of " + std::to_string(o_.steps);
    if (o_.engine != "native") r.summary += " (engine " + o_.engine + ")";
    if (m.killed_during_save.value_or(false))
      r.summary += "; killed while the next save was being written, the torn one skipped";
    return r;
  }
  // A tolerance forgives loss noise only: never a final state that differs, nor a resume that
  // did not restore every source of state.
  const bool restored_everything =
      m.rng_restored.value_or(false) && m.data_restored.value_or(false);
  if (o_.loss_tolerance > 0 && cmp.max_loss_diff <= o_.loss_tolerance &&
      la.size() == resumed.size() && cmp.states_equal && restored_everything) {
    r.summary = "resumed run within the documented tolerance " + std::to_string(o_.loss_tolerance) +
                " (max loss difference " + std::to_string(cmp.max_loss_diff) + "), not bitwise";
    return r;
  }
  r.status = CheckStatus::kFail;
  m.first_divergent_step = cmp.first_divergent_step;
  if (!cmp.first_divergent_tensor.empty()) m.first_divergent_tensor = cmp.first_divergent_tensor;
  r.metrics = ToJson(m);
  std::ostringstream s;
  s << "resumed run diverges from the uninterrupted one";
  if (cmp.first_divergent_step)
    s << " at step " << cmp.first_divergent_step << " (max loss difference " << cmp.max_loss_diff
      << ")";
  if (!cmp.states_equal)
    s << "; final state differs"
      << (cmp.first_divergent_tensor.empty() ? ""
                                             : " first in '" + cmp.first_divergent_tensor + "'");
  r.summary = s.str();
  r.remedy =
      "a checkpoint must carry every source of state: RNG streams (CPU and device), data-loader "
      "position, optimizer moments, scheduler and loss scaler";
  return r;
}

// Process E restored B's checkpoint at another world size and trained to the end. The round
// trip passes only when E too reproduced A; an engine that cannot carry its data position
// across world sizes says so, and that is the finding instead of a pass.
CheckResult Coordinator::ReshardCheck(const WorkerRun& a, const WorkerRun& e,
                                      CheckResult roundtrip) const {
  ReshardMetrics m;
  m.saved_world_size = o_.engine_nproc;
  m.restored_world_size = o_.reshard_to;
  m.restored_step = RestoredStep(e.result);
  const auto said =
      ReadMetrics<ReshardMetrics>(e.result.value("restore", nlohmann::json::object()));
  m.data_position_carried = said.data_position_carried.value_or(false);
  const auto rt = ReadMetrics<RoundtripMetrics>(roundtrip.metrics);
  std::vector<double> la = Losses(a.result), resharded;
  const std::vector<double> before = rt.losses_resumed.value_or(std::vector<double>{});
  for (int64_t i = 0; i < o_.checkpoint_at && i < static_cast<int64_t>(before.size()); ++i)
    resharded.push_back(before[static_cast<size_t>(i)]);
  for (double l : Losses(e.result)) resharded.push_back(l);
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
      "resharding " + std::to_string(o_.engine_nproc) + " -> " + std::to_string(o_.reshard_to);
  if (roundtrip.status != CheckStatus::kPass) return roundtrip;
  if (const std::string failure = Failure(e); !failure.empty()) {
    roundtrip.status = CheckStatus::kFail;
    roundtrip.summary = what + ": process e-resharded: " + failure;
  } else if (const std::string problem = StateProblem(e); !problem.empty()) {
    roundtrip.status = CheckStatus::kFail;
    roundtrip.summary = what + ": " + problem;
  } else if (m.restored_step != std::optional<int64_t>(o_.checkpoint_at)) {
    roundtrip.status = CheckStatus::kFail;
    roundtrip.summary = what + ": the resharded process did not restore the committed step " +
                        std::to_string(o_.checkpoint_at);
  } else if (!*m.data_position_carried) {
    roundtrip.status = CheckStatus::kFail;
    roundtrip.summary = what +
                        ": the engine cannot carry its data position across world sizes, "
                        "so a resharded resume does not continue the run's data order";
    roundtrip.remedy =
        "resume at the world size the checkpoint was saved at, or use an engine "
        "whose sampler state is global (fsdp2)";
  } else if (*m.bitwise_equal) {
    roundtrip.summary += "; " + what + " also bitwise equal to the uninterrupted run";
  } else {
    roundtrip.status = CheckStatus::kFail;
    std::ostringstream s;
    s << what << ": the resumed run is not bitwise equal to the uninterrupted one (max loss "
      << "difference " << max_diff << (*m.final_state_equal ? "" : "; final state differs") << ")";
    roundtrip.summary = s.str();
    roundtrip.remedy =
        "a reduction over another number of ranks sums in another order; "
        "compare within a tolerance only when the long run will reshard";
  }
  return roundtrip;
}

CheckResult Coordinator::EvalCheck(const WorkerRun& b, const WorkerRun& c) const {
  CheckResult r{"train.eval", CheckStatus::kPass, 0, "", "", nlohmann::json::object()};
  if (!b.result.contains("eval_after_save") || !c.result.contains("eval_after_restore")) {
    r.status = CheckStatus::kFail;
    r.summary =
        "no eval loss around the checkpoint: " + Failure(c.result.contains("error") ? c : b);
    return r;
  }
  double before = b.result.value("eval_after_save", 0.0);
  double after = c.result.value("eval_after_restore", 0.0);
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
  double want = b.result.value("eval_after_save", 0.0), got = d.result.value("eval", 0.0);
  r.metrics = ToJson(PortableMetrics{d.pid, got, want, std::fabs(got - want),
                                     d.result.value("restore", nlohmann::json::object()),
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

// The checks when the engine's files are not the ones the lock pins: nothing may train.
std::vector<CheckResult> EngineFilesRefusedChecks(const EngineFilesFailure& refused) {
  std::vector<CheckResult> checks = {{"train.step", CheckStatus::kFail, 0, refused.what(),
                                      "re-lock with this trainlock, or validate in the image "
                                      "built from the lock",
                                      nlohmann::json::object()}};
  for (const char* id : {"train.roundtrip", "train.eval", "ckpt.portable"}) {
    checks.push_back({id, CheckStatus::kSkip, 0, "the engine's files are not the pinned ones",
                      "see train.step", nlohmann::json::object()});
  }
  return checks;
}

// The checks when process A's run decides them alone: the engine cannot run here, the step
// does not fit, or only train.step was selected. nullopt when the round trip goes on.
std::optional<std::vector<CheckResult>> Coordinator::VerdictFromA(
    const WorkerRun& a, double a_s, TelemetryWindow& telemetry) const {
  const std::string kind =
      a.result.contains("error") ? a.result["error"].value("kind", "") : std::string();
  std::vector<CheckResult> checks;
  if (kind == kErrorUnsupported) {
    // The engine refused what this environment gives it (engine_probe.h decides most of it
    // before any work): the node is not judged, nothing is failed.
    checks = CannotRunChecks(a);
  } else if (kind == kErrorOutOfMemory) {
    // Nothing to resume: every later process would fail the same way.
    const std::string why = "the training step does not fit (see train.step); nothing to resume";
    checks = {StepCheck(a)};
    for (const char* id : {"train.roundtrip", "train.eval", "ckpt.portable"}) {
      checks.push_back({id, CheckStatus::kSkip, 0, why, "apply a train.step remedy first",
                        nlohmann::json::object()});
    }
  } else if (o_.step_only) {
    checks = {StepCheck(a)};
    for (const char* id : {"train.roundtrip", "train.eval", "ckpt.portable"})
      checks.push_back(
          {id, CheckStatus::kSkip, 0, "not selected (--only)", "", nlohmann::json::object()});
    ApplyThrottleFinding(
        telemetry.Finish(ReadMetrics<TrainStepMetrics>(a.result).device.value_or("")), &checks[0]);
  } else {
    return std::nullopt;
  }
  checks[0].duration_s = a_s;
  return checks;
}

// Releases B (started gated while A ran), starts C and D gated once B's save is staged,
// preempts B as the options say, then releases C and D (side by side when they fit) and
// finishes them. No process is released, and no native one spawned, before the one it
// follows has ended.
Coordinator::ResumeRuns Coordinator::RunResume(Launched b_launched, const WorkerRun& a) {
  ResumeRuns out;
  Release(b_launched);
  std::vector<std::string> c_args = {"--steps", std::to_string(o_.steps), "--restore",
                                     "--final-state",
                                     (o_.work_dir / "c-final.safetensors").string()};
  if (o_.negative_control == NegativeControl::kSkipRngRestore) c_args.push_back("--no-restore-rng");
  if (o_.negative_control == NegativeControl::kSkipDataRestore)
    c_args.push_back("--no-restore-data");
  const Preempt b_preempt = o_.kill_during_save ? Preempt::kDuringSave : Preempt::kAfterCommit;
  // C and D only read the committed checkpoint: run them side by side when they fit, both
  // started (and their imports done) while B writes its checkpoint; neither reads anything
  // before release. They start once B has stepped after its save began, so their imports do
  // not share the host with the save's staging (the part of a save that holds training up).
  while (!b_launched.stepped_after_save && ReadSome(b_launched, b_preempt)) {
  }
  out.beside = PortableFitsBesideResume(a);
  Launched c_launched = Launch("c-resumed", c_args, /*gated=*/true);
  std::optional<Launched> d_launched;
  if (out.beside) d_launched = Launch("d-portable", {"--role", "portable"}, /*gated=*/true);
  out.b = Finish(std::move(b_launched), b_preempt, &out.b_s);
  if (o_.negative_control == NegativeControl::kCorruptCheckpoint && out.b.killed_by_us)
    CorruptLatestCheckpoint();
  Release(c_launched);
  if (out.beside) {
    Release(*d_launched);
    std::tie(out.c, out.d) = FinishBoth(std::move(c_launched), std::move(*d_launched));
  } else {
    out.c = Finish(std::move(c_launched), Preempt::kNever, nullptr);
    out.d = Start("d-portable", {"--role", "portable"}, Preempt::kNever, nullptr);
  }
  return out;
}

// The four checks judged from A's run and B's, C's and D's (and E's, which this runs when a
// resharded resume was asked for), with where each process's time went.
std::vector<CheckResult> Coordinator::Judge(const WorkerRun& a, double a_s, const ResumeRuns& r,
                                            TelemetryWindow& telemetry) const {
  // A check outside --only is never judged, though its processes ran for a selected one.
  std::vector<CheckResult> checks = {
      RunSelected(o_.only, "train.step", [&] { return StepCheck(a); }),
      RunSelected(o_.only, "train.roundtrip", [&] { return RoundtripCheck(a, r.b, r.c); }),
      RunSelected(o_.only, "train.eval", [&] { return EvalCheck(r.b, r.c); }),
      RunSelected(o_.only, "ckpt.portable", [&] { return PortableCheck(r.b, r.d); })};
  const bool roundtrip_judged = Selected(o_.only, {"train.roundtrip"});
  if (roundtrip_judged) checks[1].duration_s = a_s + r.b_s + r.c.seconds;
  nlohmann::json processes = nlohmann::json::object();
  for (const WorkerRun* run : {&a, &r.b, &r.c, &r.d}) processes[run->name] = ProcessTimes(*run);
  if (o_.reshard_to > 0 && roundtrip_judged) {
    double e_s = 0;
    WorkerRun e = Start(
        "e-resharded",
        {"--steps", std::to_string(o_.steps), "--restore", "--nproc", std::to_string(o_.reshard_to),
         "--final-state", (o_.work_dir / "e-final.safetensors").string()},
        Preempt::kNever, &e_s);
    checks[1] = ReshardCheck(a, e, std::move(checks[1]));
    checks[1].duration_s += e_s;
    processes[e.name] = ProcessTimes(e);
  }
  RoundtripMetrics placement;
  placement.portable_beside_resume = r.beside;
  placement.processes = processes;
  const TelemetryMetrics sampled =
      telemetry.Finish(ReadMetrics<TrainStepMetrics>(a.result).device.value_or(""));
  placement.telemetry = ToJson(sampled);
  ApplyThrottleFinding(sampled, &checks[0]);  // a throttled step time is not the node's
  if (roundtrip_judged) AddMetrics(&checks[1].metrics, ToJson(placement));
  if (Selected(o_.only, {"train.eval"})) checks[2].duration_s = r.c.seconds;
  if (Selected(o_.only, {"ckpt.portable"})) checks[3].duration_s = r.d.seconds;
  return checks;
}

std::vector<CheckResult> Coordinator::Run() {
  fs::create_directories(o_.work_dir);
  fs::create_directories(o_.checkpoint_root);
  try {
    PrepareEngine();
  } catch (const EngineFilesFailure& refused) {
    if (refused.exit_code() != kExitVerdict) throw;
    return EngineFilesRefusedChecks(refused);
  }
  TelemetryWindow telemetry(o_.device);  // NVML samples while the processes train
  const std::string steps = std::to_string(o_.steps), at = std::to_string(o_.checkpoint_at);
  Launched a_launched =
      Launch("a-uninterrupted",
             {"--steps", steps, "--measure-step", std::to_string(std::min<int64_t>(2, o_.steps)),
              "--final-state", (o_.work_dir / "a-final.safetensors").string()});
  std::vector<std::string> b_args = {"--steps", steps, "--save-at", at};
  if (o_.kill_during_save) {
    // A second save after the committed one, killed while it is being written: C must
    // restore the committed checkpoint and never the torn one.
    b_args.insert(b_args.end(),
                  {"--save-at", std::to_string(o_.checkpoint_at + 1), "--async-save"});
  }
  // B does its imports while A trains (a native B is spawned at its release); it is ended
  // unreleased when A decides there is no B.
  std::optional<Launched> b_launched;
  if (!o_.step_only) b_launched = Launch("b-preempted", b_args, /*gated=*/true);
  double a_s = 0;
  WorkerRun a = Finish(std::move(a_launched), Preempt::kNever, &a_s);
  if (std::optional<std::vector<CheckResult>> decided = VerdictFromA(a, a_s, telemetry))
    return *decided;
  const ResumeRuns resumed = RunResume(std::move(*b_launched), a);
  return Judge(a, a_s, resumed, telemetry);
}

}  // namespace

std::vector<CheckResult> RunRoundtrip(const RoundtripOptions& options, const Project& project) {
  // A Python engine runs in the work directory: every path it is given is absolute.
  RoundtripOptions absolute = options;
  absolute.work_dir = fs::absolute(options.work_dir);
  absolute.checkpoint_root = fs::absolute(options.checkpoint_root);
  absolute.project = fs::absolute(options.project);
  return Coordinator(absolute, project).Run();
}

}  // namespace trainlock::validate
