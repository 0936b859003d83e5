// The validator's coordinator: loads the project, runs the checks of this process in their
// phases (collectives, the node's checks or a rank's round trip, the merge of the ranks) and
// writes the report; see validate.h. Torch-free: the LibTorch work happens in the worker
// processes, and each phase lives in a file of its own (node_run, rank_phase, work_dirs,
// check_selection, validate_summary).
#include "coordinator/validate.h"

#include <chrono>
#include <cstdlib>
#include <iostream>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "base/program_path.h"
#include "base/progress.h"
#include "base/rank_env.h"
#include "base/terminal_text.h"
#include "base/time_text.h"
#include "base/version_info.h"
#include "checks/host_info.h"
#include "comm/launch.h"
#include "comm/rank_merge.h"
#include "comm/rank_phase.h"
#include "compat/lock_drift.h"
#include "coordinator/accelerator_presence.h"
#include "coordinator/engine_probe.h"
#include "coordinator/engine_requests.h"
#include "coordinator/framework_import.h"
#include "coordinator/image_binding.h"
#include "coordinator/image_python.h"
#include "coordinator/node_run.h"
#include "coordinator/preflight.h"
#include "coordinator/validate_summary.h"
#include "coordinator/work_dirs.h"
#include "image/in_image_paths.h"
#include "lock/lock_rederive.h"
#include "probes/nvml_probe.h"
#include "project/artifact_paths.h"
#include "project/check_ids.h"
#include "project/project.h"
#include "project/round_trip_engines.h"
#include "report/check_metrics.h"
#include "report/report.h"
#include "report/report_signing.h"
#include "support/check_selection.h"
#include "support/torch_build.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

// The project with its lock; a missing lock is bad input: the validator checks a lock.
Project LoadLockedProject(const ValidateOptions& o) {
  Project project = LoadProject(o.project, ManifestRequirement::kOptional);
  RequireLock(project, "cannot read: no such file",
              "the validator checks a lock: run `trainlock lock` first");
  return project;
}

// A validator built for one kind of device refuses a lock or a --device it cannot serve at
// once, instead of training a GPU-sized model on the CPU until the kernel kills it.
void RefuseWrongBuild(const ValidateOptions& o, const Project& project, const std::string& build) {
  const Lockfile& lock = *project.lock;
  if (build == "cpu" && o.device != "auto" && o.device != "cpu") {
    throw InputError(Diagnostic{"--device",
                                {},
                                "'" + o.device + "' on a CPU build of the validator (LibTorch " +
                                    BuiltTorchVersion() + ", no GPU support)",
                                "run the validator built for the GPU target (the image from "
                                "`trainlock image build`), or give --device cpu"});
  }
  // The report names the target whose image carries this build (`target`). A GPU build may
  // still validate a lock without its target (a cpu project on a GPU host: the validator tests
  // on the GPU machine do), and `gate` refuses that report for the lock's targets; a CPU build
  // cannot serve a GPU target at all, so it refuses here.
  if (build != "cpu" || lock.targets.contains(build)) return;
  std::string targets;
  for (const auto& [name, target] : lock.targets) targets += (targets.empty() ? "" : ", ") + name;
  throw InputError(Diagnostic{
      project.lock_path,
      {},
      "this validator is a " + (build == "cpu" ? std::string("CPU") : build) +
          " build, but the lock's targets are " +
          (targets.empty() ? std::string("none") : targets) + " (no " + build + " target)",
      "run the validator inside the image built for the lock's target (`trainlock validate DIR "
      "--image REF`), or add [targets." +
          build + "] to trainlock.toml and re-lock"});
}

// Whether the training workers will train on the CPU (worker.cc's PickDevice): a CPU build,
// --device cpu, or "auto" with no accelerator to use.
bool TrainsOnCpu(const ValidateOptions& o, const std::optional<RankEnv>& rank) {
  if (BuiltTorchFlavour() == "cpu" || o.device == "cpu") return true;
  return !rank && o.device == "auto" && VisibleAcceleratorCount() == 0;
}

// The lock must describe the files the run trains from: a stale lock or a changed config is
// refused before any training (exit 2), unless --allow-drift, which records it in the report.
std::vector<Finding> CheckDrift(const ValidateOptions& o, const Project& project) {
  std::vector<Finding> drift = LockDrift(project);
  if (drift.empty() || o.allow_drift) return drift;
  Diagnostics diags;
  for (const Finding& f : drift) {
    diags.Error(f.path, f.pos, f.id + ": " + f.message,
                f.remedy + "; or give --allow-drift to validate anyway (recorded in the report)");
  }
  throw InputError(diags);
}

