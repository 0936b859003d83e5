// The checks of one node; see node_run.h. Torch-free: the devices are measured and the
// round trip runs in worker processes.
#include "coordinator/node_run.h"

#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <optional>

#include "base/json_file.h"
#include "base/program_path.h"
#include "base/rank_env.h"
#include "checks/data_checks.h"
#include "checks/python_packages.h"
#include "checks/smoke_command.h"
#include "comm/collectives.h"
#include "compat/catalog.h"
#include "compat/gpu_binary.h"
#include "coordinator/framework_import.h"
#include "coordinator/image_binding.h"
#include "coordinator/roundtrip.h"
#include "coordinator/validate_summary.h"
#include "coordinator/work_dirs.h"
#include "ops/op_library_path.h"
#include "ops/ops_check.h"
#include "probes/nvml_probe.h"
#include "probes/perf_checks.h"
#include "probes/visible_gpus.h"
#include "support/check_selection.h"
#include "support/torch_build.h"
#include "support/worker_process.h"

namespace trainlock::validate {
namespace fs = std::filesystem;

namespace {

// The GPU code of the CUDA libraries this process loaded and of the custom-op libraries that
// carry CUDA code, into runs.libraries.
void InspectLibraries(const std::vector<fs::path>& custom_op_libraries, DeviceRuns& runs) {
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
}

// The node worker's per-device launch and throughput, and the GPU code of the CUDA
// libraries this process loaded and of the custom-op libraries that carry CUDA code.
DeviceRuns MeasureDevices(const fs::path& work, int timeout_s,
                          const std::vector<fs::path>& custom_op_libraries) {
  DeviceRuns runs;
  fs::path result = work / "node.json";
  Child child(
      {RunningExecutable().string(), "worker", "--role", "node", "--result", result.string()},
      work / "node.stderr");
  // The libraries' GPU code is read here while the worker measures: CPU work beside GPU work.
  InspectLibraries(custom_op_libraries, runs);
  child.Wait(std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s));
  nlohmann::json j = TryReadJsonFile(result, nullptr).value_or(nlohmann::json());
  if (j.is_object() && j.contains("devices")) runs.devices = j["devices"];
  return runs;
}

// ops.custom: what ran beside the round trip's portable process, else a run of its own now
// (the round trip never got there), or the skip saying why it did not run.
CheckResult OpsCustom(const Lockfile& lock, const std::optional<OpsCheckOptions>& options,
                      std::future<CheckResult>& beside, Progress& progress) {
  if (lock.custom_ops.empty()) return Skip("ops.custom", "the lock declares no custom ops");
  if (!options) return Skip("ops.custom", "not selected (--only)");
  if (beside.valid()) return beside.get();
  progress.Begin("ops.custom: loading and smoke-testing the custom ops");
  CheckResult ran = RunOpsCheck(*options);
  progress.End();
  return ran;
}

// The device a worker given `device` trains on, as the progress line names it: "auto" is the
// first GPU when the build has one to use (worker.cc's PickDevice), else the CPU.
std::string ShownDevice(const std::string& device) {
  if (device != "auto") return device;
  return BuiltTorchFlavour() != "cpu" && VisibleAcceleratorCount() > 0 ? "cuda:0" : "cpu";
}

std::vector<CheckResult> EnvChecks(const Lockfile& lock, NodeProbe node, const DeviceRuns& runs,
                                   Report& report, const ValidateOptions& o) {
  if (BuiltTorchFlavour() == "cpu") {
    // Nothing to probe, but torch is still compared with the lock by the same env.versions.
    node.nvml_loaded = false;
    node.unavailable_reason =
        "CPU build of the validator: no GPU driver, runtime or device to probe";
  }
  BuildInfo build;
  build.flavour = BuiltTorchFlavour();
  build.torch = BuiltTorchVersion();
  build.cuda_runtime = BuiltCudaRuntimeVersion();
  build.nccl = LoadedNcclVersion();
  build.cudnn = LoadedCudnnVersion();
  if (report.engine) {
    build.engine_torch = report.engine->torch;
    build.engine_python = report.engine->python;
    if (const auto& v = report.engine->versions;
        v.is_object() && v.contains("cudnn") && v["cudnn"].is_string())
      build.engine_cudnn = v["cudnn"].get<std::string>();
  }
  return NodeChecks(lock, node, build, Catalog::Embedded(), runs, &report.devices, o.only);
}

}  // namespace

