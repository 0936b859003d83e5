// The round trip's plan, what decides and drives (ninja's Plan and Builder over its
// CommandRunner); see roundtrip.h. Which processes run (A uninterrupted, B preempted, C resumed,
// D portable, E resharded), with which options, in which order, held behind which, preempted
// where, and what the coordinator checks or damages between them is decided here; starting,
// watching, preempting and collecting one process is engine_process.h's; roundtrip_checks.h
// judges what ran.
#include "coordinator/roundtrip.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>

#include "base/failure.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "base/sha256.h"
#include "coordinator/checkpoint_corrupt.h"
#include "coordinator/checkpoint_verify.h"
#include "coordinator/engine_command.h"
#include "coordinator/engine_process.h"
#include "coordinator/roundtrip_checks.h"
#include "coordinator/roundtrip_runs.h"
#include "coordinator/spec_resolver.h"
#include "coordinator/state_dir.h"
#include "plan/memory_model.h"
#include "probes/gpu_telemetry.h"
#include "project/artifact_paths.h"
#include "project/project.h"
#include "project/round_trip_engines.h"
#include "report/check_metrics.h"
#include "support/check_selection.h"
#include "support/engine_transcript.h"
#include "support/parallel.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

// Threads for hashing beside a process that trains on: half of the host's.
unsigned HalfTheCores() {
  return std::max(1u, std::thread::hardware_concurrency() / 2);
}

// The final states' size: the model's weights and its optimizer's moments, as the round trip's
// states hold them (fp32 weights, AdamW's two moments; a smaller optimizer's are smaller). The
// resumed process keeps as much on its device once it has given back what training alone needs.
double StateBytes(const TrainConfig& config) {
  const MemoryEstimate estimate = EstimateTrainingMemory(config);
  return std::max(0.0, estimate.weights_bytes + estimate.optimizer_bytes);
}

// What the portable process (D) needs on the device beside another process: its weights and
// eval logits with a margin.
double PortableNeedsBytes(const TrainConfig& config) {
  const MemoryEstimate estimate = EstimateTrainingMemory(config);
  return estimate.weights_bytes + estimate.logits_bytes + 2.0 * (1 << 30);
}

// B dies (SIGKILL) once its checkpoint is committed: the preemption of the round trip.
bool CommittedACheckpoint(const EngineTranscript& t) {
  return t.LastCheckpoint("committed").has_value();
}

// Decides and drives processes A to E as the options say (which run, gated behind which,
// preempted where, what is verified or corrupted between them), each run by an EngineProcess,
// into a RoundtripRuns value; roundtrip_checks.h's judges read that value.
// --negative-control bitflip: the processes that compute the reference (A, and B, which saves)
// flip one weight's lowest mantissa bit after their first step, before any checkpoint, so the
// resume agrees with them and only the golden digest tells (engines/native/trainer.h).
const std::vector<std::string>& FlipBitArgs() {
  static const std::vector<std::string> kArgs = {"--flip-bit-at", "1"};
  return kArgs;
}

class RoundtripRunner {
 public:
  RoundtripRunner(const RoundtripOptions& o, const Project& project)
      : o_(o),
        project_(project),
        settings_{o.work_dir, o.timeout_s, o.device, std::chrono::steady_clock::now()} {}

  RoundtripRuns Run();