// A lock edited by hand is refused before any work, with or without --allow-drift (which is
// for a manifest or config changed since locking, not a lock changed since): the lock is
// re-derived offline from the manifest as `check` does (lock/lock_rederive.h), with the pins
// this run verifies where it uses them taken from the lock. Without the manifest there is
// nothing to re-derive from: refused too, never validated unchecked.
void RefuseEditedLock(const Project& project) {
  if (!project.manifest) {
    throw InputError(Diagnostic{
        project.manifest_path,
        {},
        "cannot read: no such file: the lock cannot be re-derived without the manifest it was "
        "made from, so a hand-edited lock could not be told from trainlock's",
        "validate the project directory that holds trainlock.toml beside trainlock.lock (an "
        "image built by `trainlock image build` carries both in " +
            std::string(kProjectInImage) + ")"});
  }
  const std::vector<Finding> edited = RederivedLockFindings(project, FilePins::kVerifiedAtUse);
  if (edited.empty()) return;
  Diagnostics diags;
  for (const Finding& f : edited) {
    diags.Error(f.path, f.pos, f.id + ": " + f.message,
                f.remedy + "; --allow-drift does not cover an edited lock");
  }
  throw InputError(diags);
}

// The signing key's PEM, checked before the long run so a bad key costs seconds, not the run.
std::string ReadSigningKey(const fs::path& key) {
  if (key.empty()) return "";
  std::string pem = ReadInputFile(key, key.string());
  try {
    PrivateKeyId(pem);
  } catch (const KeyError& e) {
    throw InputError(
        Diagnostic{key.string(), {}, e.what(), "give the .key file written by `trainlock keygen`"});
  }
  return pem;
}

const char* NegativeControlName(NegativeControl control) {
  switch (control) {
    case NegativeControl::kSkipRngRestore:
      return "rng";
    case NegativeControl::kSkipDataRestore:
      return "data";
    case NegativeControl::kCorruptCheckpoint:
      return "corrupt";
    case NegativeControl::kTornSnapshot:
      return "torn-snapshot";
    case NegativeControl::kFlipBit:
      return "bitflip";
    case NegativeControl::kNone:
      break;
  }
  return "";
}

// The report's facts before any check runs: what the run trains from, and how; `image` from
// BindImage.
Report NewReport(const ValidateOptions& o, const Project& project,
                 const std::vector<Finding>& drift, bool lead, const ImageBinding& image) {
  Report report;
  report.started_at = NowRfc3339();
  report.lock_sha256 = project.lock->lock_build_sha256;
  report.config_sha256 = project.config_sha256;
  if (project.manifest) report.manifest_sha256 = project.manifest_sha256;
  for (const Finding& f : drift) report.drift.push_back({f.id, f.message});
  report.negative_control = NegativeControlName(o.negative_control);
  report.validator_version = std::string(kTrainlockVersion);
  report.torch_version = BuiltTorchVersion();
  report.build = BuiltTorchFlavour();
  report.target = report.build;  // the target whose image carries this build (RefuseWrongBuild)
  report.host = HostInfo();
  report.required = lead ? project.lock->validate.required : std::vector<std::string>{};
  report.image = image.image;
  report.image_digest_source = image.digest_source;
  return report;
}

// What this process knows of the other ranks once the collectives ran.
struct Distribution {
  std::unique_ptr<RankStore> store;
  std::optional<CommOutcome> comm;
  std::string train_device;
};

// The collectives come first: every rank is at the rendezvous now.
Distribution JoinRanks(const ValidateOptions& o, const std::optional<RankEnv>& rank,
                       const NodeProbe& node, Progress& progress) {
  Distribution d;
  d.train_device = o.device;
  if (!rank || rank->world_size <= 1) return d;
  const CommOptions comm_options = CommOptionsFor(*rank, o, node);
  d.train_device = comm_options.device;
  progress.Begin("comm.allreduce, comm.ddp: " + std::to_string(rank->world_size) + " ranks");
  try {
    d.store = RankStore::Join(*rank, comm_options.device, comm_options.join_timeout);
    d.store->StartHeartbeat(kHeartbeatInterval);
    if (Selected(o.only, {"comm.allreduce", "comm.ddp"})) {
      d.comm = RunCommChecks(comm_options, *d.store);
    } else {
      d.comm = CommOutcome{{Skip("comm.allreduce", "not selected (--only)"),
                            Skip("comm.ddp", "not selected (--only)")}};
    }
  } catch (const RankStoreError& e) {
    d.comm = FailedCommChecks(comm_options, e.what());
  }
  progress.End();
  return d;
}

