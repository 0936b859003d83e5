// The validator's top level: project, checks, report; see validate.h. Torch-free: the
// LibTorch work happens in the worker processes.
#include "validate.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <thread>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/file_io.h"
#include "base/progress.h"
#include "base/rank_env.h"
#include "base/sha256.h"
#include "base/version.h"
#include "base/version_info.h"
#include "checks/smoke_command.h"
#include "collectives.h"
#include "compat/catalog.h"
#include "compat/gpu_binary.h"
#include "launch.h"
#include "node_checks.h"
#include "nvml_probe.h"
#include "ops_check.h"
#include "project/artifact_paths.h"
#include "project/check_ids.h"
#include "project/project.h"
#include "rank_merge.h"
#include "rank_store.h"
#include "report/report.h"
#include "report/report_signing.h"
#include "subprocess.h"
#include "worker.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

CheckResult Skip(const std::string& id, std::string why, std::string remedy = {}) {
  return {id, CheckStatus::kSkip, 0, std::move(why), std::move(remedy), nlohmann::json::object()};
}

nlohmann::json HostInfo() {
  nlohmann::json host;
  host["hostname"] = HostName();
  struct utsname u {};
  if (::uname(&u) == 0) host["kernel"] = std::string(u.sysname) + " " + u.release;
  host["cpus"] = std::thread::hardware_concurrency();
  host["memory_bytes"] = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  std::ifstream os("/etc/os-release");
  for (std::string line; std::getline(os, line);) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      std::string v = line.substr(12);
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
      host["os"] = v;
    }
  }
  return host;
}

// data.model / data.dataset: every pinned file present with its size and SHA-256.
CheckResult VerifyArtifact(const Project& project, const std::optional<ArtifactSource>& artifact,
                           const std::string& kind) {
  const std::string id = "data." + kind;
  if (!artifact || artifact->files.empty()) {
    return Skip(id,
                kind == "model"
                    ? "the lock pins no model files: seeded initialisation of the config's shape"
                    : "the lock pins no dataset files: seeded synthetic token stream");
  }
  auto start = std::chrono::steady_clock::now();
  fs::path dir = ArtifactDir(project.dir, *artifact, kind);
  CheckResult r{id, CheckStatus::kPass,
                0,  "",
                "", {{"dir", dir.string()}, {"files", artifact->files.size()}}};
  uint64_t total = 0;
  for (const PinnedFile& f : artifact->files) {
    fs::path path = dir / f.path;
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      r.status = CheckStatus::kFail;
      r.summary = path.string() + ": missing";
      r.remedy = "run `trainlock fetch` to download the pinned files";
      break;
    }
    uint64_t size = 0;
    std::string sha = Sha256FileHex(path, &size);
    if (size != f.size || sha != f.sha256) {
      r.status = CheckStatus::kFail;
      r.summary = path.string() + ": " +
                  (size != f.size ? "size " + std::to_string(size) + " but the lock pins " +
                                        std::to_string(f.size)
                                  : "sha256 " + sha.substr(0, 16) + "... but the lock pins " +
                                        f.sha256.substr(0, 16) + "...");
      r.remedy =
          "the file is not the pinned revision: re-fetch it, or re-lock if the change is intended";
      break;
    }
    total += size;
  }
  r.metrics["bytes"] = total;
  r.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (r.status == CheckStatus::kPass) {
    r.summary = std::to_string(artifact->files.size()) + " pinned files verified (" +
                std::to_string(total) + " bytes)";
  }
  return r;
}

// The node worker's per-device launch and throughput, and the GPU code of the CUDA
// libraries this process loaded and of the custom-op libraries that carry CUDA code.
DeviceRuns MeasureDevices(const fs::path& work, int timeout_s,
                          const std::vector<fs::path>& custom_op_libraries) {
  DeviceRuns runs;
  fs::path result = work / "node.json";
  Child child({SelfExecutable().string(), "worker", "--role", "node", "--result", result.string()},
              work / "node.stderr");
  child.Wait(std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s));
  std::ifstream in(result);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_object() && j.contains("devices")) runs.devices = j["devices"];
  for (const std::string& lib : LoadedTorchCudaLibraries()) {
    try {
      runs.libraries.emplace_back(lib, InspectGpuBinary(lib));
    } catch (const std::exception&) {
      // An unreadable library shows up as missing code in env.arch.
    }
  }
  for (const fs::path& lib : custom_op_libraries) {
    try {
      GpuBinaryInfo info = InspectGpuBinary(lib);
      if (!info.sass.empty() || !info.ptx.empty()) runs.libraries.emplace_back(lib.string(), info);
    } catch (const std::exception&) {
      // Missing or unreadable: ops.custom names it.
    }
  }
  return runs;
}

