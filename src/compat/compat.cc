// Compatibility rules; see compat.h for the finding ids.
#include "compat/compat.h"

#include <algorithm>

#include "base/suggest.h"
#include "compat/lock_drift.h"

namespace trainlock {
namespace {

class CompatChecker {
 public:
  CompatChecker(const Project& project, const Catalog& catalog)
      : project_(project), catalog_(catalog), spec_(*project.manifest) {}

  std::vector<Finding> Run() {
    for (const auto& [name, target] : spec_.targets) CheckTarget(target);
    CheckLock();
    return std::move(findings_);
  }

 private:
  void Add(std::string id, const std::string& field, std::string message, std::string remedy,
           const std::string& path = {}) {
    const std::string& file = path.empty() ? project_.manifest_path : path;
    SourcePos pos = path.empty() ? spec_.Pos(field) : project_.lock->Pos(field);
    findings_.push_back({std::move(id), file, pos, std::move(message), std::move(remedy)});
  }

  static std::string SmName(int sm) { return "sm_" + std::to_string(sm); }

  void CheckTarget(const Target& t) {
    std::string prefix = "targets." + t.name + ".";
    if (t.name == "cuda") CheckCudaDriver(t, prefix);
    for (const std::string& name : t.accelerators) CheckAccelerator(t, prefix, name);
    CheckTorchTag(t, prefix);
  }

  void CheckCudaDriver(const Target& t, const std::string& prefix) {
    auto cuda = ParseVersion(t.cuda);
    auto driver = ParseVersion(t.driver_min);
    if (!cuda || !driver) return;  // the loader has already refused these
    const CudaDriverRequirement* need = catalog_.FindCudaDriver(*cuda);
    if (!need) {
      Add("compat.cuda-unknown", prefix + "cuda",
          "CUDA " + t.cuda + " is not in the driver table (lockfiles/compat/cuda-drivers.toml)",
          "use a released CUDA version, or add the release and its driver to the catalog");
      return;
    }
    if (*driver < need->linux_driver_min) {
      Add("compat.driver", prefix + "driver-min",
          "CUDA " + t.cuda + " needs Linux driver >= " + need->linux_driver_min.ToString() +
              ", but driver-min is " + t.driver_min,
          "raise driver-min to " + need->linux_driver_min.ToString() +
              " and upgrade the nodes' driver, or choose an older CUDA whose driver the fleet has");
    }
  }

  void CheckAccelerator(const Target& t, const std::string& prefix, const std::string& name) {
    const std::string field = prefix + "accelerators";
    const GpuModel* gpu = catalog_.FindGpu(name);
    if (!gpu) {
      std::vector<std::string> names = catalog_.GpuNames();
      std::vector<std::string_view> views(names.begin(), names.end());
      std::string suggestion = DidYouMean(name, views);
      Add("compat.accelerator-unknown", field,
          "accelerator '" + name + "' is not in the GPU catalog",
          suggestion.empty() ? "use a name from lockfiles/compat/gpus.toml" : suggestion);
      return;
    }
    std::string want_vendor = t.name == "cuda" ? "nvidia" : t.name == "rocm" ? "amd" : "";
    if (gpu->vendor != want_vendor) {
      std::string remedy = want_vendor.empty()
                               ? "remove accelerators from the cpu target, or add a " +
                                     std::string(gpu->vendor == "amd" ? "rocm" : "cuda") + " target"
                               : "move '" + gpu->name + "' to the " +
                                     (gpu->vendor == "amd" ? "rocm" : "cuda") + " target";
      Add("compat.vendor", field,
          gpu->name + " is an " + (gpu->vendor == "amd" ? "AMD" : "NVIDIA") +
              " accelerator in the " + t.name + " target",
          remedy);
      return;
    }
    if (t.name == "cuda") CheckCudaArch(t, field, *gpu);
    if (t.name == "rocm") CheckRocmArch(t, field, *gpu);
    if (project_.config.training.precision == "bf16" && gpu->bf16_dense_tflops <= 0) {
      Add("compat.precision", field,
          gpu->name + " has no bf16 tensor cores but the config trains in bf16",
          "train in fp16 with loss scaling on " + gpu->name +
              ", or target an accelerator with bf16 (A100 or newer)");
    }
  }