// Each node's local rank 0 measures its node's devices (env.*, data.*, ops.custom, perf.*)
// while that node's other ranks wait, then every rank runs the round trip on its own GPU.
// Returns the checkpoint root to clean up.
// `python`: the image's Python as verified before any Python ran (image_python.h);
// `framework_import`: env.packages found the image's framework does not import (preflight.h),
// so no rank runs the round trip.
fs::path RunChecks(const ValidateOptions& o, const Project& project, const ImagePythonFiles& python,
                   const NodeProbe& node, const std::optional<RankEnv>& rank, const fs::path& work,
                   Distribution& d, const std::optional<CheckResult>& framework_import,
                   Progress& progress, Report& report) {
  const std::string measured_key = "devices-measured-" + std::to_string(rank ? rank->node_rank : 0);
  if (!rank || rank->local_rank == 0) {
    auto measured = [&] {
      if (d.store) d.store->Signal(measured_key);
    };
    NodeRun run = RunNodeChecks(o, project, python, node, work, d.train_device, measured,
                                framework_import, progress, report);
    AddCommChecks(report, d.comm);
    AnnounceChecks(progress, report);
    RunTailChecks(o, project, run, progress, report, /*job_checks=*/!rank || rank->rank == 0);
    if (rank && rank->rank != 0) SkipJobChecks(report, rank->rank);
    return run.checkpoint_root;
  }
  // The node lead's perf.* would measure this rank's training too: wait until it is done.
  if (d.store) d.store->WaitForSignal(measured_key, std::chrono::seconds(o.timeout_s + 60));
  const fs::path checkpoint_root = CheckpointRoot(o, project, work);
  SkipForNonLeadRank(report, rank->rank);
  AddCommChecks(report, d.comm);
  for (CheckResult& c : framework_import ? RoundTripNotRun(*framework_import, o.only)
                                         : RunTraining(o, project, python, d.train_device, work,
                                                       checkpoint_root, progress))
    report.checks.push_back(std::move(c));
  AnnounceChecks(progress, report);
  return checkpoint_root;
}

// Every rank's entry reaches rank 0, which merges them into its report; "" otherwise.
nlohmann::json ExchangeAndMerge(const ValidateOptions& o, const std::optional<RankEnv>& rank,
                                Distribution& d, Report& report) {
  if (!rank || rank->world_size <= 1) return nullptr;
  // Rank 0 waits for a live rank's round trip at most as long as the four processes of its
  // own may take.
  const auto wait = std::chrono::seconds(4 * o.timeout_s + o.collective_timeout_s);
  nlohmann::json entries = ExchangeRankEntries(
      d.store.get(), *rank,
      RankEntry(*rank, HostName(), d.train_device, report.checks, report.devices), wait);
  if (rank->rank == 0) MergeRankResults(report, entries, {.gpu = d.train_device != "cpu"});
  return entries;
}

// Writes the report (signed with `sign_pem` when given): every rank of a distributed run its
// own beside the merged one, which only rank 0 writes with the ranks' entries.
nlohmann::json WriteReports(const ValidateOptions& o, const Project& project,
                            const std::optional<RankEnv>& rank, const fs::path& work,
                            const nlohmann::json& rank_entries, const std::string& sign_pem,
                            Report& report) {
  report.project = project.effective().name;
  // The work directory stays with --keep-work, and always under --work-dir (CleanUp).
  if ((o.keep_work || !o.work_dir.empty()) && !work.empty()) report.work_dir = work.string();
  report.only = o.only;
  if (rank)
    report.rank = ReportRank{rank->rank, rank->world_size, rank->local_rank, rank->launcher};
  if (o.out.has_parent_path()) fs::create_directories(o.out.parent_path());
  const bool lead = !rank || rank->rank == 0;
  if (rank && rank->world_size > 1) {
    Report part = report;
    part.partial = true;  // a rank's own report never clears the gate
    nlohmann::json own = part.ToJson();
    if (!sign_pem.empty()) SignReport(own, sign_pem);
    WriteFileAtomically(RankReportPath(o.out.string(), rank->rank), SignedReportText(own));
    if (lead) report.ranks = rank_entries;
  }
  nlohmann::json j = report.ToJson();
  if (lead) {
    if (!sign_pem.empty()) SignReport(j, sign_pem);
    WriteFileAtomically(o.out, SignedReportText(j));
  }
  return j;
}

