// The round trip's running half; see roundtrip.h. roundtrip_checks.h judges what it ran.
#include "coordinator/roundtrip.h"

#include <chrono>
#include <csignal>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>

#include "base/failure.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "base/program_path.h"
#include "coordinator/checkpoint_verify.h"
#include "coordinator/engine_command.h"
#include "coordinator/roundtrip_checks.h"
#include "coordinator/roundtrip_runs.h"
#include "coordinator/spec_resolver.h"
#include "coordinator/state_file.h"
#include "engines/native/checkpoint.h"
#include "plan/memory_model.h"
#include "probes/gpu_telemetry.h"
#include "probes/host_memory.h"
#include "project/artifact_paths.h"
#include "project/project.h"
#include "report/check_metrics.h"
#include "support/check_selection.h"
#include "support/engine_protocol.h"
#include "support/engine_transcript.h"
#include "support/parallel.h"
#include "support/torch_build.h"
#include "support/worker_process.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

// When the coordinator SIGKILLs a process: never, once its checkpoint is committed (the
// preemption of the round trip), or as soon as a later save begins (a kill during the save).
enum class Preempt { kNever, kAfterCommit, kDuringSave };

// How often the coordinator looks at an engine's stderr while it waits for its output, how
// long output may go on after the engine itself exited (something it left holding stdout),
// and the caps on what an engine writes (docs/validate.md, "The engine protocol").
constexpr std::chrono::milliseconds kEngineWatchSlice(100);
constexpr std::chrono::milliseconds kEngineLeftoverGrace(500);
constexpr uint64_t kMaxEngineOutputBytes = uint64_t{256} << 20;
// Final states up to this size stay in the work directory, for the element-wise difference.
constexpr uint64_t kKeptStateBytes = uint64_t{1} << 30;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs processes A to E as the options say (launching, gating, preempting, corrupting) into a
// RoundtripRuns value; roundtrip_checks.h's judges read that value.
class RoundtripRunner {
 public:
  RoundtripRunner(const RoundtripOptions& o, const Project& project)
      : o_(o), project_(project), epoch_(Clock::now()) {}

  RoundtripRuns Run();

 private:
  std::vector<std::string> CommonArgs() const;
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
  // Ends a process started ahead of its turn that will not be released.
  void Abandon(Launched& l) const;
  void PrepareEngine();
  bool PortableFitsBesideResume(const WorkerRun& a) const;
  // B's checkpoint, read and hashed here (checkpoint_verify.h); nullopt when B announced none.
  std::optional<VerifiedCheckpoint> VerifyCommitted(const WorkerRun& b) const;
  void CorruptLatestCheckpoint();
  // Runs B, C and D (and E when a resharded resume is judged) into `runs`.
  void RunResume(Launched b_launched, RoundtripRuns& runs);

  double SinceStart() const { return Seconds(epoch_); }

  const RoundtripOptions& o_;
  const Project& project_;
  Clock::time_point epoch_;  // the round trip's start: what each process's times count from
  fs::path engine_dir_;      // a Python engine's verified package
  fs::path python_;
  fs::path spec_file_;
  std::string spec_sha256_;  // of the spec file as written
};

// The protocol's options every process of this run gets (docs/validate.md, "The engine
// protocol"): the spec and its hash, which the process verifies on the bytes it reads.
std::vector<std::string> RoundtripRunner::CommonArgs() const {
  std::vector<std::string> args = {"--checkpoint-root",
                                   o_.checkpoint_root.string(),
                                   "--device",
                                   o_.device,
                                   "--threads",
                                   std::to_string(o_.threads),
                                   "--keep-last",
                                   std::to_string(o_.keep_last),
                                   "--spec",
                                   spec_file_.string(),
                                   "--spec-sha256",
                                   spec_sha256_};
  // Several processes of one Python engine run share the node's GPUs: each rank picks its own.
  if (o_.engine != "native" && std::max(o_.engine_nproc, o_.reshard_to) > 1 &&
      o_.device.rfind("cuda:", 0) == 0)
    args[3] = "cuda";
  return args;
}

