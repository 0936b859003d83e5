// The pass rules of the env.* checks (pass_rules.h): the driver, the CUDA runtime, the versions
// that trained, the GPUs and their code, their health, and the image's installed packages.
#include <algorithm>
#include <cstdint>
#include <optional>

#include "base/version.h"
#include "compat/catalog.h"
#include "compat/gpu_binary.h"
#include "report/gpu_throttle.h"
#include "report/pass_rules_internal.h"

namespace trainlock::pass_rules {
namespace {

// The major.minor of a CUDA version text ("13.0", "13.0.1"); nullopt when it is not one.
std::optional<std::pair<int64_t, int64_t>> MajorMinor(const std::string& text) {
  const auto v = ParseVersion(text);
  if (!v) return std::nullopt;
  return std::make_pair(static_cast<int64_t>(v->major()), static_cast<int64_t>(v->minor()));
}

// The torch that ran is the locked one: the same version, or its release where the runtime
// reports no local build tag ("2.11.0" for "2.11.0+cu130"; never "2.1", a prefix of another).
bool SameTorch(const std::string& have, const std::string& locked) {
  return !have.empty() && (have == locked || locked.starts_with(have + "+"));
}

const char* kUpgradeDriver = "upgrade the NVIDIA driver on this node, or run an older image";
const char* kRebuild =
    "rebuild the image from the lock (`trainlock image build`); never install into a built image";

}  // namespace

Findings Driver(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<EnvVersionMetrics>(metrics);
  Findings out;
  if (!Said(m.driver_version)) {
    Add(out, TRAINLOCK_METRIC_KEY(EnvVersionMetrics, driver_version), "it read no driver_version");
    return out;
  }
  if (!Said(m.driver_min)) return out;
  const auto have = ParseVersion(*m.driver_version), want = ParseVersion(*m.driver_min);
  if (!have || !want) {
    Add(out, TRAINLOCK_METRIC_KEY(EnvVersionMetrics, driver_version),
        "its driver_version or driver_min is not a version");
  } else if (*have < *want) {
    Add(out, TRAINLOCK_METRIC_KEY(EnvVersionMetrics, driver_version),
        "driver_version " + *m.driver_version + " is below driver_min " + *m.driver_min,
        "upgrade the NVIDIA driver on this node to " + *m.driver_min + " or newer");
  }
  return out;
}

// The driver's CUDA is at least every runtime the run loads: the image's and, for a Python
// engine, the one its torch is locked for (cuda_needed).
Findings Runtime(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<EnvVersionMetrics>(metrics);
  Findings out;
  if (!Said(m.cuda_runtime) || !Said(m.cuda_driver_supports)) {
    Add(out, TRAINLOCK_METRIC_KEY(EnvVersionMetrics, cuda_driver_supports),
        "it read no cuda_runtime and cuda_driver_supports");
    return out;
  }
  const auto driver = ParseVersion(*m.cuda_driver_supports);
  for (const Text* need : {&m.cuda_runtime, &m.cuda_needed}) {
    if (!Said(*need)) continue;
    const auto runtime = ParseVersion(**need);
    if (!runtime || !driver) {
      Add(out, TRAINLOCK_METRIC_KEY(EnvVersionMetrics, cuda_driver_supports),
          "its CUDA versions are not versions");
      return out;
    }
    if (*driver < *runtime) {
      Add(out,
          need == &m.cuda_runtime ? TRAINLOCK_METRIC_KEY(EnvVersionMetrics, cuda_runtime)
                                  : TRAINLOCK_METRIC_KEY(EnvVersionMetrics, cuda_needed),
          "cuda_driver_supports " + *m.cuda_driver_supports + " is below " +
              (need == &m.cuda_runtime ? "cuda_runtime " : "cuda_needed ") + **need,
          kUpgradeDriver);
      return out;
    }
  }
  return out;
}

Findings Versions(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<EnvVersionMetrics>(metrics);
  Findings out;
  if (!Said(m.torch))
    Add(out, TRAINLOCK_METRIC_KEY(EnvVersionMetrics, torch), "it has no torch version");
  if (Said(m.torch) && Said(m.torch_locked) && !SameTorch(*m.torch, *m.torch_locked))
    Add(out, TRAINLOCK_METRIC_KEY(EnvVersionMetrics, torch),
        "torch " + *m.torch + " is not torch_locked " + *m.torch_locked, kRebuild);
  if (Said(m.engine_python) || Said(m.engine_torch)) {
    const std::string engine = m.engine_torch.value_or("");
    if (!Said(m.torch_locked) || !SameTorch(TorchRelease(engine), TorchRelease(*m.torch_locked)))
      Add(out, TRAINLOCK_METRIC_KEY(EnvVersionMetrics, engine_torch),
          "engine_torch " + (engine.empty() ? std::string("(unknown)") : engine) +
              " is not torch_locked " + m.torch_locked.value_or("(none)"),
          kRebuild);
  }
  if (Said(m.cuda_locked)) {
    const auto have = MajorMinor(m.cuda_runtime.value_or("")), pin = MajorMinor(*m.cuda_locked);
    if (!have || !pin || *have != *pin)
      Add(out, TRAINLOCK_METRIC_KEY(EnvVersionMetrics, cuda_runtime),
          "cuda_runtime " + m.cuda_runtime.value_or("(none)") + " is not cuda_locked " +
              *m.cuda_locked,
          kRebuild);
  }
  if (Said(m.nccl_locked) && m.nccl.value_or("") != *m.nccl_locked)
    Add(out, TRAINLOCK_METRIC_KEY(EnvVersionMetrics, nccl),
        "nccl " + m.nccl.value_or("(none)") + " is not nccl_locked " + *m.nccl_locked, kRebuild);
  if (Said(m.cudnn_locked)) {
    const auto have = ParseVersion(m.cudnn.value_or("")), pin = ParseVersion(*m.cudnn_locked);
    if (!have || !pin || !have->MatchesPin(*pin))
      Add(out, TRAINLOCK_METRIC_KEY(EnvVersionMetrics, cudnn),
          "cudnn " + m.cudnn.value_or("(none)") + " is not cudnn_locked " + *m.cudnn_locked,
          kRebuild);
  }
  return out;
}

// At least one GPU, and each one's model among the target's accelerators when it names any.
Findings Devices(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<EnvDeviceMetrics>(metrics);
  Findings out;
  if (!m.count || *m.count < 1) {
    Add(out, TRAINLOCK_METRIC_KEY(EnvDeviceMetrics, count), "it counted no device",
        "check that the container was given the GPUs");
    return out;
  }
  if (!m.accelerators || !m.accelerators->is_array() || m.accelerators->empty()) return out;
  if (!m.gpu_names || !m.gpu_names->is_array() ||
      static_cast<int64_t>(m.gpu_names->size()) != *m.count) {
    Add(out, TRAINLOCK_METRIC_KEY(EnvDeviceMetrics, gpu_names),
        "it names no model for each of its count GPUs");
    return out;
  }
  const Catalog catalog = Catalog::Embedded();
  for (const Json& name : *m.gpu_names) {
    const GpuModel* model = name.is_string() ? catalog.FindGpu(name.get<std::string>()) : nullptr;
    const bool listed =
        model && std::any_of(m.accelerators->begin(), m.accelerators->end(), [&](const Json& a) {
          return a.is_string() && catalog.FindGpu(a.get<std::string>()) == model;
        });
    if (!listed)
      Add(out, TRAINLOCK_METRIC_KEY(EnvDeviceMetrics, gpu_names),
          "gpu_names lists " + name.dump() + ", not among accelerators",
          "run on a node with the locked accelerators, or add this model to the target and "
          "re-lock");
  }
  return out;
}

namespace {

// A library row of env.arch's `libraries` as the ELF inspection read it.
GpuBinaryInfo LibraryCode(const Json& row) {
  GpuBinaryInfo info;
  if (auto sass = row.find("sass"); sass != row.end() && sass->is_array())
    for (const Json& sm : *sass)
      if (sm.is_number_integer()) info.sass.push_back(sm.get<int>());
  if (auto ptx = row.find("ptx"); ptx != row.end() && ptx->is_array()) {
    for (const Json& p : *ptx) {
      if (!p.is_array() || p.size() != 3 || !p[0].is_number_integer() ||
          !p[1].is_number_integer() || !p[2].is_number_integer())
        continue;
      info.ptx.push_back({p[0].get<int>(), p[1].get<int>(), p[2].get<int>()});
    }
  }
  return info;
}

}  // namespace

// A known-answer kernel ran on every GPU, and every CUDA library carries code each GPU runs
// (SASS of its architecture, or PTX its driver can JIT).
Findings Arch(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<EnvDeviceMetrics>(metrics);
  Findings out;
  if (!m.launches || !m.launches->is_array() || m.launches->empty()) {
    Add(out, TRAINLOCK_METRIC_KEY(EnvDeviceMetrics, launches), "it launched no kernel (launches)");
    return out;
  }
  for (const Json& launch : *m.launches) {
    const auto ok = launch.is_object() ? launch.find("launch_ok") : launch.end();
    if (ok == launch.end() || !ok->is_boolean() || !ok->get<bool>())
      Add(out, TRAINLOCK_METRIC_KEY(EnvDeviceMetrics, launches),
          "a launch did not give the known answer (launch_ok)");
  }
  if (!m.gpu_sms || !m.gpu_sms->is_array() || m.gpu_sms->size() != m.launches->size()) {
    Add(out, TRAINLOCK_METRIC_KEY(EnvDeviceMetrics, gpu_sms),
        "gpu_sms does not name the architecture of each GPU launched on");
    return out;
  }
  if (!m.libraries || !m.libraries->is_array() || m.libraries->empty()) {
    Add(out, TRAINLOCK_METRIC_KEY(EnvDeviceMetrics, libraries),
        "it inspected no CUDA library (libraries)");
    return out;
  }
  for (const Json& row : *m.libraries) {
    const GpuBinaryInfo code = row.is_object() ? LibraryCode(row) : GpuBinaryInfo{};
    for (const Json& sm : *m.gpu_sms) {
      std::string why;
      if (!sm.is_number_integer() ||
          !CudaCodeRunsOn(code, sm.get<int>(), static_cast<int>(m.cuda_driver.value_or(0)), &why))
        Add(out, TRAINLOCK_METRIC_KEY(EnvDeviceMetrics, libraries),
            "libraries: " + (row.is_object() ? row.value("path", std::string("?")) : "?") +
                " on sm_" + sm.dump() + ": " + why,
            "use a torch build (and custom-op libraries) compiled for this GPU's architecture, "
            "or with PTX the driver can JIT");
    }
  }
  return out;
}

Findings Packages(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<PackagesMetrics>(metrics);
  Findings out;
  if (Said(m.python_problem))
    Add(out, TRAINLOCK_METRIC_KEY(PackagesMetrics, python_problem), *m.python_problem, kRebuild);
  for (auto [list, name] :
       {std::pair{&m.python_files_changed,
                  TRAINLOCK_METRIC_KEY(PackagesMetrics, python_files_changed)},
        {&m.python_files_missing, TRAINLOCK_METRIC_KEY(PackagesMetrics, python_files_missing)},
        {&m.python_files_added, TRAINLOCK_METRIC_KEY(PackagesMetrics, python_files_added)},
        {&m.python_files_refused, TRAINLOCK_METRIC_KEY(PackagesMetrics, python_files_refused)}}) {
    if (Lists(*list)) Add(out, name, std::string(name) + " lists files", kRebuild);
  }
  if (!out.empty()) return out;  // no Python ran: nothing below was compared
  if (!m.packages_locked || *m.packages_locked <= 0)
    Add(out, TRAINLOCK_METRIC_KEY(PackagesMetrics, packages_locked),
        "it compared no locked wheel (packages_locked)");
  if (!m.packages_installed)
    Add(out, TRAINLOCK_METRIC_KEY(PackagesMetrics, packages_installed),
        "it counted no installed distribution");
  for (auto [list, name] :
       {std::pair{&m.packages_missing, TRAINLOCK_METRIC_KEY(PackagesMetrics, packages_missing)},
        {&m.packages_changed, TRAINLOCK_METRIC_KEY(PackagesMetrics, packages_changed)},
        {&m.packages_added, TRAINLOCK_METRIC_KEY(PackagesMetrics, packages_added)},
        {&m.packages_twice, TRAINLOCK_METRIC_KEY(PackagesMetrics, packages_twice)},
        {&m.packages_malformed, TRAINLOCK_METRIC_KEY(PackagesMetrics, packages_malformed)},
        {&m.files_changed, TRAINLOCK_METRIC_KEY(PackagesMetrics, files_changed)},
        {&m.files_missing, TRAINLOCK_METRIC_KEY(PackagesMetrics, files_missing)},
        {&m.files_unowned, TRAINLOCK_METRIC_KEY(PackagesMetrics, files_unowned)},
        {&m.files_unreadable, TRAINLOCK_METRIC_KEY(PackagesMetrics, files_unreadable)},
        {&m.debs_missing, TRAINLOCK_METRIC_KEY(PackagesMetrics, debs_missing)},
        {&m.debs_changed, TRAINLOCK_METRIC_KEY(PackagesMetrics, debs_changed)}}) {
    if (Lists(*list)) Add(out, name, std::string(name) + " is not empty", kRebuild);
  }
  if (!m.files_problems || *m.files_problems != 0)
    Add(out, TRAINLOCK_METRIC_KEY(PackagesMetrics, files_problems), "files_problems is not 0",
        kRebuild);
  if (m.debs_locked && *m.debs_locked > 0 && (!m.debs_missing || !m.debs_changed))
    Add(out, TRAINLOCK_METRIC_KEY(PackagesMetrics, debs_locked),
        "it pins Debian packages it did not compare (debs_locked)");
  return out;
}

}  // namespace trainlock::pass_rules