// True when a check's summary or remedy points the reader at `work` (a worker that died).
bool ReportNames(const Report& report, const fs::path& work) {
  const std::string dir = work.string();
  for (const CheckResult& c : report.checks) {
    if (c.summary.find(dir) != std::string::npos || c.remedy.find(dir) != std::string::npos)
      return true;
  }
  return false;
}

// Removes the work and checkpoint directories this run made, unless --keep-work. A work
// directory the report names (a worker died: its output is there) stays, without checkpoints.
void CleanUp(const ValidateOptions& o, const fs::path& work, const fs::path& checkpoint_root,
             const Report& report) {
  if (o.keep_work) return;
  std::error_code ec;
  fs::remove_all(checkpoint_root, ec);
  if (!o.work_dir.empty()) return;
  if (ReportNames(report, work)) {
    std::cerr << "trainlock-validate: the workers' output stays in " << TerminalLine(work.string())
              << "\n";
  } else {
    fs::remove_all(work, ec);
  }
}

// --nproc without a launcher: the number of ranks to start, 0 when this process validates.
int RanksToLaunch(const ValidateOptions& o, const std::optional<RankEnv>& rank) {
  if (rank || o.nproc == 0) return 0;
  const int n = o.nproc > 0 ? o.nproc : VisibleAcceleratorCount();
  if (n < 1) {
    throw InputError(Diagnostic{"--nproc",
                                {},
                                "auto: no accelerator is visible",
                                "give the number of processes, e.g. --nproc 2"});
  }
  return n > 1 ? n : 0;
}

// An engine that refused this environment while it ran (train.step's cannot_run): the node
// was not judged. "" when none did.
std::string EnvironmentErrorOf(const Report& report) {
  for (const CheckResult& c : report.checks) {
    if (c.id != "train.step" || c.status != CheckStatus::kError) continue;
    if (Text why = ReadMetrics<TrainStepMetrics>(c.metrics).cannot_run) return *why;
  }
  return "";
}

// The lock's Python engine, probed before any work when the run trains or compares its torch
// (env.versions), under the image's recorded interpreter and path inside an image; nullopt for
// the native engine, when neither is selected, and when the image's Python files are not as
// recorded (no Python runs on them: env.packages says why).
std::optional<EngineProbe> ProbeLockEngine(const ValidateOptions& o, const Project& project,
                                           const ImagePythonFiles& python, bool cpu) {
  const RoundTripEngine* engine = FindRoundTripEngine(project.lock->validate.engine);
  if (!engine || !engine->python || !python.MayRunPython() ||
      !Selected(o.only,
                {"train.step", "train.roundtrip", "train.eval", "ckpt.portable", "env.versions"}))
    return std::nullopt;
  return ProbeEngine(std::string(engine->name), python.in_image ? python.interpreter : o.python,
                     !cpu, o.timeout_s, python.sys_path);
}

// Inside an image, every file its Python can load, against the image's record, before any
// Python starts (image_python.h).
ImagePythonFiles VerifyImagePythonFiles(const ValidateOptions& o, const ImageBinding& image,
                                        Progress& progress) {
  if (!image.in_image) return VerifyImagePython(false, kPythonFilesInImage, o.python, {});
  progress.Begin("env.packages: the image's Python files against its record");
  const Deadline deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.timeout_s);
  ImagePythonFiles python = VerifyImagePython(true, kPythonFilesInImage, o.python, deadline);
  progress.End();
  return python;
}

// The validation stopped before any work (preflight.h): the report carries what was judged first
// and every other check as a skip saying why. A check judged first that failed is the node's
// verdict (exit 1); otherwise the node was not judged, an environment failure (exit 3).
int ReportStopped(const ValidateOptions& o, const Project& project,
                  const std::optional<RankEnv>& rank, const Preflight& preflight,
                  const std::string& sign_pem, std::chrono::steady_clock::time_point start,
                  Report& report) {
  ReportStoppedChecks(preflight, report);
  SortChecks(report);
  ApplyOnly(report, o.only);
  report.golden = GoldenOfReport(report);
  report.duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const bool distributed = rank && rank->world_size > 1;
  const nlohmann::json j =
      WriteReports(o, project, rank, fs::path(),
                   distributed ? nlohmann::json::array() : nlohmann::json(), sign_pem, report);
  if (o.json) {
    std::cout << DumpJsonOutput(j, 2) << "\n";
  } else {
    PrintSummary(report, o, project.lock->lock_build_sha256, rank);
  }
  if (report.environment_error.empty()) return kExitVerdict;
  // The probe's reason quotes the interpreter (untrusted): masked and escaped as the summary is.
  std::cerr << "trainlock-validate: error: " << TerminalLine(report.environment_error) << "\n";
  return kExitEnvironment;
}

}  // namespace

