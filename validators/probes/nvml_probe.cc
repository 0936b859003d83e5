// NVML's readings of the node; see nvml_probe.h. NVML itself is loaded by base/nvml_library.h;
// the entry points used here are called with the C signatures of nvml.h.
#include "probes/nvml_probe.h"

#include "base/nvml_library.h"

#include <dlfcn.h>

#include <memory>

namespace trainlock::validate {

namespace {

using Nvml = NvmlLibrary;
using Device = void*;
struct Memory {
  unsigned long long total, free, used;
};

// The clocks-event call replaced the throttle-reasons one; older drivers have only the latter.
const char* ClocksEventReasonsCall(const Nvml& nvml) {
  return nvml.Sym<void*>("nvmlDeviceGetCurrentClocksEventReasons")
             ? "nvmlDeviceGetCurrentClocksEventReasons"
             : "nvmlDeviceGetCurrentClocksThrottleReasons";
}

// Calls `fn`; on success `read()` stores the result. A field the device does not support is
// named in `g.not_supported`; any other failure leaves it empty, that is unknown.
template <typename Read, typename... Args>
void Probe(const Nvml& nvml, GpuProbe& g, const char* field, Read read, const char* fn,
           Args... args) {
  const int status = nvml.Status(fn, args...);
  if (status == 0) {
    read();
  } else if (status == kNvmlErrorNotSupported) {
    g.not_supported.push_back(field);
  }
}

// A single-valued getter `fn(device, &value)` into `out`.
template <typename T, typename Out>
void ProbeValue(const Nvml& nvml, GpuProbe& g, const char* field, std::optional<Out>& out,
                const char* fn, Device d) {
  T value{};
  Probe(
      nvml, g, field, [&] { out = static_cast<Out>(value); }, fn, d, &value);
}

// ECC, retired pages, row remapping and temperature: what env.health judges.
void ProbeHealth(const Nvml& nvml, GpuProbe& g, Device d) {
  int ecc_current = 0, ecc_pending = 0;
  Probe(
      nvml, g, "ecc_enabled", [&] { g.ecc_enabled = ecc_current == 1; }, "nvmlDeviceGetEccMode", d,
      &ecc_current, &ecc_pending);
  unsigned long long count = 0;
  // errorType 1 = uncorrected; counterType 0 = volatile, 1 = aggregate.
  Probe(
      nvml, g, "ecc_uncorrected_volatile", [&] { g.ecc_uncorrected_volatile = count; },
      "nvmlDeviceGetTotalEccErrors", d, 1, 0, &count);
  Probe(
      nvml, g, "ecc_uncorrected_aggregate", [&] { g.ecc_uncorrected_aggregate = count; },
      "nvmlDeviceGetTotalEccErrors", d, 1, 1, &count);
  // errorType 0 = corrected: not judged here, the watch's baseline for single-bit errors.
  Probe(
      nvml, g, "ecc_corrected_volatile", [&] { g.ecc_corrected_volatile = count; },
      "nvmlDeviceGetTotalEccErrors", d, 0, 0, &count);
  Probe(
      nvml, g, "ecc_corrected_aggregate", [&] { g.ecc_corrected_aggregate = count; },
      "nvmlDeviceGetTotalEccErrors", d, 0, 1, &count);
  int pending = 0;
  Probe(
      nvml, g, "retired_pages_pending", [&] { g.retired_pages_pending = pending == 1; },
      "nvmlDeviceGetRetiredPagesPendingStatus", d, &pending);
  unsigned corrected = 0, uncorrected = 0, is_pending = 0, failed = 0;
  Probe(
      nvml, g, "remapped_rows",
      [&] {
        g.remapped_rows_uncorrectable = uncorrected;
        g.remapped_rows_correctable = corrected;
        g.remap_pending = is_pending != 0;
        g.remap_failed = failed != 0;
      },
      "nvmlDeviceGetRemappedRows", d, &corrected, &uncorrected, &is_pending, &failed);
  unsigned long long action = 0;
  const int action_status = NvmlFieldValue(nvml, d, kNvmlFieldGpuRecoveryAction, action);
  if (action_status == kNvmlSuccess) g.recovery_action = static_cast<unsigned>(action);
  if (action_status == kNvmlErrorNotSupported) g.not_supported.push_back("recovery_action");
  unsigned value = 0;
  // Sensor 0 is the GPU die; threshold 1 is NVML_TEMPERATURE_THRESHOLD_SLOWDOWN.
  Probe(
      nvml, g, "temperature_c", [&] { g.temperature_c = value; }, "nvmlDeviceGetTemperature", d, 0,
      &value);
  Probe(
      nvml, g, "temperature_slowdown_c", [&] { g.temperature_slowdown_c = value; },
      "nvmlDeviceGetTemperatureThreshold", d, 1, &value);
}

// Power, clocks, throttle reasons, the PCIe link, persistence and MIG.
void ProbeClocksAndLink(const Nvml& nvml, GpuProbe& g, Device d) {
  ProbeValue<unsigned>(nvml, g, "power_mw", g.power_mw, "nvmlDeviceGetPowerUsage", d);
  ProbeValue<unsigned>(nvml, g, "power_limit_mw", g.power_limit_mw,
                       "nvmlDeviceGetEnforcedPowerLimit", d);
  unsigned value = 0;
  if (nvml.Call("nvmlDeviceGetClockInfo", d, 1, &value)) g.sm_clock_mhz = value;  // 1 = SM
  if (nvml.Call("nvmlDeviceGetMaxClockInfo", d, 1, &value)) g.sm_clock_max_mhz = value;
  if (nvml.Call("nvmlDeviceGetClockInfo", d, 2, &value)) g.mem_clock_mhz = value;  // 2 = memory
  const char* reasons = ClocksEventReasonsCall(nvml);
  ProbeValue<unsigned long long>(nvml, g, "throttle_reasons", g.throttle_reasons, reasons, d);
  ProbeValue<unsigned>(nvml, g, "pcie_gen", g.pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration", d);
  ProbeValue<unsigned>(nvml, g, "pcie_gen_max", g.pcie_gen_max,
                       "nvmlDeviceGetMaxPcieLinkGeneration", d);
  ProbeValue<unsigned>(nvml, g, "pcie_gen_gpu_max", g.pcie_gen_gpu_max,
                       "nvmlDeviceGetGpuMaxPcieLinkGeneration", d);
  ProbeValue<unsigned>(nvml, g, "pcie_width", g.pcie_width, "nvmlDeviceGetCurrPcieLinkWidth", d);
  ProbeValue<unsigned>(nvml, g, "pcie_width_max", g.pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth",
                       d);
  int mode = 0;
  if (nvml.Call("nvmlDeviceGetPersistenceMode", d, &mode)) g.persistence = mode == 1;
  int mig_current = 0, mig_pending = 0;
  if (nvml.Call("nvmlDeviceGetMigMode", d, &mig_current, &mig_pending)) g.mig = mig_current == 1;
}

GpuProbe ProbeGpu(const Nvml& nvml, unsigned index, Device d) {
  GpuProbe g;
  g.index = index;
  char text[128] = {};
  if (nvml.Call("nvmlDeviceGetName", d, text, 128u)) g.name = text;
  if (nvml.Call("nvmlDeviceGetUUID", d, text, 128u)) g.uuid = text;
  g.pci = NvmlPciAddress(nvml, d);
  Memory memory{};
  if (nvml.Call("nvmlDeviceGetMemoryInfo", d, &memory)) {
    g.memory_total_bytes = memory.total;
    g.memory_used_bytes = memory.used;
  }
  nvml.Call("nvmlDeviceGetCudaComputeCapability", d, &g.cc_major, &g.cc_minor);
  ProbeHealth(nvml, g, d);
  ProbeClocksAndLink(nvml, g, d);
  return g;
}

}  // namespace

NodeProbe ProbeNode() {
  NodeProbe node;
  Nvml nvml;
  node.unavailable_reason = nvml.UnavailableReason();
  if (!node.unavailable_reason.empty()) return node;
  node.nvml_loaded = true;
  char version[96] = {};
  if (nvml.Call("nvmlSystemGetDriverVersion", version, 96u)) node.driver_version = version;
  if (!nvml.Call("nvmlSystemGetCudaDriverVersion_v2", &node.cuda_driver_version)) {
    nvml.Call("nvmlSystemGetCudaDriverVersion", &node.cuda_driver_version);
  }
  unsigned count = 0;
  node.count_status = nvml.Status("nvmlDeviceGetCount_v2", &count);
  for (unsigned i = 0; i < count; ++i) {
    Device d = nullptr;
    const int status = nvml.Status("nvmlDeviceGetHandleByIndex_v2", i, &d);
    if (status == 0) {
      node.gpus.push_back(ProbeGpu(nvml, i, d));
    } else {
      node.unopened.push_back({i, status});  // a lost GPU must not vanish from the evidence
    }
  }
  return node;
}

std::string UnopenedGpuFault(int nvml_status) {
  switch (nvml_status) {
    case 4:  // NVML_ERROR_NO_PERMISSION
      return "";
    case 8:
      return "fault: NVML_ERROR_INSUFFICIENT_POWER (a power cable is not seated)";
    case 11:
      return "fault: NVML_ERROR_IRQ_ISSUE (the kernel reported an interrupt problem)";
    case 14:
      return "fault: NVML_ERROR_CORRUPTED_INFOROM";
    case 15:
      return "fault: NVML_ERROR_GPU_IS_LOST (it fell off the bus)";
    case 16:
      return "fault: NVML_ERROR_RESET_REQUIRED";
    default:
      return "unknown: NVML status " + std::to_string(nvml_status);
  }
}

NvmlSession::NvmlSession() : nvml_(std::make_unique<Nvml>()) {
  unavailable_reason_ = nvml_->UnavailableReason();
  if (!unavailable_reason_.empty()) return;
  unsigned count = 0;
  nvml_->Call("nvmlDeviceGetCount_v2", &count);
  for (unsigned i = 0; i < count; ++i) {
    Device d = nullptr;
    if (!nvml_->Call("nvmlDeviceGetHandleByIndex_v2", i, &d)) continue;
    NvmlGpu gpu;
    gpu.index = i;
    gpu.handle = d;
    char text[128] = {};
    if (nvml_->Call("nvmlDeviceGetUUID", d, text, 128u)) gpu.uuid = text;
    unsigned limit = 0;
    if (nvml_->Call("nvmlDeviceGetEnforcedPowerLimit", d, &limit)) gpu.power_limit_mw = limit;
    if (nvml_->Call("nvmlDeviceGetPowerManagementDefaultLimit", d, &limit))
      gpu.default_power_limit_mw = limit;
    if (nvml_->Call("nvmlDeviceGetName", d, text, 128u)) gpu.name = text;
    unsigned clock = 0;
    if (nvml_->Call("nvmlDeviceGetMaxClockInfo", d, 1, &clock)) gpu.max_sm_clock_mhz = clock;  // SM
    gpus_.push_back(gpu);
  }
}

NvmlSession::~NvmlSession() = default;

GpuReading NvmlSession::Read(const NvmlGpu& gpu) const {
  GpuReading r;
  Device d = gpu.handle;
  unsigned value = 0;
  if (nvml_->Call("nvmlDeviceGetPowerUsage", d, &value)) r.power_mw = value;
  if (nvml_->Call("nvmlDeviceGetTemperature", d, 0, &value)) r.temperature_c = value;  // 0: die
  if (nvml_->Call("nvmlDeviceGetClockInfo", d, 1, &value)) r.sm_clock_mhz = value;     // 1: SM
  struct {
    unsigned gpu, memory;  // nvmlUtilization_t, percent
  } utilization{};
  if (nvml_->Call("nvmlDeviceGetUtilizationRates", d, &utilization))
    r.utilization_pct = utilization.gpu;
  unsigned long long reasons = 0;
  if (nvml_->Call(ClocksEventReasonsCall(*nvml_), d, &reasons)) r.clocks_event_reasons = reasons;
  return r;
}

int LoadedNcclVersion() {
  void* nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
  if (!nccl) return 0;
  int version = 0;
  auto get = reinterpret_cast<int (*)(int*)>(dlsym(nccl, "ncclGetVersion"));
  if (!get || get(&version) != 0) version = 0;
  dlclose(nccl);
  return version;
}

int LoadedCudnnVersion() {
  for (const char* name : {"libcudnn.so.9", "libcudnn.so.8"}) {
    void* cudnn = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    if (!cudnn) continue;
    auto get = reinterpret_cast<size_t (*)()>(dlsym(cudnn, "cudnnGetVersion"));
    const size_t version = get ? get() : 0;
    dlclose(cudnn);
    if (version > 0 && version < 1000000) return static_cast<int>(version);
  }
  return 0;
}

}  // namespace trainlock::validate