 private:
  std::vector<std::string> CommonArgs() const;
  // Starts a process with the protocol's common options and `extra`. A gated process is started
  // ahead of its turn: it loads its libraries (a Python engine its interpreter and framework, the
  // native worker LibTorch) and waits (--start-after) without a device until released, so those
  // seconds pass while the process before it still runs.
  EngineProcess Launch(const std::string& name, const std::vector<std::string>& extra,
                       bool gated = false, bool digest_state_later = false) const;
  EngineExpectation Expectation(const std::vector<std::string>& extra) const;
  // When B dies: once its checkpoint is committed, or with --kill-during-save as soon as a
  // later save begins.
  PreemptWhen PreemptB() const;
  WorkerRun Start(const std::string& name, const std::vector<std::string>& extra) const {
    return Finish(Launch(name, extra));
  }
  void PrepareEngine();
  bool PortableFitsBesideResume(const WorkerRun& a) const;
  bool PortableFitsBesideResumedState(const WorkerRun& a) const;
  static bool SaidStep(const EngineProcess& process, int64_t step);
  void FinishWithPortable(EngineProcess c_process, EngineProcess d_process, const fs::path& c_final,
                          RoundtripRuns& out, const std::function<void()>& at_c_end) const;
  // The saving process B is also the reference A would be (it trains every step, measures the
  // step and writes its final state before it is killed), except with --kill-during-save, where
  // B dies mid-save, and with --only train.step, where nothing saves.
  bool SavingRunIsReference() const { return !o_.kill_during_save && !o_.step_only; }
  // The steady-state saves B makes after its measurement (--steady-saves), where its engine can.
  int SteadySaves() const;
  fs::path SteadyRoot() const { return o_.work_dir / "steady-saves"; }
  // B's options: a save at checkpoint_at (and with --kill-during-save a second one, killed
  // mid-write), and when it is the reference A's measurement and final state too.
  std::vector<std::string> SavingArgs() const;
  // B's checkpoint, read and hashed here (checkpoint_verify.h); nullopt when B announced none.
  std::optional<VerifiedCheckpoint> VerifyCommitted(const WorkerRun& b) const;
  // Runs B, C and D (and E when a resharded resume is judged) into `runs`.
  void RunResume(EngineProcess b_process, RoundtripRuns& runs);
  // Runs A, then B, C and D behind it (--kill-during-save, --only train.step).
  void RunBehindReference(RoundtripRuns& runs);

