// The validator's top level: project, checks, report; see validate.h. Torch-free: the
// LibTorch work happens in the worker processes.
#include "validate.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include "artifact_paths.h"
#include "catalog.h"
#include "check_ids.h"
#include "diagnostic.h"
#include "exit_code.h"
#include "file_io.h"
#include "gpu_binary.h"
#include "node_checks.h"
#include "nvml_probe.h"
#include "ops_check.h"
#include "progress.h"
#include "project.h"
#include "report_signing.h"
#include "sha256.h"
#include "smoke_command.h"
#include "subprocess.h"
#include "version.h"
#include "version_info.h"
#include "worker.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

CheckResult Skip(const std::string& id, std::string why, std::string remedy = {}) {
  return {id, CheckStatus::kSkip, 0, std::move(why), std::move(remedy), nlohmann::json::object()};
}

nlohmann::json HostInfo() {
  nlohmann::json host;
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  host["hostname"] = name;
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

void PrintSummary(const Report& report, const ValidateOptions& o, const std::string& lock_sha) {
  std::cout << "trainlock-validate " << kTrainlockVersion << " (torch " << report.torch_version
            << ", " << report.build << ") " << o.project.string() << " lock "
            << lock_sha.substr(0, 12) << "\n";
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
            << static_cast<int>(report.duration_s + 0.5) << " s -> " << o.out.string() << "\n";
}

fs::path MakeWorkDir(const ValidateOptions& o) {
  if (!o.work_dir.empty()) {
    fs::create_directories(o.work_dir);
    return o.work_dir;
  }
  std::string pattern = (fs::temp_directory_path() / "trainlock-validate-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error("cannot create a work directory in " +
                             fs::temp_directory_path().string());
  return pattern;
}

}  // namespace

int RunValidate(const ValidateOptions& o) {
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
  report.required = lock.validate.required;
  if (const char* ref = std::getenv("TRAINLOCK_IMAGE_REF"); ref && *ref) {
    const char* digest = std::getenv("TRAINLOCK_IMAGE_DIGEST");
    if (digest && *digest) report.image = std::make_pair(std::string(ref), std::string(digest));
  }

  fs::path work = MakeWorkDir(o);
  const bool gpu_build = report.build != "cpu";
  NodeProbe node;
  DeviceRuns runs;
  if (gpu_build) {
    node = ProbeNode();
    std::vector<fs::path> op_libraries;
    for (const CustomOpLibrary& lib : lock.custom_ops) {
      op_libraries.push_back(fs::path(lib.library).is_absolute() ? fs::path(lib.library)
                                                                 : project.dir / lib.library);
    }
    if (node.nvml_loaded) {
      progress.Begin("env.arch, perf.*: measuring each device");
      runs = MeasureDevices(work, o.timeout_s, op_libraries);
      progress.End();
    }
  }
  fs::path ckpt_root = o.checkpoint_dir.empty() ? (lock.validate.checkpoint_dir.empty()
                                                       ? work / "checkpoints"
                                                       : fs::path(lock.validate.checkpoint_dir))
                                                : o.checkpoint_dir;
  if (ckpt_root.is_relative() && o.checkpoint_dir.empty() &&
      !lock.validate.checkpoint_dir.empty()) {
    ckpt_root = project.dir / ckpt_root;
  }
  // A run of its own under shared checkpoint storage, so concurrent validations never mix.
  if (ckpt_root != work / "checkpoints")
    ckpt_root /= "trainlock-validate-" + std::to_string(::getpid());

  for (CheckResult& c : EnvChecks(lock, node, runs, &report.devices))
    report.checks.push_back(std::move(c));
  report.checks.push_back(VerifyArtifact(project, lock.model, "model"));
  report.checks.push_back(VerifyArtifact(project, lock.dataset, "dataset"));
  if (lock.custom_ops.empty()) {
    report.checks.push_back(Skip("ops.custom", "the lock declares no custom ops"));
  } else {
    progress.Begin("ops.custom: loading and smoke-testing the custom ops");
    report.checks.push_back(
        RunOpsCheck({fs::absolute(o.project), {}, work, o.device, o.timeout_s}));
    progress.End();
  }
  RoundtripOptions r;
  r.project = fs::absolute(o.project);
  r.work_dir = work;
  r.checkpoint_root = ckpt_root;
  r.steps = lock.validate.steps;
  r.checkpoint_at = lock.validate.checkpoint_at;
  r.keep_last = lock.validate.keep_last;
  r.loss_tolerance = lock.validate.loss_tolerance;
  r.eval_tolerance = lock.validate.eval_tolerance;
  r.device = o.device;
  r.threads = o.threads;
  r.timeout_s = o.timeout_s;
  r.negative_control = o.negative_control;
  progress.Begin(
      "train.step, train.roundtrip: train -> checkpoint -> SIGKILL -> restore -> resume");
  for (CheckResult& c : RunRoundtrip(r)) report.checks.push_back(std::move(c));
  progress.End();
  report.checks.push_back(Skip("comm.allreduce", "single process: no collective to test"));
  report.checks.push_back(Skip("comm.ddp", "single process: no collective to test"));
  if (gpu_build && node.nvml_loaded) {
    for (CheckResult& c : PerfChecks(node, runs, Catalog::Embedded()))
      report.checks.push_back(std::move(c));
  } else {
    const std::string why =
        gpu_build ? node.unavailable_reason : "CPU build: no accelerator to measure";
    report.checks.push_back(Skip("perf.matmul", why));
    report.checks.push_back(Skip("perf.hbm", why));
  }
  if (lock.ext_command) {
    progress.Begin("ext.command: the project's smoke command");
    SmokeRun smoke = RunSmokeCommand(*lock.ext_command, fs::absolute(project.dir));
    report.checks.push_back(SmokeCommandCheck(*lock.ext_command, smoke));
    progress.End();
  } else {
    report.checks.push_back(Skip("ext.command", "the lock declares no smoke command"));
  }

  report.duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json j = report.ToJson();
  j["project"] = project.effective().name;
  j["work_dir"] = o.keep_work ? nlohmann::json(work.string()) : nlohmann::json(nullptr);
  if (o.out.has_parent_path()) fs::create_directories(o.out.parent_path());
  if (!sign_pem.empty()) SignReport(j, sign_pem);
  WriteFileAtomically(o.out, SignedReportText(j));
  if (o.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    PrintSummary(report, o, project.lock_sha256);
  }
  if (!o.keep_work) {
    std::error_code ec;
    if (ckpt_root != work / "checkpoints") fs::remove_all(ckpt_root, ec);
    if (o.work_dir.empty()) fs::remove_all(work, ec);
  }
  return report.Verdict() == "pass" ? kExitOk : kExitVerdict;
}

}  // namespace trainlock::validate