// The run every process trains, written once as the engine spec; a Python engine runs from
// the lock's pinned package, copied into this run's directory.
void RoundtripRunner::PrepareEngine() {
  spec_file_ = o_.work_dir / "engine-spec.json";
  const std::string spec =
      EngineSpecJson(ResolveEngineSpec(project_, o_.steps, o_.engine)).dump(2) + "\n";
  spec_sha256_ = Sha256Hex(spec);
  WriteFileAtomically(spec_file_, spec);
  if (o_.engine == "native") return;
  engine_dir_ = InstallVerifiedEngine(*project_.lock, o_.work_dir);
  python_ = fs::absolute(EnginePython(o_.python));  // the engine runs in the work directory
}

RoundtripRunner::Launched RoundtripRunner::Launch(const std::string& name,
                                                  const std::vector<std::string>& extra,
                                                  bool gated) const {
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

void RoundtripRunner::Spawn(Launched& l) const {
  l.started = Clock::now();
  l.run.spawned_s = l.run.started_s = SinceStart();
  l.run.oom_kills_before = CgroupOomKills();
  const std::string& name = l.run.name;
  EngineLaunch launch = EngineCommand(o_.engine, python_, engine_dir_, o_.engine_sys_path,
                                      CommonArgs(), l.argv_extra);
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

void RoundtripRunner::Release(Launched& l) const {
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
EngineExpectation RoundtripRunner::Expectation(const std::vector<std::string>& extra) const {
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

// A process's event log, opened as a regular file of ours: whatever an engine planted at its
// name in the work directory (a FIFO would block the open, a link would write elsewhere) is
// removed first.
std::unique_ptr<std::ofstream> OpenEventLog(const fs::path& file) {
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(file, ec);
  if (fs::exists(status) && !fs::is_regular_file(status)) fs::remove(file, ec);
  return std::make_unique<std::ofstream>(file);
}

// Reads what is there of `l`'s output, waiting at most one watch slice; false once its
// output is done (ended, capped, broken, or left held by something it started).
bool RoundtripRunner::ReadSome(Launched& l, Preempt preempt) const {
  WorkerRun& run = l.run;
  const auto deadline = l.started + std::chrono::seconds(o_.timeout_s);
  if (l.output_done || Clock::now() >= deadline) return Done(l);
  if (!l.log) l.log = OpenEventLog(o_.work_dir / (run.name + ".jsonl"));
  auto line = l.child->ReadLine(std::min(deadline, Clock::now() + kEngineWatchSlice));
  if (l.child->StderrBytes() > kMaxChildStderrBytes) {
    l.transcript.Violate("its stderr passed " + std::to_string(kMaxChildStderrBytes >> 20) +
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
  if (event == kEventStep && l.transcript.LastCheckpoint("started")) l.stepped_after_save = true;
  if (!l.transcript.violation().empty()) return Done(l);  // nothing more it says counts
  if (event == kEventCheckpoint && !run.killed_by_us && ShouldPreempt(l.transcript, preempt)) {
    l.child->Kill();
    run.killed_by_us = true;
  }
  return true;
}

bool RoundtripRunner::Done(Launched& l) const {
  if (l.output_done) return false;
  if (!l.transcript.violation().empty()) l.child->Kill();
  l.output_done = true;
  l.output_done_at = Clock::now();
  l.run.ended_s = SinceStart();
  return false;
}

// Whether the checkpoint events so far are where `preempt` says the process dies.
bool RoundtripRunner::ShouldPreempt(const EngineTranscript& t, Preempt preempt) const {
  const bool committed = t.LastCheckpoint("committed").has_value();
  const std::optional<int64_t> started = t.LastCheckpoint("started");
  return (preempt == Preempt::kAfterCommit && committed) ||
         (preempt == Preempt::kDuringSave && committed && started && *started > o_.checkpoint_at);
}

WorkerRun RoundtripRunner::Finish(Launched l, Preempt preempt, double* seconds) const {
  while (ReadSome(l, preempt)) {
  }
  WorkerRun run = Collect(l);
  if (seconds) *seconds = run.seconds;
  return run;
}

std::pair<WorkerRun, WorkerRun> RoundtripRunner::FinishBoth(Launched first, Launched second) const {
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
WorkerRun RoundtripRunner::Collect(Launched& l) const {
  WorkerRun run = std::move(l.run);
  l.log.reset();
  run.exit_code = l.child->Wait(l.started + std::chrono::seconds(o_.timeout_s));
  if (l.child->stderr_capped()) {  // after its stdout ended, still writing stderr: stopped
    if (!run.exit_code) run.exit_code = 128 + SIGKILL;  // or it ended by itself over the cap
    l.transcript.Violate("its stderr passed " + std::to_string(kMaxChildStderrBytes >> 20) +
                         " MiB");
  }
  l.child->KillLeftovers();  // what it started ends with it (a daemon holding its stdout too)
  run.seconds = std::chrono::duration<double>(l.output_done_at - l.started).count();
  run.peak_rss_bytes = l.rss->peak_bytes();
  l.rss.reset();
  run.oom_kills_after = CgroupOomKills();
  l.transcript.End(run.exit_code == 0 && !run.killed_by_us);
  run.result = l.transcript.result();
  if (!l.transcript.violation().empty()) {
    // Nothing this process said counts: its result is the violation.
    ErrorEvent broke;
    broke.kind = kErrorProtocol;
    broke.message =
        "process " + run.name + " broke the engine protocol: " + l.transcript.violation();
    run.result.error = broke;
  }
  run.stderr_tail = TailOfFile(o_.work_dir / (run.name + ".stderr"), 5);
  if (l.final_state) ReadFinalState(*l.final_state, run);
  return run;
}

// Digests the state file `run` was told to write. A large one is deleted once digested: the
// next process's state must fit beside the checkpoints, and only small states are diffed.
void RoundtripRunner::ReadFinalState(const fs::path& file, WorkerRun& run) const {
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  run.state = DigestStateFile(file, threads);
  std::error_code ec;
  if (run.state->problem.empty() && run.state->bytes <= kKeptStateBytes) {
    run.state_file = file;
  } else if (fs::is_regular_file(fs::symlink_status(file, ec))) {
    fs::remove(file, ec);
  }
}

void RoundtripRunner::Abandon(Launched& l) const {
  if (!l.child) return;  // a native process waits unspawned
  l.child->Kill();
  l.child->KillLeftovers();
}

// The step directory of the checkpoint the coordinator asked B for (--save-at), whatever B said
// of it, against the commit record B's engine writes: what C and D are given to restore is
// checked by the coordinator itself, never taken from B's word.
std::optional<VerifiedCheckpoint> RoundtripRunner::VerifyCommitted(const WorkerRun& b) const {
  if (!b.result.save) return std::nullopt;
  const CommitRecord record =
      o_.engine == "native" ? CommitRecord::kNativeManifest : CommitRecord::kPythonMarker;
  return VerifyCheckpoint(o_.checkpoint_root, o_.checkpoint_at, record, IoThreads(),
                          Clock::now() + std::chrono::seconds(o_.timeout_s));
}

// The portable process (D) only evaluates, so it can share the device with the resumed one
// (C) when the memory left beside a training step, as process A measured it, holds D's
// weights and eval logits with a margin; otherwise D runs after C.
bool RoundtripRunner::PortableFitsBesideResume(const WorkerRun& a) const {
  const TrainStepMetrics m = a.result.measurement.value_or(TrainStepMetrics{});
  const int64_t total = m.device_total_bytes.value_or(-1);
  const int64_t used = m.device_used_bytes.value_or(-1);
  if (total <= 0 || used < 0) return false;  // CPU, or nothing measured: keep them apart
  MemoryEstimate estimate = EstimateTrainingMemory(project_.config);
  const double need = estimate.weights_bytes + estimate.logits_bytes + 2.0 * (1 << 30);
  return static_cast<double>(total - used) > need;
}

void RoundtripRunner::CorruptLatestCheckpoint() {
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

// Releases B (started gated while A ran), starts C and D gated once B's save is staged,
// preempts B as the options say, verifies B's checkpoint, then releases C and D (side by side
// when they fit) and finishes them; when the checkpoint does not verify, C and D are ended
// unreleased. No process is released, and no native one spawned, before the one it follows has
// ended and its checkpoint verified.
void RoundtripRunner::RunResume(Launched b_launched, RoundtripRuns& out) {
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
  out.beside = PortableFitsBesideResume(out.a);
  Launched c_launched = Launch("c-resumed", c_args, /*gated=*/true);
  std::optional<Launched> d_launched;
  if (out.beside) d_launched = Launch("d-portable", {"--role", "portable"}, /*gated=*/true);
  out.b = Finish(std::move(b_launched), b_preempt, &out.b_s);
  out.checkpoint = VerifyCommitted(out.b);
  if (!out.checkpoint || !out.checkpoint->problem.empty()) {
    // Nothing verified to restore: C and D are never released, and nothing runs after them.
    Abandon(c_launched);
    if (d_launched) Abandon(*d_launched);
    return;
  }
  // The negative control damages the checkpoint after the coordinator verified it: what it
  // proves is that the engine's own restore refuses it.
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
  if (o_.reshard_to > 0 && Selected(o_.only, {"train.roundtrip"})) {
    out.e = Start(
        "e-resharded",
        {"--steps", std::to_string(o_.steps), "--restore", "--nproc", std::to_string(o_.reshard_to),
         "--final-state", (o_.work_dir / "e-final.safetensors").string()},
        Preempt::kNever, &out.e_s);
  }
}

RoundtripRuns RoundtripRunner::Run() {
  fs::create_directories(o_.work_dir);
  fs::create_directories(o_.checkpoint_root);
  RoundtripRuns runs;
  try {
    PrepareEngine();
  } catch (const trainlock::Failure& refused) {
    if (refused.exit_code() != kExitVerdict) throw;
    runs.refused = {RoundtripRefusal::Why::kEngineFiles, refused.what()};
    return runs;
  } catch (const ArtifactPathError& outside) {
    runs.refused = {RoundtripRefusal::Why::kPinnedFileOutside, outside.what()};
    return runs;
  }
  runs.python = python_;
  // NVML samples every GPU the processes train on (a resharded E's too) while they train.
  TelemetryWindow telemetry(o_.device, std::max(o_.engine_nproc, o_.reshard_to));
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
  runs.a = Finish(std::move(a_launched), Preempt::kNever, &runs.a_s);
  const std::string trained_on = runs.a.result.said.device.value_or("");
  runs.decided_by_a = DecidedByA({o_, project_, python_}, runs.a);
  if (!runs.decided_by_a) RunResume(std::move(*b_launched), runs);
  runs.telemetry = telemetry.Finish(trained_on);
  return runs;
}

// A Python engine runs in the work directory: every path it is given is absolute.
RoundtripOptions WithAbsolutePaths(const RoundtripOptions& options) {
  RoundtripOptions absolute = options;
  absolute.work_dir = fs::absolute(options.work_dir);
  absolute.checkpoint_root = fs::absolute(options.checkpoint_root);
  return absolute;
}

}  // namespace

RoundtripRuns RunRoundtripProcesses(const RoundtripOptions& options, const Project& project) {
  return RoundtripRunner(WithAbsolutePaths(options), project).Run();
}

std::vector<CheckResult> RunRoundtrip(const RoundtripOptions& options, const Project& project) {
  const RoundtripOptions absolute = WithAbsolutePaths(options);  // the judge reads them too
  const RoundtripRuns runs = RoundtripRunner(absolute, project).Run();
  return JudgeRoundtrip({absolute, project, runs.python}, runs);
}

}  // namespace trainlock::validate
