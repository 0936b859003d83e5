// The env.* checks; see node_checks.h.
#include "node_checks.h"

#include <link.h>

#include <algorithm>
#include <cstdio>

#include "base/version.h"

namespace trainlock::validate {
namespace {

std::string Join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

CheckResult Make(const char* id, CheckStatus status, std::string summary, std::string remedy = {},
                 nlohmann::json metrics = nlohmann::json::object()) {
  return {id, status, 0, std::move(summary), std::move(remedy), std::move(metrics)};
}

CheckResult Driver(const Target* target, const NodeProbe& node) {
  nlohmann::json m = {{"driver_version", node.driver_version},
                      {"cuda_driver_version", CudaVersionString(node.cuda_driver_version)}};
  if (!target || target->driver_min.empty()) {
    return Make("env.driver", CheckStatus::kPass,
                "driver " + node.driver_version + " (the lock sets no driver-min)", {}, m);
  }
  m["driver_min"] = target->driver_min;
  auto have = ParseVersion(node.driver_version), want = ParseVersion(target->driver_min);
  if (!have)
    return Make("env.driver", CheckStatus::kError,
                "cannot parse the driver version '" + node.driver_version + "'", {}, m);
  if (*have < *want) {
    return Make("env.driver", CheckStatus::kFail,
                "driver " + node.driver_version + " is older than the lock's driver-min " +
                    target->driver_min,
                "upgrade the NVIDIA driver on this node to " + target->driver_min + " or newer", m);
  }
  return Make("env.driver", CheckStatus::kPass,
              "driver " + node.driver_version + " >= driver-min " + target->driver_min, {}, m);
}

CheckResult Runtime(const NodeProbe& node, const BuildInfo& build, const Catalog& catalog) {
  nlohmann::json m = {{"cuda_runtime", CudaVersionString(build.cuda_runtime)},
                      {"cuda_driver_supports", CudaVersionString(node.cuda_driver_version)}};
  if (build.cuda_runtime == 0)
    return Make("env.runtime", CheckStatus::kSkip, "not a CUDA build of the validator", {}, m);
  if (node.cuda_driver_version < build.cuda_runtime) {
    std::string need;
    if (auto v = ParseVersion(CudaVersionString(build.cuda_runtime))) {
      if (const CudaDriverRequirement* r = catalog.FindCudaDriver(*v))
        need = r->linux_driver_min.ToString();
    }
    return Make("env.runtime", CheckStatus::kFail,
                "the driver supports CUDA " + CudaVersionString(node.cuda_driver_version) +
                    " but the image's runtime is CUDA " + CudaVersionString(build.cuda_runtime),
                "upgrade the driver" +
                    (need.empty() ? std::string() : " to " + need + " or newer") +
                    ", or use an image built for CUDA " +
                    CudaVersionString(node.cuda_driver_version) + " or older",
                m);
  }
  return Make("env.runtime", CheckStatus::kPass,
              "the driver (CUDA " + CudaVersionString(node.cuda_driver_version) +
                  ") supports the runtime (CUDA " + CudaVersionString(build.cuda_runtime) + ")",
              {}, m);
}

CheckResult Versions(const Target* target, const BuildInfo& build) {
  nlohmann::json m = {{"torch", build.torch},
                      {"cuda_runtime", CudaVersionString(build.cuda_runtime)}};
  if (build.nccl) {
    m["nccl"] = std::to_string(build.nccl / 10000) + "." + std::to_string(build.nccl / 100 % 100) +
                "." + std::to_string(build.nccl % 100);
  }
  if (!target)
    return Make("env.versions", CheckStatus::kSkip, "the lock has no " + build.flavour + " target",
                {}, m);
  std::vector<std::string> problems;
  auto torch_want = ParseVersion(target->torch), torch_have = ParseVersion(build.torch);
  m["torch_locked"] = target->torch;
  if (!torch_want || !torch_have || !(*torch_want == *torch_have)) {
    problems.push_back("torch " + build.torch + " but the lock pins " + target->torch);
  }
  if (!target->cuda.empty() && build.cuda_runtime) {
    m["cuda_locked"] = target->cuda;
    auto want = ParseVersion(target->cuda);
    if (!want || want->major() * 1000 + want->minor() * 10 != build.cuda_runtime) {
      problems.push_back("CUDA runtime " + CudaVersionString(build.cuda_runtime) +
                         " but the lock pins " + target->cuda);
    }
  }
  if (!target->nccl.empty()) {
    m["nccl_locked"] = target->nccl;
    if (!build.nccl) {
      problems.push_back("the lock pins NCCL " + target->nccl + " but no NCCL is loaded");
    } else if (m["nccl"] != target->nccl) {
      problems.push_back("NCCL " + m["nccl"].get<std::string>() + " but the lock pins " +
                         target->nccl);
    }
  }
  if (!problems.empty()) {
    std::string summary = Join(problems, "; ");
    return Make(
        "env.versions", CheckStatus::kFail, summary,
        "run the validator from the image built from this lock, or re-lock to what the image holds",
        m);
  }
  return Make("env.versions", CheckStatus::kPass,
              "torch " + build.torch +
                  (build.cuda_runtime ? ", CUDA " + CudaVersionString(build.cuda_runtime) : "") +
                  (build.cuda_runtime ? " match" : " matches") + std::string(" the lock"),
              {}, m);
}

CheckResult Health(const NodeProbe& node) {
  std::vector<std::string> problems;
  nlohmann::json per_device = nlohmann::json::array();
  for (const GpuProbe& g : node.gpus) {
    nlohmann::json d = {{"index", g.index}};
    auto put = [&](const char* key, const auto& opt) {
      if (opt) d[key] = *opt;
    };
    put("ecc_enabled", g.ecc_enabled);
    put("ecc_uncorrected_volatile", g.ecc_uncorrected_volatile);
    put("ecc_uncorrected_aggregate", g.ecc_uncorrected_aggregate);
    put("retired_pages_pending", g.retired_pages_pending);
    put("remapped_rows_uncorrectable", g.remapped_rows_uncorrectable);
    put("remap_pending", g.remap_pending);
    put("remap_failed", g.remap_failed);
    put("temperature_c", g.temperature_c);
    put("power_mw", g.power_mw);
    put("power_limit_mw", g.power_limit_mw);
    put("sm_clock_mhz", g.sm_clock_mhz);
    put("sm_clock_max_mhz", g.sm_clock_max_mhz);
    put("mem_clock_mhz", g.mem_clock_mhz);
    put("throttle_reasons", g.throttle_reasons);
    put("pcie_gen", g.pcie_gen);
    put("pcie_gen_max", g.pcie_gen_max);
    put("pcie_width", g.pcie_width);
    put("pcie_width_max", g.pcie_width_max);
    put("persistence", g.persistence);
    put("mig", g.mig);
    per_device.push_back(d);
    std::string gpu = "GPU " + std::to_string(g.index);
    if (g.ecc_uncorrected_volatile.value_or(0) > 0) {
      problems.push_back(gpu + ": " + std::to_string(*g.ecc_uncorrected_volatile) +
                         " uncorrectable ECC errors since boot");
    }
    if (g.retired_pages_pending.value_or(false))
      problems.push_back(gpu + ": retired pages pending a reset");
    if (g.remap_failed.value_or(false)) problems.push_back(gpu + ": row remapping failed");
    if (g.remap_pending.value_or(false))
      problems.push_back(gpu + ": row remapping pending a reset");
    if (g.throttle_reasons) {
      if (std::string why = HarmfulThrottleReasons(*g.throttle_reasons); !why.empty()) {
        problems.push_back(gpu + ": clocks held down by " + why);
      }
    }
  }
  nlohmann::json m = {{"devices", per_device}};
  if (!problems.empty()) {
    std::string summary = Join(problems, "; ");
    return Make("env.health", CheckStatus::kFail, summary,
                "drain the node: reset the GPU (pending remaps/retirements) or send it for repair "
                "(uncorrectable "
                "errors, failed remaps); check cooling and power for slowdowns",
                m);
  }
  return Make("env.health", CheckStatus::kPass,
              std::to_string(node.gpus.size()) +
                  " GPU(s): no uncorrectable ECC errors, no pending retirements or "
                  "remaps, no hardware or thermal slowdown",
              {}, m);
}

CheckResult Devices(const Target* target, const NodeProbe& node, const Catalog& catalog) {
  nlohmann::json m = {{"count", node.gpus.size()}};
  if (node.gpus.empty()) {
    return Make("env.devices", CheckStatus::kFail, "NVML sees no GPU",
                "check that the container was given the GPUs", m);
  }
  if (!target || target->accelerators.empty()) {
    return Make("env.devices", CheckStatus::kPass,
                std::to_string(node.gpus.size()) + " GPU(s); the lock names no accelerators", {},
                m);
  }
  m["accelerators"] = target->accelerators;
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
    return Make(
        "env.devices", CheckStatus::kFail,
        list + " not among the target's accelerators (" + names + ")",
        "run on a node with the locked accelerators, or add this model to the target and re-lock",
        m);
  }
  return Make("env.devices", CheckStatus::kPass,
              std::to_string(node.gpus.size()) + " x " + node.gpus[0].name +
                  ", among the target's accelerators (" + names + ")",
              {}, m);
}

CheckResult Arch(const NodeProbe& node, const DeviceRuns& runs) {
  nlohmann::json libs = nlohmann::json::array();
  std::vector<std::string> problems;
  for (const auto& [path, info] : runs.libraries) {
    libs.push_back({{"path", path}, {"sass", info.sass}, {"ptx_archs", [&] {
                                                            std::vector<int> a;
                                                            for (const PtxEntry& p : info.ptx)
                                                              a.push_back(p.arch);
                                                            return a;
                                                          }()}});
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
  nlohmann::json m = {{"libraries", libs}, {"launches", runs.devices}};
  if (runs.libraries.empty())
    problems.push_back("no LibTorch CUDA library found in this process to inspect");
  if (runs.devices.size() != node.gpus.size()) {
    problems.push_back("the kernel launch reached " + std::to_string(runs.devices.size()) + " of " +
                       std::to_string(node.gpus.size()) + " GPUs");
  }
  if (!problems.empty()) {
    std::string summary = Join(problems, "; ");
    return Make("env.arch", CheckStatus::kFail, summary,
                "use a torch build (and custom-op libraries) compiled for this GPU's architecture, "
                "or with PTX "
                "the driver can JIT",
                m);
  }
  std::string sms;
  for (const GpuProbe& g : node.gpus) {
    std::string sm = "sm_" + std::to_string(g.cc_major * 10 + g.cc_minor);
    if (sms.find(sm) == std::string::npos) sms += (sms.empty() ? "" : ", ") + sm;
  }
  return Make("env.arch", CheckStatus::kPass,
              std::to_string(runs.libraries.size()) + " CUDA librar" +
                  (runs.libraries.size() == 1 ? "y" : "ies") + " carry code for " + sms +
                  "; a known-answer kernel ran on every GPU",
              {}, m);
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

std::vector<CheckResult> PerfChecks(const NodeProbe& node, const DeviceRuns& runs,
                                    const Catalog& catalog) {
  struct Measure {
    const char* id;
    const char* key;
    const char* unit;
    double fraction;
    double GpuModel::*peak;
  };
  const Measure measures[] = {
      {"perf.matmul", "matmul_tflops", "TFLOP/s bf16 dense", kMatmulFraction,
       &GpuModel::bf16_dense_tflops},
      {"perf.hbm", "copy_tbps", "TB/s device copy", kHbmFraction, &GpuModel::hbm_tbps}};
  std::vector<CheckResult> checks;
  for (const Measure& measure : measures) {
    nlohmann::json per_device = nlohmann::json::array();
    std::vector<std::string> slow, implausible;
    double slowest = -1;
    std::string slowest_text;
    for (const auto& d : runs.devices) {
      int index = d.value("index", -1);
      std::string name = index >= 0 && index < static_cast<int>(node.gpus.size())
                             ? node.gpus[static_cast<size_t>(index)].name
                             : "";
      const GpuModel* model = catalog.FindGpu(name);
      double value = d.value(measure.key, 0.0);
      double threshold = model ? model->*measure.peak * measure.fraction : 0.0;
      per_device.push_back(
          {{"index", index}, {"name", name}, {"value", value}, {"threshold", threshold}});
      char text[160];
      std::snprintf(text, sizeof text, "GPU %d (%s) %.0f %s", index, name.c_str(),
                    measure.key == std::string("copy_tbps") ? value * 1000 : value,
                    measure.key == std::string("copy_tbps") ? "GB/s device copy" : measure.unit);
      if (slowest < 0 || value < slowest) {
        slowest = value;
        slowest_text = text;
      }
      if (model && value < threshold) slow.push_back(text);
      // Faster than the datasheet is a timing that did not wait for the GPU, not a fast GPU.
      if (model && value > model->*measure.peak * kImplausibleAboveDatasheet)
        implausible.push_back(text);
    }
    nlohmann::json m = {{"devices", per_device},
                        {"threshold_fraction_of_datasheet", measure.fraction}};
    if (runs.devices.empty()) {
      checks.push_back(Make(measure.id, CheckStatus::kSkip, "no device was measured"));
    } else if (!implausible.empty()) {
      checks.push_back(Make(measure.id, CheckStatus::kError,
                            Join(implausible, "; ") + ": above the datasheet peak, not measured",
                            "the timing did not wait for that GPU: a validator bug to report", m));
    } else if (!slow.empty()) {
      std::string summary = Join(slow, "; ");
      checks.push_back(Make(
          measure.id, CheckStatus::kFail, summary + " below the threshold",
          "a slow or throttled GPU: check env.health (clocks, thermal, power) and drain the node",
          m));
    } else {
      checks.push_back(Make(measure.id, CheckStatus::kPass, "slowest: " + slowest_text, {}, m));
    }
  }
  return checks;
}

std::string CudaVersionString(int version) {
  if (version <= 0) return "";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::vector<CheckResult> NodeChecks(const Spec& lock, const NodeProbe& node, const BuildInfo& build,
                                    const Catalog& catalog, const DeviceRuns& runs,
                                    nlohmann::json* devices) {
  auto it = lock.targets.find(build.flavour);
  const Target* target = it == lock.targets.end() ? nullptr : &it->second;
  std::vector<CheckResult> checks;
  if (!node.nvml_loaded) {
    for (const char* id : {"env.driver", "env.runtime", "env.arch"}) {
      checks.push_back(Make(id, CheckStatus::kSkip, node.unavailable_reason));
    }
    checks.push_back(Versions(target, build));
    for (const char* id : {"env.health", "env.devices"})
      checks.push_back(Make(id, CheckStatus::kSkip, node.unavailable_reason));
    return checks;
  }
  for (const GpuProbe& g : node.gpus) {
    devices->push_back(
        {{"index", g.index},
         {"name", g.name},
         {"uuid", g.uuid},
         {"memory_bytes", g.memory_total_bytes},
         {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)}});
  }
  checks.push_back(Driver(target, node));
  checks.push_back(Runtime(node, build, catalog));
  checks.push_back(Arch(node, runs));
  checks.push_back(Versions(target, build));
  checks.push_back(Health(node));
  checks.push_back(Devices(target, node, catalog));
  return checks;
}

}  // namespace trainlock::validate