int RunValidate(const ValidateOptions& o) {
  std::optional<RankEnv> rank = DetectRankEnv([](const char* name) { return std::getenv(name); });
  if (const int n = RanksToLaunch(o, rank)) return LaunchRanks(o.argv, n);
  const bool lead = !rank || rank->rank == 0;
  const auto start = std::chrono::steady_clock::now();
  const Project project = LoadLockedProject(o);
  IgnoreTrainlockDir(o.out);  // a report path through a planted link is refused before any work
  RefuseWrongBuild(o, project, BuiltTorchFlavour());
  const std::vector<Finding> drift = CheckDrift(o, project);
  RefuseEditedLock(project);
  const std::string no_gpu =
      MissingAccelerator(BuiltTorchFlavour(), o.device, *project.lock, VisibleAcceleratorCount());
  if (no_gpu.empty()) RefuseUnsupportedEngineRun(project, o, TrainsOnCpu(o, rank));
  const CheckpointStorage storage = ChooseCheckpointStorage(o, project);
  RequireCheckpointStorage(storage, project);
  RequireStateDirectory(o.state_dir);
  const std::string sign_pem = ReadSigningKey(o.sign_key);
  Progress progress(ProgressStyleFor(o, rank), ProgressSource(rank));
  if (!o.json) progress.LeaveChecksToSummary();  // PrintSummary lists every check
  const ImageBinding image =
      BindImage(kProjectInImage, project, RunningExecutable(), std::getenv("TRAINLOCK_IMAGE_REF"),
                std::getenv("TRAINLOCK_IMAGE_DIGEST"));
  Report report = NewReport(o, project, drift, lead, image);
  const ImagePythonFiles python = VerifyImagePythonFiles(o, image, progress);
  if (!python.MayRunPython()) {
    // Not the image's Python (a host carrying a copy of /etc/trainlock, or a changed image): the
    // report names no image, whatever the environment claims; env.packages says why.
    report.image.reset();
    report.image_digest_source.clear();
  }
  // The driver first: NVML needs no framework, and a driver too old for the image's CUDA is
  // why CUDA sees no GPU or the engine's torch has none (preflight.h).
  NodeProbe node;
  if (report.build != "cpu") node = ProbeNode();
  std::vector<CheckResult> driver_checks = JudgeDriverFirst(*project.lock, node, o.only);
  std::optional<EngineProbe> engine;
  if (no_gpu.empty()) engine = ProbeLockEngine(o, project, python, TrainsOnCpu(o, rank));
  if (engine)
    report.engine = ReportEngine{engine->engine, engine->python, engine->torch, engine->versions,
                                 python.walked && python.MayRunPython()};
  const Preflight preflight =
      DecideBeforeWork(std::move(driver_checks), no_gpu, engine, image.in_image, o.only);
  if (!preflight.stopped.empty())
    return ReportStopped(o, project, rank, preflight, sign_pem, start, report);

  Distribution d = JoinRanks(o, rank, node, progress);
  const fs::path work = MakeWorkDir(o, rank);
  report.checkpoint_dir = ReportCheckpointDir{
      (storage.source == "work-dir" ? work / "checkpoints" : storage.path).string(),
      storage.source};
  const fs::path checkpoint_root = RunChecks(o, project, python, node, rank, work, d,
                                             preflight.framework_import, progress, report);
  report.environment_error = EnvironmentErrorOf(report);
  const nlohmann::json rank_entries = ExchangeAndMerge(o, rank, d, report);
  SortChecks(report);
  ApplyOnly(report, o.only);
  report.golden = GoldenOfReport(report);
  report.duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const nlohmann::json j = WriteReports(o, project, rank, work, rank_entries, sign_pem, report);
  if (o.json) {
    std::cout << DumpJsonOutput(j, 2) << "\n";
  } else {
    PrintSummary(report, o, project.lock->lock_build_sha256, rank);
  }
  CleanUp(o, work, checkpoint_root, report);
  const std::string verdict = report.Verdict();
  if (verdict == "error") return kExitEnvironment;
  return verdict == "pass" ? kExitOk : kExitVerdict;
}

}  // namespace trainlock::validate