  const RoundtripOptions& o_;
  const Project& project_;
  EngineProcessSettings settings_;  // its epoch: the round trip's start
  fs::path engine_dir_;             // a Python engine's verified package
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

EngineProcess RoundtripRunner::Launch(const std::string& name,
                                      const std::vector<std::string>& extra, bool gated,
                                      bool digest_state_later) const {
  EngineStart start;
  start.name = name;
  start.digest_state_later = digest_state_later;
  std::vector<std::string> with_world = extra;
  if (o_.engine != "native" && std::find(extra.begin(), extra.end(), "--nproc") == extra.end())
    with_world.insert(with_world.end(), {"--nproc", std::to_string(o_.engine_nproc)});
  std::vector<std::string> argv_extra = with_world;  // its own options, after the common ones
  start.held = gated;
  if (gated) {
    start.gate = o_.work_dir / (name + ".start");
    argv_extra.insert(argv_extra.end(), {"--start-after", start.gate->string()});
  }
  start.expectation = Expectation(with_world);
  if (const auto at = std::find(extra.begin(), extra.end(), "--final-state");
      at != extra.end() && at + 1 != extra.end())
    start.final_state = *(at + 1);
  start.command =
      EngineCommand(o_.engine, python_, engine_dir_, o_.engine_sys_path, CommonArgs(), argv_extra);
  return EngineProcess(settings_, std::move(start));
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

int RoundtripRunner::SteadySaves() const {
  const RoundTripEngine* engine = FindRoundTripEngine(o_.engine);
  return SavingRunIsReference() && engine && engine->steady_saves ? o_.steady_saves : 0;
}

PreemptWhen RoundtripRunner::PreemptB() const {
  if (!o_.kill_during_save) {
    // The saving run is also the reference: it dies once it has said everything A would have,
    // and its steady-state saves.
    return [steady = static_cast<size_t>(SteadySaves())](const EngineTranscript& t) {
      return CommittedACheckpoint(t) && t.result().final_state.has_value() &&
             t.result().measurement.has_value() && t.result().steady_saves.size() >= steady;
    };
  }
  // B says its second save is held at the point asked (--hold-save-at): the kill lands there.
  return [](const EngineTranscript& t) { return t.LastCheckpoint("held").has_value(); };
}

// The step directory of the checkpoint the coordinator asked B for (--save-at), whatever B said
// of it, against the commit record B's engine writes: what C and D are given to restore is
// checked by the coordinator itself, never taken from B's word.
std::optional<VerifiedCheckpoint> RoundtripRunner::VerifyCommitted(const WorkerRun& b) const {
  if (!b.result.save) return std::nullopt;
  const CommitRecord record =
      o_.engine == "native" ? CommitRecord::kNativeManifest : CommitRecord::kPythonMarker;
  return VerifyCheckpoint(o_.checkpoint_root, StepToRestore(o_), record, IoThreads(),
                          std::chrono::steady_clock::now() + std::chrono::seconds(o_.timeout_s));
}

// The portable process (D) only evaluates, so it can share the device with the resumed one
// (C) when the memory left beside a training step, as process A measured it, holds D's
// weights and eval logits with a margin; otherwise D runs after C.
bool RoundtripRunner::PortableFitsBesideResume(const WorkerRun& a) const {
  const TrainStepMetrics m = a.result.measurement.value_or(TrainStepMetrics{});
  const int64_t total = m.device_total_bytes.value_or(-1);
  const int64_t used = m.device_used_bytes.value_or(-1);
  if (total <= 0 || used < 0) return false;  // CPU, or nothing measured: keep them apart
  return static_cast<double>(total - used) > PortableNeedsBytes(project_.config);
}

// The portable process (D) may also start once the resumed one (C) has trained its last step,
// when its engine then gives the device back (round_trip_engines.h) and what C keeps (weights,
// optimizer moments and 1 GiB of context) leaves room for D's weights and eval logits with a
// margin: C's end (its final state written to the host, its exit) and D's start overlap.
bool RoundtripRunner::PortableFitsBesideResumedState(const WorkerRun& a) const {
  const RoundTripEngine* engine = FindRoundTripEngine(o_.engine);
  const TrainStepMetrics m = a.result.measurement.value_or(TrainStepMetrics{});
  const int64_t total = m.device_total_bytes.value_or(-1);
  if (!engine || !engine->frees_device_after_training || total <= 0 || o_.engine_nproc > 1)
    return false;
  const double kept = StateBytes(project_.config) + 1.0 * (1 << 30);  // and its context
  return static_cast<double>(total) - kept > PortableNeedsBytes(project_.config);
}

// Whether `process` has said the step `step` (its losses, in order).
bool RoundtripRunner::SaidStep(const EngineProcess& process, int64_t step) {
  const std::vector<StepEvent>& losses = process.transcript().result().losses;
  return !losses.empty() && losses.back().step >= step;
}

// Watches C and D as they run side by side; C is collected and its final state digested on a
// thread of its own once its output ends (and `at_c_end` called), while D is still watched (so
// D's times stay its own).
void RoundtripRunner::FinishWithPortable(EngineProcess c_process, EngineProcess d_process,
                                         const fs::path& c_final, RoundtripRuns& out,
                                         const std::function<void()>& at_c_end) const {
  std::future<void> c_done;
  bool c_open = true, d_open = true;
  while (c_open || d_open) {
    if (c_open && !(c_open = c_process.Watch({}))) {
      if (at_c_end) at_c_end();
      c_done = std::async(std::launch::async, [&c_process, &c_final, &out] {
        out.c = c_process.Collect();
        DigestFinalState(c_final, out.c);
      });
    }
    if (d_open) d_open = d_process.Watch({});
  }
  out.d = d_process.Collect();
  c_done.get();
}

// Releases B, starts C and D gated once B has stepped after its save began, preempts B as the
// options say, verifies B's checkpoint, then releases C and D (side by side when they fit) and
// finishes them; when the checkpoint does not verify, C and D are ended unreleased. No process is
// released, and no native one spawned, before the one it follows has ended and its checkpoint
// verified. When B is the reference it is runs.a too, and its final state is digested while C
// runs (C's while D runs): the coordinator's hashing waits on no process.
void RoundtripRunner::RunResume(EngineProcess b_process, RoundtripRuns& out) {
  b_process.Release();
  const fs::path c_final = StateFile(o_, "c-final.safetensors");
  std::vector<std::string> c_args = {"--steps", std::to_string(o_.steps), "--restore",
                                     "--final-state", c_final.string()};
  if (o_.negative_control == NegativeControl::kSkipRngRestore) c_args.push_back("--no-restore-rng");
  if (o_.negative_control == NegativeControl::kSkipDataRestore)
    c_args.push_back("--no-restore-data");
  if (o_.kill_during_save)
    c_args.insert(c_args.end(), {"--restored-state", RestoredStateFile(o_).string()});
  const PreemptWhen b_preempt = PreemptB();
  // C and D only read the committed checkpoint; both are started (and their imports done) while
  // B writes its checkpoint, and neither reads anything before release. They start once B has
  // stepped after its save began, so their imports do not share the host with the save's
  // staging (the part of a save that holds training up).
  while (!b_process.stepped_after_save() && b_process.Watch(b_preempt)) {
  }
  EngineProcess c_process =
      Launch("c-resumed", c_args, /*gated=*/true, /*digest_state_later=*/true);
  EngineProcess d_process = Launch("d-portable", {"--role", "portable"}, /*gated=*/true);
  const bool b_is_a = SavingRunIsReference();
  // B's final state is digested as soon as B says it is written, while B warms up its run mode
  // and waits for its upload (the digest leaves half the cores to B), not beside C's restore.
  WorkerRun b_state;
  std::future<void> b_state_digested;
  while (b_process.Watch(b_preempt)) {
    if (b_is_a && !b_state_digested.valid() && b_process.transcript().result().final_state) {
      b_state_digested = std::async(std::launch::async, [this, &b_state] {
        DigestFinalState(StateFile(o_, "b-final.safetensors"), b_state, HalfTheCores());
      });
    }
  }
  out.b = b_process.Collect();
  out.b_s = out.b.seconds;
  // The steady-state saves are never restored: their bytes go (beside the checkpoint's
  // verification) before C is released to write its final state (B, which wrote them, is dead:
  // nothing writes there any more; links are removed, not followed).
  std::future<void> steady_removed = std::async(std::launch::async, [root = SteadyRoot()] {
    std::error_code ignored;
    fs::remove_all(root, ignored);
  });
  const auto take_b_state = [&] {
    if (b_state_digested.valid()) {
      b_state_digested.get();
      out.a.state = std::move(b_state.state);
      out.a.state_file = b_state.state_file;
    } else {
      DigestFinalState(StateFile(o_, "b-final.safetensors"), out.a);  // B never said it
    }
  };
  if (b_is_a) {
    out.a = out.b;  // one process: the run that saved trained on, uninterrupted, to the end
    out.a_s = out.b.seconds;
    out.b_s = 0;
    out.decided_by_a = DecidedByA({o_, project_, python_}, out.a);
  }
  if (!out.decided_by_a) out.checkpoint = VerifyCommitted(out.b);
  steady_removed.get();
  if (out.decided_by_a || !out.checkpoint || !out.checkpoint->problem.empty()) {
    // Nothing verified to restore: C and D are never released, and nothing runs after them.
    c_process.Abandon();
    d_process.Abandon();
    if (b_is_a) take_b_state();
    return;
  }
  // The negative control damages the checkpoint after the coordinator verified it: what it
  // proves is that the engine's own restore refuses it.
  // The step directory it verified, by name below the root: a `step-99999999` link an engine
  // planted is never the target, and nothing below is written through a link.
  if (o_.negative_control == NegativeControl::kCorruptCheckpoint && out.b.killed_by_us)
    CorruptCheckpoint(o_.checkpoint_root, out.checkpoint->dir.filename().string());
  c_process.Release();
  std::future<void> a_state;
  if (b_is_a) a_state = std::async(std::launch::async, take_b_state);
  out.beside = PortableFitsBesideResume(out.a);
  const auto beside_portable = [this] {
    if (o_.beside_portable) o_.beside_portable();
  };
  if (out.beside) {
    d_process.Release();
    FinishWithPortable(std::move(c_process), std::move(d_process), c_final, out, beside_portable);
  } else if (PortableFitsBesideResumedState(out.a)) {
    // C gives the device back before it says its last step: D starts then, beside C's end.
    while (!SaidStep(c_process, o_.steps) && c_process.Watch({})) {
    }
    d_process.Release();
    beside_portable();
    out.beside_end = true;
    FinishWithPortable(std::move(c_process), std::move(d_process), c_final, out, {});
  } else {
    out.c = Finish(std::move(c_process));
    d_process.Release();
    beside_portable();
    std::future<void> c_state =
        std::async(std::launch::async, [&c_final, &out] { DigestFinalState(c_final, out.c); });
    out.d = Finish(std::move(d_process));
    c_state.get();
  }
  if (a_state.valid()) a_state.get();
  if (o_.reshard_to > 0 && Selected(o_.only, {"train.roundtrip"})) {
    out.e = Start("e-resharded", {"--steps", std::to_string(o_.steps), "--restore", "--nproc",
                                  std::to_string(o_.reshard_to), "--final-state",
                                  StateFile(o_, "e-final.safetensors").string()});
    out.e_s = out.e->seconds;
  }
}

std::vector<std::string> RoundtripRunner::SavingArgs() const {
  std::vector<std::string> args = {"--steps", std::to_string(o_.steps), "--save-at",
                                   std::to_string(o_.checkpoint_at)};
  if (o_.kill_during_save) {
    // A second save after the committed one, held at --kill-point and killed there: C must
    // restore the committed checkpoint (the second one once its commit record is written) and
    // never a torn one; A's state at that step is what C's restored state must equal.
    args.insert(args.end(), {"--save-at", std::to_string(o_.checkpoint_at + 1), "--async-save",
                             "--hold-save-at", o_.kill_point});
    if (o_.negative_control == NegativeControl::kTornSnapshot)
      args.push_back("--leak-step-into-save");
  }
  if (o_.negative_control == NegativeControl::kFlipBit)
    args.insert(args.end(), FlipBitArgs().begin(), FlipBitArgs().end());
  if (SavingRunIsReference()) {
    args.insert(args.end(), {"--measure-step", std::to_string(std::min<int64_t>(2, o_.steps)),
                             "--final-state", StateFile(o_, "b-final.safetensors").string()});
    // A Python engine would exit once done; it waits for the SIGKILL as the native worker does
    // after a save, so nothing a clean exit does can complete its checkpoint.
    if (o_.engine != "native") args.push_back("--hold-until-killed");
    if (SteadySaves() > 0)
      args.insert(args.end(), {"--steady-saves", std::to_string(SteadySaves()), "--steady-root",
                               SteadyRoot().string()});
  }
  return args;
}

void RoundtripRunner::RunBehindReference(RoundtripRuns& runs) {
  std::vector<std::string> a_args = {
      "--steps",        std::to_string(o_.steps),
      "--measure-step", std::to_string(std::min<int64_t>(2, o_.steps)),
      "--final-state",  StateFile(o_, "a-final.safetensors").string()};
  if (o_.kill_during_save) {
    a_args.insert(a_args.end(), {"--state-at", std::to_string(StepToRestore(o_)),
                                 StateAtRestoredStepFile(o_).string()});
  }
  if (o_.negative_control == NegativeControl::kFlipBit)
    a_args.insert(a_args.end(), FlipBitArgs().begin(), FlipBitArgs().end());
  EngineProcess a_process = Launch("a-uninterrupted", a_args);
  // B loads its libraries while A trains (waiting at its gate); it is ended
  // unreleased when A decides there is no B.
  std::optional<EngineProcess> b_process;
  if (!o_.step_only) b_process = Launch("b-preempted", SavingArgs(), /*gated=*/true);
  runs.a = Finish(std::move(a_process));
  runs.a_s = runs.a.seconds;
  runs.decided_by_a = DecidedByA({o_, project_, python_}, runs.a);
  if (!runs.decided_by_a) RunResume(std::move(*b_process), runs);
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
  if (SavingRunIsReference()) {
    RunResume(Launch("b-preempted", SavingArgs(), /*gated=*/false, /*digest_state_later=*/true),
              runs);
  } else {
    RunBehindReference(runs);
  }
  runs.telemetry = telemetry.Finish(runs.a.result.said.device.value_or(""));
  return runs;
}

// A Python engine runs in the work directory: every path it is given is absolute.
RoundtripOptions WithAbsolutePaths(const RoundtripOptions& options) {
  RoundtripOptions absolute = options;
  absolute.work_dir = fs::absolute(options.work_dir);
  absolute.checkpoint_root = fs::absolute(options.checkpoint_root);
  return absolute;
}

// The states held at once: B's being digested while C writes its own; with --kill-during-save
// also A's at the restored step and C's right after its restore, kept until judged.
int StatesHeldAtOnce(const RoundtripOptions& o) {
  return o.kill_during_save ? 4 : 2;
}

}  // namespace

std::vector<CheckResult> RunRoundtrip(const RoundtripOptions& options, const Project& project) {
  RoundtripOptions absolute = WithAbsolutePaths(options);  // the judge reads them too
  // Kept until the judging below has read the states it diffs; removed at its end.
  const StateDirectory states =
      StateDirectory::Choose(absolute.work_dir, absolute.state_dir, kMemoryStateRoot,
                             static_cast<uint64_t>(StateBytes(project.config)),
                             StatesHeldAtOnce(absolute), absolute.ranks_on_host);
  absolute.state_dir = fs::absolute(states.path());
  RoundtripRuns runs = RoundtripRunner(absolute, project).Run();
  runs.states_in = states.where();
  runs.states_not_in_memory = states.why_not_memory();
  return JudgeRoundtrip({absolute, project, runs.python}, runs);
}

}  // namespace trainlock::validate
