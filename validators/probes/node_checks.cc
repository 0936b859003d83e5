// The env.* checks; see node_checks.h.
#include "probes/node_checks.h"
#include "base/strings.h"
#include "report/check_metrics.h"
#include "report/pass_rules.h"

#include <link.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <optional>

#include "base/version.h"
#include "probes/env_health.h"
#include "project/round_trip_engines.h"

namespace trainlock::validate {
namespace {

// A check this file could not measure (skip or error); a measured one is Judged (pass_rules.h).
CheckResult Make(const char* id, CheckStatus status, std::string summary, std::string remedy = {},
                 nlohmann::json metrics = nlohmann::json::object()) {
  return NotMeasured(id, status, std::move(summary), std::move(remedy), std::move(metrics));
}

CheckResult Driver(const Target* target, const NodeProbe& node) {
  EnvVersionMetrics v;
  v.driver_version = node.driver_version;
  v.cuda_driver_version = CudaVersionString(node.cuda_driver_version);
  nlohmann::json m = ToJson(v);
  if (node.driver_version.empty())  // nothing measured: neither a pass nor a failing node
    return Make("env.driver", CheckStatus::kError, "NVML gave no driver version", {}, m);
  if (!target || target->driver_min.empty()) {
    return Judged("env.driver", m,
                  "driver " + node.driver_version + " (the lock sets no driver-min)", {});
  }
  v.driver_min = target->driver_min;
  m = ToJson(v);
  auto have = ParseVersion(node.driver_version), want = ParseVersion(target->driver_min);
  if (!have)
    return Make("env.driver", CheckStatus::kError,
                "cannot parse the driver version '" + node.driver_version + "'", {}, m);
  if (*have < *want) {
    return Judged("env.driver", m,
                  "driver " + node.driver_version + " is older than the lock's driver-min " +
                      target->driver_min,
                  "upgrade the NVIDIA driver on this node to " + target->driver_min + " or newer");
  }
  return Judged("env.driver", m,
                "driver " + node.driver_version + " >= driver-min " + target->driver_min, {});
}

// The newest CUDA runtime the run loads, and whose it is: the validator's LibTorch's and, for a
// Python engine, the one the lock pins for its torch (the target's `cuda`). Both are known
// before the engine's framework is imported, so a driver too old for either is named even when
// that torch cannot start.
struct NeededRuntime {
  int version = 0;  // 13000 for 13.0
  std::string whose;
};

NeededRuntime RuntimeNeeded(const Lockfile& lock, const Target* target, const BuildInfo& build) {
  NeededRuntime need{build.cuda_runtime,
                     "the image's runtime is CUDA " + CudaVersionString(build.cuda_runtime)};
  const RoundTripEngine* engine = FindRoundTripEngine(lock.validate.engine);
  if (!engine || !engine->python || !target || target->cuda.empty()) return need;
  const std::optional<Version> locked = ParseVersion(target->cuda);
  if (!locked) return need;
  const int version = locked->major() * 1000 + locked->minor() * 10;
  if (version > need.version) {
    need = {version, "the engine's torch is locked for CUDA " + CudaVersionString(version) +
                         " (the target's cuda)"};
  }
  return need;
}

CheckResult Runtime(const NodeProbe& node, const BuildInfo& build, const NeededRuntime& need,
                    const Catalog& catalog) {
  EnvVersionMetrics versions;
  versions.cuda_runtime = CudaVersionString(build.cuda_runtime);
  versions.cuda_driver_supports = CudaVersionString(node.cuda_driver_version);
  if (need.version > build.cuda_runtime) versions.cuda_needed = CudaVersionString(need.version);
  const nlohmann::json m = ToJson(versions);
  if (build.cuda_runtime == 0)
    return Make("env.runtime", CheckStatus::kSkip, "not a CUDA build of the validator", {}, m);
  if (node.cuda_driver_version <= 0)  // unread, not a driver too old
    return Make("env.runtime", CheckStatus::kError,
                "NVML gave no CUDA version for the driver (nvmlSystemGetCudaDriverVersion)", {}, m);
  if (node.cuda_driver_version < need.version) {
    const std::string cuda = CudaVersionString(need.version);
    std::string need_driver;
    if (auto v = ParseVersion(cuda)) {
      if (const CudaDriverRequirement* r = catalog.FindCudaDriver(*v))
        need_driver = r->linux_driver_min.ToString();
    }
    const std::string driver =
        node.driver_version.empty() ? "the driver" : "driver " + node.driver_version;
    return Judged("env.runtime", m,
                  driver + " supports CUDA " + CudaVersionString(node.cuda_driver_version) +
                      " but " + need.whose,
                  "upgrade the NVIDIA driver on this node" +
                      (need_driver.empty()
                           ? std::string()
                           : " to " + need_driver + " or newer (CUDA " + cuda + "'s minimum)") +
                      ", or use an image built for CUDA " +
                      CudaVersionString(node.cuda_driver_version) + " or older");
  }
  return Judged("env.runtime", m,
                "the driver (CUDA " + CudaVersionString(node.cuda_driver_version) +
                    ") supports the runtime (CUDA " + CudaVersionString(need.version) + ")",
                {});
}

CheckResult Versions(const Target* target, const BuildInfo& build) {
  EnvVersionMetrics m;
  m.torch = build.torch;
  m.cuda_runtime = CudaVersionString(build.cuda_runtime);
  if (build.nccl) {
    m.nccl = std::to_string(build.nccl / 10000) + "." + std::to_string(build.nccl / 100 % 100) +
             "." + std::to_string(build.nccl % 100);
  }
  if (!target)
    return Make("env.versions", CheckStatus::kSkip, "the lock has no " + build.flavour + " target",
                {}, ToJson(m));
  std::vector<std::string> problems;
  auto torch_want = ParseVersion(target->torch), torch_have = ParseVersion(build.torch);
  m.torch_locked = target->torch;
  if (!torch_want || !torch_have || !(*torch_want == *torch_have)) {
    problems.push_back("torch " + build.torch + " but the lock pins " + target->torch);
  }
  if (!build.engine_python.empty()) {
    // The engine trains with its interpreter's torch, not the validator's LibTorch.
    m.engine_torch = build.engine_torch;
    m.engine_python = build.engine_python;
    auto engine_have = ParseVersion(TorchRelease(build.engine_torch));
    if (!torch_want || !engine_have || !(*torch_want == *engine_have)) {
      problems.push_back("the engine's torch " +
                         (build.engine_torch.empty() ? "(unknown)" : build.engine_torch) + " (" +
                         build.engine_python + ") but the lock pins " + target->torch);
    }
  }
  if (!target->cuda.empty() && build.cuda_runtime) {
    m.cuda_locked = target->cuda;
    auto want = ParseVersion(target->cuda);
    if (!want || want->major() * 1000 + want->minor() * 10 != build.cuda_runtime) {
      problems.push_back("CUDA runtime " + CudaVersionString(build.cuda_runtime) +
                         " but the lock pins " + target->cuda);
    }
  }
  if (!target->nccl.empty()) {
    m.nccl_locked = target->nccl;
    if (!build.nccl) {
      problems.push_back("the lock pins NCCL " + target->nccl + " but no NCCL is loaded");
    } else if (m.nccl != target->nccl) {
      problems.push_back("NCCL " + m.nccl.value_or("") + " but the lock pins " + target->nccl);
    }
  }
  std::string unread;  // a pin nothing here could be compared with: never passed
  if (!target->cudnn.empty()) {
    m.cudnn_locked = target->cudnn;
    // The cuDNN that trains: the engine's torch's, or this binary's LibTorch's.
    const bool engine = !build.engine_python.empty();
    const std::string have = engine ? build.engine_cudnn : CudnnVersionString(build.cudnn);
    if (have.empty()) {
      unread = "the lock pins cuDNN " + target->cudnn + ", and " +
               (engine ? "the engine's torch reported no cuDNN" : "no cuDNN is loaded");
    } else {
      m.cudnn = have;
      const auto have_version = ParseVersion(have), pin = ParseVersion(target->cudnn);
      if (!have_version || !pin || !have_version->MatchesPin(*pin))
        problems.push_back("cuDNN " + have + " but the lock pins " + target->cudnn);
    }
  }
  if (unread.empty() && (!target->rocm.empty() || !target->rccl.empty())) {
    // No probe reads the ROCm or RCCL that runs yet: a pin is never said to match unseen.
    std::vector<std::string> pins;
    if (!target->rocm.empty()) pins.push_back("ROCm " + target->rocm);
    if (!target->rccl.empty()) pins.push_back("RCCL " + target->rccl);
    unread = "the lock pins " + JoinStrings(pins, " and ") +
             ", which this validator does not compare yet";
  }
  if (problems.empty() && !unread.empty())
    return Make("env.versions", CheckStatus::kError, unread,
                "run the validator in the image built from this lock, on its GPU", ToJson(m));
  if (!problems.empty()) {
    std::string summary = JoinStrings(problems, "; ");
    return Judged("env.versions", ToJson(m), summary,
                  "run the validator from the image built from this lock, or re-lock to what the "
                  "image holds");
  }
  return Judged("env.versions", ToJson(m),
                "torch " + build.torch +
                    (build.engine_python.empty() ? "" : " (engine: " + build.engine_torch + ")") +
                    (build.cuda_runtime ? ", CUDA " + CudaVersionString(build.cuda_runtime) : "") +
                    (build.cuda_runtime ? " match" : " matches") + std::string(" the lock"),
                {});
}

// "; GPU 0 and GPU 1 of the node not visible to this process (CUDA_VISIBLE_DEVICES)", or "".
std::string HiddenNote(const NodeProbe& node, EnvDeviceMetrics& m) {
  if (node.hidden.empty()) return "";
  std::vector<std::string> names;
  nlohmann::json indices = nlohmann::json::array();
  for (const GpuProbe& g : node.hidden) {
    names.push_back("GPU " + std::to_string(g.index));
    indices.push_back(g.index);
  }
  m.not_visible = indices;
  return "; " + JoinStrings(names, ", ") + " of the node not visible to this process " +
         "(CUDA_VISIBLE_DEVICES) and not judged";
}

CheckResult Devices(const Target* target, const NodeProbe& node, const Catalog& catalog) {
  EnvDeviceMetrics m;
  m.count = static_cast<int64_t>(node.gpus.size());
  std::vector<std::string> gpu_names;
  for (const GpuProbe& g : node.gpus) gpu_names.push_back(g.name);
  m.gpu_names = gpu_names;
  const std::string hidden = HiddenNote(node, m);
  if (node.gpus.empty()) {
    return Judged("env.devices", ToJson(m), "NVML sees no GPU",
                  "check that the container was given the GPUs");
  }
  if (!target || target->accelerators.empty()) {
    return Judged(
        "env.devices", ToJson(m),
        std::to_string(node.gpus.size()) + " GPU(s); the lock names no accelerators" + hidden, {});
  }
  m.accelerators = target->accelerators;
  std::vector<std::string> wrong;
  for (const GpuProbe& g : node.gpus) {
    const GpuModel* model = catalog.FindGpu(g.name);
    bool listed =
        model && std::any_of(target->accelerators.begin(), target->accelerators.end(),
                             [&](const std::string& a) { return catalog.FindGpu(a) == model; });
    if (!listed) wrong.push_back("GPU " + std::to_string(g.index) + " (" + g.name + ")");
  }
  std::string names;
  for (const std::string& a : target->accelerators) names += (names.empty() ? "" : ", ") + a;
  if (!wrong.empty()) {
    std::string list;
    for (const std::string& w : wrong) list += (list.empty() ? "" : ", ") + w;
    return Judged(
        "env.devices", ToJson(m), list + " not among the target's accelerators (" + names + ")",
        "run on a node with the locked accelerators, or add this model to the target and re-lock");
  }
  return Judged("env.devices", ToJson(m),
                std::to_string(node.gpus.size()) + " x " + node.gpus[0].name +
                    ", among the target's accelerators (" + names + ")" + hidden,
                {});
}

// A library's PTX as env.arch's rule reads it: [arch, ISA major, ISA minor] per entry.
nlohmann::json PtxRows(const GpuBinaryInfo& info) {
  nlohmann::json rows = nlohmann::json::array();
  for (const PtxEntry& p : info.ptx) rows.push_back({p.arch, p.isa_major, p.isa_minor});
  return rows;
}

CheckResult Arch(const NodeProbe& node, const DeviceRuns& runs) {
  // With no GPU every per-GPU test below holds vacuously: nothing was judged, so no pass.
  if (node.gpus.empty())
    return Make("env.arch", CheckStatus::kSkip,
                "no GPU visible to this process: no device to check code and a kernel launch on");
  if (const std::string mig = MigNote(node); !mig.empty())
    return Make("env.arch", CheckStatus::kSkip, mig + "; env.arch judges whole GPUs",
                "validate on GPUs with MIG off (nvidia-smi -mig 0, by the node's administrator)");
  nlohmann::json libs = nlohmann::json::array();
  std::vector<std::string> problems;
  for (const auto& [path, info] : runs.libraries) {
    libs.push_back({{"path", path}, {"sass", info.sass}, {"ptx", PtxRows(info)}});
    for (const GpuProbe& g : node.gpus) {
      std::string why;
      if (!CudaCodeRunsOn(info, g.cc_major * 10 + g.cc_minor, node.cuda_driver_version, &why)) {
        problems.push_back(path.substr(path.rfind('/') + 1) + " on GPU " + std::to_string(g.index) +
                           ": " + why);
      }
    }
  }
  for (const auto& d : runs.devices) {
    if (!d.value("launch_ok", false)) {
      problems.push_back("GPU " + std::to_string(d.value("index", -1)) + ": kernel launch failed" +
                         (d.contains("error") ? ": " + d["error"].get<std::string>() : ""));
    }
  }
  EnvDeviceMetrics arch;
  arch.libraries = libs;
  arch.launches = runs.devices;
  std::vector<int> gpu_sms;
  for (const GpuProbe& g : node.gpus) gpu_sms.push_back(g.cc_major * 10 + g.cc_minor);
  arch.gpu_sms = gpu_sms;
  arch.cuda_driver = node.cuda_driver_version;
  const nlohmann::json m = ToJson(arch);
  if (runs.libraries.empty())
    problems.push_back("no LibTorch CUDA library found in this process to inspect");
  if (runs.devices.size() != node.gpus.size()) {
    problems.push_back("the kernel launch reached " + std::to_string(runs.devices.size()) + " of " +
                       std::to_string(node.gpus.size()) + " GPUs");
  }
  if (!problems.empty()) {
    std::string summary = JoinStrings(problems, "; ");
    return Judged(
        "env.arch", m, summary,
        "use a torch build (and custom-op libraries) compiled for this GPU's architecture, "
        "or with PTX "
        "the driver can JIT");
  }
  std::string sms;
  for (const GpuProbe& g : node.gpus) {
    std::string sm = "sm_" + std::to_string(g.cc_major * 10 + g.cc_minor);
    if (sms.find(sm) == std::string::npos) sms += (sms.empty() ? "" : ", ") + sm;
  }
  return Judged("env.arch", m,
                std::to_string(runs.libraries.size()) + " CUDA librar" +
                    (runs.libraries.size() == 1 ? "y carries" : "ies carry") + " code for " + sms +
                    "; a known-answer kernel ran on every GPU",
                {});
}

int PhdrCallback(dl_phdr_info* info, size_t, void* out) {
  std::string name = info->dlpi_name ? info->dlpi_name : "";
  std::string base = name.substr(name.rfind('/') + 1);
  if (base.rfind("libtorch_cuda", 0) == 0)
    static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

}  // namespace

std::vector<std::string> LoadedTorchCudaLibraries() {
  std::vector<std::string> libraries;
  dl_iterate_phdr(PhdrCallback, &libraries);
  return libraries;
}

std::string MigNote(const NodeProbe& node) {
  std::vector<std::string> on;
  for (const GpuProbe& g : node.gpus)
    if (g.mig.value_or(false)) on.push_back("GPU " + std::to_string(g.index));
  if (on.empty()) return "";
  return "MIG mode on " + JoinStrings(on, " and ") +
         ": CUDA sees MIG instances, not the whole GPUs NVML lists";
}

std::string CudnnVersionString(int version) {
  if (version <= 0) return "";
  const int major = version >= 90000 ? version / 10000 : version / 1000;
  const int minor = version >= 90000 ? version % 10000 / 100 : version % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(version % 100);
}

std::string CudaVersionString(int version) {
  if (version <= 0) return "";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

namespace {

const Target* LockTargetFor(const Lockfile& lock, const BuildInfo& build) {
  auto it = lock.targets.find(build.flavour);
  return it == lock.targets.end() ? nullptr : &it->second;
}

// `judge()` when `only` (--only) selects `id`, else the skip "not selected (--only)": a check
// not selected is never judged (check_selection.h's rule).
CheckResult JudgeIfSelected(const char* id, const std::vector<std::string>& only,
                            const std::function<CheckResult()>& judge) {
  const bool selected = only.empty() || std::find(only.begin(), only.end(), id) != only.end();
  return selected ? judge() : Make(id, CheckStatus::kSkip, "not selected (--only)");
}

// A check judged from NVML: without NVML, the skip saying why it could not be used.
CheckResult JudgeFromNvml(const char* id, const NodeProbe& node,
                          const std::vector<std::string>& only,
                          const std::function<CheckResult()>& judge) {
  return JudgeIfSelected(id, only, [&] {
    return node.nvml_loaded ? judge() : Make(id, CheckStatus::kSkip, node.unavailable_reason);
  });
}

}  // namespace

std::vector<CheckResult> DriverChecks(const Lockfile& lock, const NodeProbe& node,
                                      const BuildInfo& build, const Catalog& catalog,
                                      const std::vector<std::string>& only) {
  const Target* target = LockTargetFor(lock, build);
  return {JudgeFromNvml("env.driver", node, only, [&] { return Driver(target, node); }),
          JudgeFromNvml(
              "env.runtime", node, only,
              [&] { return Runtime(node, build, RuntimeNeeded(lock, target, build), catalog); }),
          JudgeFromNvml("env.health", node, only, [&] { return HealthCheck(node); })};
}

std::vector<CheckResult> NodeChecks(const Lockfile& lock, const NodeProbe& node,
                                    const BuildInfo& build, const Catalog& catalog,
                                    const DeviceRuns& runs, nlohmann::json* devices,
                                    const std::vector<std::string>& only) {
  const Target* target = LockTargetFor(lock, build);
  if (node.nvml_loaded) {
    for (const GpuProbe& g : node.gpus) {
      devices->push_back(
          {{"index", g.index},
           {"name", g.name},
           {"uuid", g.uuid},
           {"memory_bytes", g.memory_total_bytes},
           {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)}});
    }
  }
  // The driver's checks are DriverChecks', judged the same way before any work.
  const std::vector<CheckResult> driver = DriverChecks(lock, node, build, catalog, only);
  return {driver[0],  // env.driver
          driver[1],  // env.runtime
          JudgeFromNvml("env.arch", node, only, [&] { return Arch(node, runs); }),
          JudgeIfSelected("env.versions", only, [&] { return Versions(target, build); }),
          driver[2],  // env.health
          JudgeFromNvml("env.devices", node, only, [&] { return Devices(target, node, catalog); })};
}

}  // namespace trainlock::validate