std::vector<CheckResult> RunTraining(const ValidateOptions& o, const Project& project,
                                     const ImagePythonFiles& python, const std::string& device,
                                     const fs::path& work, const fs::path& checkpoint_root,
                                     Progress& progress, std::function<void()> beside_portable) {
  const Lockfile& lock = *project.lock;
  const bool python_engine = lock.validate.engine != "native";
  const bool selected =
      Selected(o.only, {"train.step", "train.roundtrip", "train.eval", "ckpt.portable"});
  if (!selected || (python_engine && !python.MayRunPython())) {
    std::vector<CheckResult> skipped;
    for (const char* id : {"train.step", "train.roundtrip", "train.eval", "ckpt.portable"})
      skipped.push_back(Skip(id, !selected ? "not selected (--only)"
                                           : "not run: the image's Python is not as the image "
                                             "recorded it (env.packages), so no Python engine "
                                             "runs on it"));
    return skipped;
  }
  RoundtripOptions r;
  r.work_dir = work;
  r.checkpoint_root = checkpoint_root;
  r.state_dir = o.state_dir;
  const auto getenv = [](const char* name) { return std::getenv(name); };
  r.ranks_on_host = RanksOnThisHost(DetectRankEnv(getenv), getenv);
  r.steps = lock.validate.steps;
  r.checkpoint_at = lock.validate.checkpoint_at;
  r.keep_last = lock.validate.keep_last;
  r.loss_tolerance = lock.validate.loss_tolerance;
  r.eval_tolerance = lock.validate.eval_tolerance;
  r.device = device;
  r.threads = o.threads;
  r.timeout_s = o.timeout_s;
  r.negative_control = o.negative_control;
  r.engine = lock.validate.engine;
  r.engine_nproc = o.engine_nproc;
  r.reshard_to = o.reshard_to;
  r.kill_during_save = o.kill_during_save;
  r.kill_point = o.kill_point;
  r.steady_saves = o.steady_saves;
  r.python = python.in_image ? python.interpreter : o.python;
  r.engine_sys_path = python.sys_path;
  r.step_only = !Selected(o.only, {"train.roundtrip", "train.eval", "ckpt.portable"});
  r.only = o.only;
  const bool ops_beside = static_cast<bool>(beside_portable);
  r.beside_portable = std::move(beside_portable);
  progress.Begin("train.step, train.roundtrip on " + ShownDevice(device) +
                 ": train -> checkpoint -> SIGKILL -> restore -> resume" +
                 (ops_beside ? " (ops.custom beside the portable process)" : ""));
  std::vector<CheckResult> checks = RunRoundtrip(r, project);
  progress.End();
  return checks;
}