std::vector<CheckResult> EnvChecks(const Spec& lock, NodeProbe node, const DeviceRuns& runs,
                                   nlohmann::json* devices) {
  if (BuiltTorchFlavour() == "cpu") {
    // Nothing to probe, but torch is still compared with the lock by the same env.versions.
    node.nvml_loaded = false;
    node.unavailable_reason =
        "CPU build of the validator: no GPU driver, runtime or device to probe";
  }
  BuildInfo build{BuiltTorchFlavour(), BuiltTorchVersion(), BuiltCudaRuntimeVersion(),
                  LoadedNcclVersion()};
  return NodeChecks(lock, node, build, Catalog::Embedded(), runs, devices);
}

// "PASS ", "FAIL ", "skip ", "ERROR": the status name, loud where a person must look.
std::string StatusWord(CheckStatus s) {
  std::string word = CheckStatusName(s);
  if (s != CheckStatus::kSkip) {
    for (char& c : word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  word.resize(5, ' ');
  return word;
}

void PrintSummary(const Report& report, const ValidateOptions& o, const std::string& lock_sha,
                  const std::optional<RankEnv>& rank) {
  std::cout << "trainlock-validate " << kTrainlockVersion << " (torch " << report.torch_version
            << ", " << report.build << ") " << o.project.string() << " lock "
            << lock_sha.substr(0, 12);
  if (rank)
    std::cout << " rank " << rank->rank << "/" << rank->world_size << " (" << rank->launcher << ")";
  std::cout << "\n";
  int counts[4] = {};
  for (const CheckResult& c : report.checks) {
    ++counts[static_cast<int>(c.status)];
    char line[64];
    std::snprintf(line, sizeof line, "  %s %-16s %7.2fs  ", StatusWord(c.status).c_str(),
                  c.id.c_str(), c.duration_s);
    std::cout << line << c.summary << "\n";
    if (c.status == CheckStatus::kFail || c.status == CheckStatus::kError) {
      if (!c.remedy.empty()) std::cout << "         remedy: " << c.remedy << "\n";
    }
  }
  std::cout << "verdict: " << report.Verdict() << " (" << counts[0] << " passed, " << counts[1]
            << " failed, " << counts[3] << " errors, " << counts[2] << " skipped) in "
            << static_cast<int>(report.duration_s + 0.5) << " s -> "
            << (rank && rank->rank != 0 ? RankReportPath(o.out.string(), rank->rank)
                                        : o.out.string())
            << "\n";
}

// --work-dir, or a fresh temporary directory. Ranks of one node get a directory each under
// --work-dir ("rank-N"): their round trips must not share worker files.
fs::path MakeWorkDir(const ValidateOptions& o, const std::optional<RankEnv>& rank) {
  if (!o.work_dir.empty()) {
    fs::path dir = o.work_dir;
    if (rank && rank->world_size > 1) dir /= "rank-" + std::to_string(rank->rank);
    fs::create_directories(dir);
    return dir;
  }
  std::string pattern = (fs::temp_directory_path() / "trainlock-validate-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error("cannot create a work directory in " +
                             fs::temp_directory_path().string());
  return pattern;
}

}  // namespace

namespace {

// False when --only names checks and none of `ids` is among them: that work is not run.
bool Selected(const ValidateOptions& o, std::initializer_list<std::string_view> ids) {
  if (o.only.empty()) return true;
  for (std::string_view id : ids) {
    if (std::find(o.only.begin(), o.only.end(), id) != o.only.end()) return true;
  }
  return false;
}

// What rank 0 (or the only process) measured on the node, for the checks after the collectives.
struct NodeRun {
  fs::path checkpoint_root;
  DeviceRuns runs;
};

fs::path CheckpointRoot(const ValidateOptions& o, const Project& project, const fs::path& work) {
  const Spec& lock = *project.lock;
  fs::path root = o.checkpoint_dir.empty() ? (lock.validate.checkpoint_dir.empty()
                                                  ? work / "checkpoints"
                                                  : fs::path(lock.validate.checkpoint_dir))
                                           : o.checkpoint_dir;
  if (root.is_relative() && o.checkpoint_dir.empty() && !lock.validate.checkpoint_dir.empty())
    root = project.dir / root;
  // A run of its own under shared checkpoint storage, so concurrent validations never mix.
  if (root != work / "checkpoints") root /= "trainlock-validate-" + std::to_string(::getpid());
  return root;
}

// train.step, train.roundtrip, train.eval and ckpt.portable on `device`: the round trip.
std::vector<CheckResult> RunTraining(const ValidateOptions& o, const Project& project,
                                     const std::string& device, const fs::path& work,
                                     const fs::path& checkpoint_root, Progress& progress) {
  const Spec& lock = *project.lock;
  if (!Selected(o, {"train.step", "train.roundtrip", "train.eval", "ckpt.portable"})) {
    std::vector<CheckResult> skipped;
    for (const char* id : {"train.step", "train.roundtrip", "train.eval", "ckpt.portable"})
      skipped.push_back(Skip(id, "not selected (--only)"));
    return skipped;
  }
  RoundtripOptions r;
  r.project = fs::absolute(o.project);
  r.work_dir = work;
  r.checkpoint_root = checkpoint_root;
  r.steps = lock.validate.steps;
  r.checkpoint_at = lock.validate.checkpoint_at;
  r.keep_last = lock.validate.keep_last;
  r.loss_tolerance = lock.validate.loss_tolerance;
  r.eval_tolerance = lock.validate.eval_tolerance;
  r.device = device;
  r.threads = o.threads;
  r.timeout_s = o.timeout_s;
  r.negative_control = o.negative_control;
  progress.Begin("train.step, train.roundtrip on " + device +
                 ": train -> checkpoint -> SIGKILL -> restore -> resume");
  std::vector<CheckResult> checks = RunRoundtrip(r);
  progress.End();
  return checks;
}

// env.*, data.*, ops.custom and the round trip on `train_device`: the checks of one node.
// `measured` runs once the devices' throughput is measured (the other ranks wait for it
// before they load their GPUs).
NodeRun RunNodeChecks(const ValidateOptions& o, const Project& project, const NodeProbe& node,
                      const fs::path& work, const std::string& train_device,
                      const std::function<void()>& measured, Progress& progress, Report& report) {
  const Spec& lock = *project.lock;
  NodeRun run;
  if (report.build != "cpu" && node.nvml_loaded &&
      Selected(o, {"env.arch", "perf.matmul", "perf.hbm"})) {
    std::vector<fs::path> op_libraries;
    for (const CustomOpLibrary& lib : lock.custom_ops) {
      op_libraries.push_back(fs::path(lib.library).is_absolute() ? fs::path(lib.library)
                                                                 : project.dir / lib.library);
    }
    progress.Begin("env.arch, perf.*: measuring each device");
    run.runs = MeasureDevices(work, o.timeout_s, op_libraries);
    progress.End();
  }
  measured();
  run.checkpoint_root = CheckpointRoot(o, project, work);
  for (CheckResult& c : EnvChecks(lock, node, run.runs, &report.devices))
    report.checks.push_back(std::move(c));
  report.checks.push_back(VerifyArtifact(project, lock.model, "model"));
  report.checks.push_back(VerifyArtifact(project, lock.dataset, "dataset"));
  if (lock.custom_ops.empty()) {
    report.checks.push_back(Skip("ops.custom", "the lock declares no custom ops"));
  } else if (!Selected(o, {"ops.custom"})) {
    report.checks.push_back(Skip("ops.custom", "not selected (--only)"));
  } else {
    progress.Begin("ops.custom: loading and smoke-testing the custom ops");
    report.checks.push_back(
        RunOpsCheck({fs::absolute(o.project), {}, work, o.device, o.timeout_s}));
    progress.End();
  }
  for (CheckResult& c : RunTraining(o, project, train_device, work, run.checkpoint_root, progress))
    report.checks.push_back(std::move(c));
  return run;
}

// perf.* from the device measurements, and the project's own smoke command.
void RunTailChecks(const ValidateOptions& o, const Project& project, const NodeProbe& node,
                   const NodeRun& run, Progress& progress, Report& report) {
  const Spec& lock = *project.lock;
  const bool gpu_build = report.build != "cpu";
  if (gpu_build && node.nvml_loaded) {
    for (CheckResult& c : PerfChecks(node, run.runs, Catalog::Embedded()))
      report.checks.push_back(std::move(c));
  } else {
    const std::string why =
        gpu_build ? node.unavailable_reason : "CPU build: no accelerator to measure";
    report.checks.push_back(Skip("perf.matmul", why));
    report.checks.push_back(Skip("perf.hbm", why));
  }
  if (lock.ext_command && Selected(o, {"ext.command"})) {
    progress.Begin("ext.command: the project's smoke command");
    SmokeRun smoke = RunSmokeCommand(*lock.ext_command, fs::absolute(project.dir));
    report.checks.push_back(SmokeCommandCheck(*lock.ext_command, smoke));
    progress.End();
  } else {
    report.checks.push_back(Skip("ext.command", "the lock declares no smoke command"));
  }
}

size_t CheckOrder(const std::string& id) {
  for (size_t i = 0; i < kCheckIds.size(); ++i) {
    if (kCheckIds[i] == id) return i;
  }
  return kCheckIds.size();
}

// The options every rank needs to join comm.allreduce and comm.ddp.
CommOptions CommOptionsFor(const RankEnv& rank, const ValidateOptions& o, const NodeProbe& node) {
  CommOptions c;
  c.rank = rank;
  c.device = CommDevice(o.device, rank.local_rank);
  c.join_timeout = std::chrono::seconds(o.join_timeout_s);
  c.collective_timeout = std::chrono::seconds(o.collective_timeout_s);
  const bool cuda = c.device != "cpu";
  c.max_bytes = (o.comm_max_mib > 0 ? o.comm_max_mib : (cuda ? 1024 : 16)) * (int64_t{1} << 20);
  if (const char* fault = std::getenv("TRAINLOCK_FAULT_KILL_RANK"); fault && *fault)
    c.fault_kill_rank = std::atoi(fault);
  // Thresholds describe one node's interconnect: only when every rank is on this node.
  const char* local_world = std::getenv("LOCAL_WORLD_SIZE");
  const bool one_node =
      rank.launcher == "standalone" || (local_world && std::atoi(local_world) == rank.world_size);
  if (cuda && !node.gpus.empty()) {
    const Catalog catalog = Catalog::Embedded();
    const auto& gpu = node.gpus[static_cast<size_t>(rank.local_rank) % node.gpus.size()];
    if (const GpuModel* model = catalog.FindGpu(gpu.name)) {
      c.accelerator = model->name;
      if (one_node) {
        c.busbw_threshold_gbps = AllReduceBusbwThreshold(*model, rank.world_size);
        c.threshold_source = "lockfiles/compat/gpus.toml interconnect-gbps " +
                             std::to_string(static_cast<int>(model->interconnect_gbps)) +
                             " GB/s x " + (rank.world_size == 8 ? "0.8" : "0.5");
      }
    }
  }
  return c;
}

// A rank other than 0 leaves the node's checks to rank 0; it runs only the per-rank ones.
void SkipForNonLeadRank(Report& report, int rank) {
  const std::string why = "run by rank 0 for the node; rank " + std::to_string(rank) +
                          " joins the collectives and trains on its own device";
  const auto& own = PerRankCheckIds();
  for (std::string_view id : kCheckIds) {
    if (std::find(own.begin(), own.end(), id) == own.end())
      report.checks.push_back(Skip(std::string(id), why));
  }
}

void AddCommChecks(Report& report, const std::optional<CommOutcome>& comm) {
  if (comm) {
    for (const CheckResult& c : comm->checks) report.checks.push_back(c);
  } else {
    report.checks.push_back(Skip("comm.allreduce", "single process: no collective to test",
                                 "run with --nproc N, under torchrun or under srun"));
    report.checks.push_back(Skip("comm.ddp", "single process: no collective to test",
                                 "run with --nproc N, under torchrun or under srun"));
  }
}

// A rank beats this often while it works; rank 0 gives up on one silent for the stall.
constexpr std::chrono::milliseconds kHeartbeatInterval{2000};
constexpr std::chrono::seconds kHeartbeatStall{20};

// Every rank sends rank 0 its entry; rank 0 waits for all of them (while their heartbeats
// go on, and at most `wait`) and returns them in rank order. Without a store (the rendezvous
// failed) the others are missing.
nlohmann::json ExchangeRankEntries(RankStore* store, const RankEnv& rank, const nlohmann::json& own,
                                   std::chrono::seconds wait) {
  nlohmann::json entries = nlohmann::json::array();
  if (!store) {
    for (int r = 0; r < rank.world_size; ++r)
      entries.push_back(r == rank.rank ? own : MissingRankEntry(r, "no rendezvous"));
    return entries;
  }
  try {
    store->Publish("result", own.dump());
    if (rank.rank != 0) {
      store->StopHeartbeat();
      return entries;
    }
    auto values = store->Collect("result", kHeartbeatStall, RankStore::Clock::now() + wait);
    for (int r = 0; r < rank.world_size; ++r) {
      const auto& value = values[static_cast<size_t>(r)];
      nlohmann::json entry =
          value.value ? nlohmann::json::parse(*value.value, nullptr, false) : nlohmann::json();
      if (!entry.is_object())
        entry = MissingRankEntry(r, value.value ? "sent an unreadable result" : value.why_missing);
      entries.push_back(entry);
    }
  } catch (const std::exception&) {
    // Rank 0's store is gone: this rank's own report stands.
  }
  return entries;
}

// --only: the checks not selected are skipped, and only selected ones stay required.
void ApplyOnly(Report& report, const std::vector<std::string>& only) {
  if (only.empty()) return;
  auto selected = [&](const std::string& id) {
    return std::find(only.begin(), only.end(), id) != only.end();
  };
  for (CheckResult& c : report.checks) {
    if (!selected(c.id) && c.status != CheckStatus::kSkip) c = Skip(c.id, "not selected (--only)");
  }
  std::vector<std::string> required;
  for (const std::string& id : report.required) {
    if (selected(id)) required.push_back(id);
  }
  report.required = required;
}

}  // namespace

int RunValidate(const ValidateOptions& o) {
  std::optional<RankEnv> rank = DetectRankEnv([](const char* name) { return std::getenv(name); });
  if (!rank && o.nproc != 0) {
    const int n = o.nproc > 0 ? o.nproc : VisibleAcceleratorCount();
    if (n < 1) {
      throw InputError(Diagnostic{"--nproc",
                                  {},
                                  "auto: no accelerator is visible",
                                  "give the number of processes, e.g. --nproc 2"});
    }
    if (n > 1) return LaunchRanks(o.argv, n);
  }
  const bool distributed = rank && rank->world_size > 1;
  const bool lead = !rank || rank->rank == 0;
  auto start = std::chrono::steady_clock::now();
  Report report;
  report.started_at = NowRfc3339();
  Project project = LoadProject(o.project, ManifestRequirement::kOptional);
  if (!project.lock) {
    throw InputError(Diagnostic{project.lock_path,
                                {},
                                "cannot read: no such file",
                                "the validator checks a lock: run `trainlock lock` first"});
  }
  const Spec& lock = *project.lock;
  // The signing key is checked before the long run, so a bad key costs seconds, not the run.
  std::string sign_pem;
  if (!o.sign_key.empty()) {
    sign_pem = ReadInputFile(o.sign_key, o.sign_key.string());
    try {
      PrivateKeyId(sign_pem);
    } catch (const KeyError& e) {
      throw InputError(Diagnostic{
          o.sign_key.string(), {}, e.what(), "give the .key file written by `trainlock keygen`"});
    }
  }
  Progress progress = Progress::ForStderr();
  report.lock_sha256 = project.lock_sha256;
  report.validator_version = std::string(kTrainlockVersion);
  report.torch_version = BuiltTorchVersion();
  report.build = BuiltTorchFlavour();
  report.host = HostInfo();
  report.required = lead ? lock.validate.required : std::vector<std::string>{};
  if (const char* ref = std::getenv("TRAINLOCK_IMAGE_REF"); ref && *ref) {
    const char* digest = std::getenv("TRAINLOCK_IMAGE_DIGEST");
    if (digest && *digest) report.image = std::make_pair(std::string(ref), std::string(digest));
  }
  const bool gpu_build = report.build != "cpu";
  NodeProbe node;
  if (gpu_build) node = ProbeNode();

  // The collectives come first: every rank is at the rendezvous now. Then rank 0 measures
  // every device while the others wait, and each rank runs the round trip on its own GPU.
  std::unique_ptr<RankStore> store;
  std::optional<CommOutcome> comm;
  std::string train_device = o.device;
  if (distributed) {
    const CommOptions comm_options = CommOptionsFor(*rank, o, node);
    train_device = comm_options.device;
    progress.Begin("comm.allreduce, comm.ddp: " + std::to_string(rank->world_size) + " ranks");
    try {
      store = RankStore::Join(*rank, comm_options.device, comm_options.join_timeout);
      store->StartHeartbeat(kHeartbeatInterval);
      comm = RunCommChecks(comm_options, *store);
    } catch (const RankStoreError& e) {
      comm = FailedCommChecks(comm_options, e.what());
    }
    progress.End();
  }
  fs::path work = MakeWorkDir(o, rank);
  fs::path ckpt_root = work / "checkpoints";
  if (lead) {
    auto measured = [&] {
      if (store) store->Signal("devices-measured");
    };
    NodeRun run = RunNodeChecks(o, project, node, work, train_device, measured, progress, report);
    ckpt_root = run.checkpoint_root;
    AddCommChecks(report, comm);
    RunTailChecks(o, project, node, run, progress, report);
  } else {
    // Rank 0's perf.* would measure this rank's training too: wait until it is done.
    if (store) store->WaitForSignal("devices-measured", std::chrono::seconds(o.timeout_s + 60));
    ckpt_root = CheckpointRoot(o, project, work);
    SkipForNonLeadRank(report, rank->rank);
    AddCommChecks(report, comm);
    for (CheckResult& c : RunTraining(o, project, train_device, work, ckpt_root, progress))
      report.checks.push_back(std::move(c));
  }
  nlohmann::json rank_entries;
  if (distributed) {
    // Rank 0 waits for a live rank's round trip at most as long as the four processes of
    // its own may take.
    const auto wait = std::chrono::seconds(4 * o.timeout_s + o.collective_timeout_s);
    rank_entries = ExchangeRankEntries(
        store.get(), *rank, RankEntry(*rank, HostName(), train_device, report.checks), wait);
    if (lead) MergeRankResults(report, rank_entries, {.gpu = train_device != "cpu"});
  }
  std::stable_sort(report.checks.begin(), report.checks.end(),
                   [](const CheckResult& x, const CheckResult& y) {
                     return CheckOrder(x.id) < CheckOrder(y.id);
                   });
  ApplyOnly(report, o.only);

  report.duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.project = project.effective().name;
  if (o.keep_work) report.work_dir = work.string();
  report.only = o.only;
  if (rank)
    report.rank = ReportRank{rank->rank, rank->world_size, rank->local_rank, rank->launcher};
  if (o.out.has_parent_path()) fs::create_directories(o.out.parent_path());
  if (distributed) {
    // Every rank's own report beside the merged one; rank 0's merged report adds the ranks.
    nlohmann::json own = report.ToJson();
    if (!sign_pem.empty()) SignReport(own, sign_pem);
    WriteFileAtomically(RankReportPath(o.out.string(), rank->rank), SignedReportText(own));
    if (lead) report.ranks = rank_entries;
  }
  nlohmann::json j = report.ToJson();
  if (lead) {
    if (!sign_pem.empty()) SignReport(j, sign_pem);
    WriteFileAtomically(o.out, SignedReportText(j));
  }
  if (o.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    PrintSummary(report, o, project.lock_sha256, rank);
  }
  if (!o.keep_work) {
    std::error_code ec;
    if (ckpt_root != work / "checkpoints") fs::remove_all(ckpt_root, ec);
    if (o.work_dir.empty()) fs::remove_all(work, ec);
  }
  return report.Verdict() == "pass" ? kExitOk : kExitVerdict;
}

}  // namespace trainlock::validate