  void CheckCudaArch(const Target& t, const std::string& field, const GpuModel& gpu) {
    auto cuda = ParseVersion(t.cuda);
    if (!cuda) return;
    std::vector<int> sms = catalog_.CudaArchitectures(*cuda);
    if (sms.empty()) return;  // unknown release: reported by CheckCudaDriver
    if (std::find(sms.begin(), sms.end(), gpu.compute_capability) == sms.end()) {
      Add("compat.arch", field,
          gpu.name + " (" + SmName(gpu.compute_capability) + ") is not supported by CUDA " +
              t.cuda + ", which builds for " + SmName(sms.front()) + " to " + SmName(sms.back()),
          "use a CUDA release that still supports " + SmName(gpu.compute_capability) +
              " (and its torch build), or drop " + gpu.name + " from the target");
    }
  }

  void CheckRocmArch(const Target& t, const std::string& field, const GpuModel& gpu) {
    auto rocm = ParseVersion(t.rocm);
    if (!rocm) return;
    std::vector<std::string> gfx = catalog_.RocmArchitectures(*rocm);
    if (std::find(gfx.begin(), gfx.end(), gpu.gfx) == gfx.end()) {
      Add("compat.arch", field, gpu.name + " (" + gpu.gfx + ") is not supported by ROCm " + t.rocm,
          "use a ROCm release that lists " + gpu.gfx + " among its supported GPUs");
    }
  }

  void CheckTorchTag(const Target& t, const std::string& prefix) {
    auto torch = ParseVersion(t.torch);
    if (!torch || torch->local.empty()) return;
    const std::string field = prefix + "torch";
    const TorchBuildTag* tag = catalog_.FindTorchTag(torch->local);
    if (!tag) {
      Add("compat.torch-tag", field, "torch build tag '+" + torch->local + "' is not known",
          "use a tag from lockfiles/compat/torch-builds.toml, e.g. +cu130 or +rocm6.3");
      return;
    }
    if (tag->platform != t.name) {
      Add("compat.torch-tag", field,
          "torch " + t.torch + " is a " + tag->platform + " build but this is the " + t.name +
              " target",
          "install the " + t.name + " build of torch");
      return;
    }
    if (tag->platform == "cpu") return;
    const std::string& want = t.name == "cuda" ? t.cuda : t.rocm;
    auto tag_version = ParseVersion(tag->version);
    auto target_version = ParseVersion(want);
    if (!tag_version || !target_version) return;
    bool same_release = tag_version->major() == target_version->major() &&
                        tag_version->minor() == target_version->minor();
    if (!same_release) {
      std::string platform = t.name == "cuda" ? "CUDA" : "ROCm";
      Add("compat.torch-tag", field,
          "torch " + t.torch + " is built for " + platform + " " + tag->version +
              " but the target's " + t.name + " is " + want,
          "use the torch build for " + platform + " " + want + " (+" +
              (t.name == "cuda" ? "cu" + std::to_string(target_version->major()) +
                                      std::to_string(target_version->minor())
                                : "rocm" + std::to_string(target_version->major()) + "." +
                                      std::to_string(target_version->minor())) +
              "), or change the target's " + t.name + " version");
    }
  }

  void CheckLock() {
    for (Finding& f : LockDrift(project_)) findings_.push_back(std::move(f));
  }

  const Project& project_;
  const Catalog& catalog_;
  const Lockfile& spec_;
  std::vector<Finding> findings_;
};

}  // namespace

std::vector<Finding> CheckCompatibility(const Project& project, const Catalog& catalog) {
  if (!project.manifest) return {};
  return CompatChecker(project, catalog).Run();
}

}  // namespace trainlock