NodeRun RunNodeChecks(const ValidateOptions& o, const Project& project,
                      const ImagePythonFiles& python, const NodeProbe& node, const fs::path& work,
                      const std::string& train_device, const std::function<void()>& measured,
                      const std::optional<CheckResult>& framework_import, Progress& progress,
                      Report& report) {
  const Lockfile& lock = *project.lock;
  NodeRun run;
  run.node = node;
  if (report.build != "cpu" && node.nvml_loaded &&
      Selected(o.only, {"env.arch", "perf.matmul", "perf.hbm"})) {
    std::vector<fs::path> op_libraries;
    for (const CustomOpLibrary& lib : lock.custom_ops) {
      op_libraries.push_back(CustomOpLibraryPath(project, lib));
    }
    progress.Begin("env.arch, perf.*: measuring each device");
    run.runs = MeasureDevices(work, o.timeout_s, op_libraries);
    RestrictToVisibleGpus(run.node, run.runs);
    progress.End();
  }
  measured();
  run.checkpoint_root = CheckpointRoot(o, project, work);
  for (CheckResult& c : EnvChecks(lock, run.node, run.runs, report, o))
    report.checks.push_back(std::move(c));
  AnnounceChecks(progress, report);
  // The data checks read every pinned byte: they get the workers' time limit each.
  auto deadline = [&] {
    return std::chrono::steady_clock::now() + std::chrono::seconds(o.timeout_s);
  };
  report.checks.push_back(RunSelected(o.only, "data.model", [&] {
    return VerifyArtifact(project, lock.model, "model", deadline());
  }));
  report.checks.push_back(RunSelected(o.only, "data.dataset", [&] {
    return VerifyArtifact(project, lock.dataset, "dataset", deadline());
  }));
  // BindImage has checked an image record against the project, and VerifyImagePython the
  // image's Python files against its record, before any check ran.
  report.checks.push_back(RunSelected(o.only, "env.packages", [&] {
    if (framework_import) return *framework_import;  // the image's framework does not import
    return CheckInstalledPackages(lock, report.build, python, o.timeout_s);
  }));
  AnnounceChecks(progress, report);
  // ops.custom needs the GPU for a moment and times nothing: it runs beside the round trip's
  // portable process (D) when the round trip gets there, else on its own after it.
  const bool ops = !lock.custom_ops.empty() && Selected(o.only, {"ops.custom"});
  std::optional<OpsCheckOptions> ops_options;
  if (ops)
    ops_options = OpsCheckOptions{ResolveOpsLibraries(project), {}, work, o.device, o.timeout_s};
  std::future<CheckResult> ops_beside;
  std::function<void()> start_ops_beside;
  if (ops) {
    start_ops_beside = [&] {
      ops_beside = std::async(std::launch::async, [&] { return RunOpsCheck(*ops_options); });
    };
  }
  std::vector<CheckResult> training =
      framework_import ? RoundTripNotRun(*framework_import, o.only)
                       : RunTraining(o, project, python, train_device, work, run.checkpoint_root,
                                     progress, start_ops_beside);
  report.checks.push_back(OpsCustom(lock, ops_options, ops_beside, progress));
  AnnounceChecks(progress, report);
  for (CheckResult& c : training) report.checks.push_back(std::move(c));
  AnnounceChecks(progress, report);
  return run;
}

void RunTailChecks(const ValidateOptions& o, const Project& project, const NodeRun& run,
                   Progress& progress, Report& report, bool job_checks) {
  const Lockfile& lock = *project.lock;
  const NodeProbe& node = run.node;
  const bool gpu_build = report.build != "cpu";
  if (gpu_build && node.nvml_loaded) {
    for (CheckResult& c : PerfChecks(node, run.runs, Catalog::Embedded())) {
      // Not measured when not selected (RunNodeChecks): never judged either.
      report.checks.push_back(RunSelected(o.only, c.id, [&] { return std::move(c); }));
    }
  } else {
    const std::string why =
        gpu_build ? node.unavailable_reason : "CPU build: no accelerator to measure";
    report.checks.push_back(Skip("perf.matmul", why));
    report.checks.push_back(Skip("perf.hbm", why));
  }
  AnnounceChecks(progress, report);
  if (!job_checks) return;
  if (lock.ext_command) {
    report.checks.push_back(RunSelected(o.only, "ext.command", [&] {
      progress.Begin("ext.command: the project's smoke command");
      SmokeRun smoke = RunSmokeCommand(*lock.ext_command, fs::absolute(project.dir));
      progress.End();
      return SmokeCommandCheck(*lock.ext_command, smoke);
    }));
  } else {
    report.checks.push_back(Skip("ext.command", "the lock declares no smoke command"));
  }
  AnnounceChecks(progress, report);
}

}  // namespace trainlock::validate
