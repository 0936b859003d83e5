// NVML through dlopen; see nvml_probe.h. Declares only the few NVML entry points used, with
// the C signatures of nvml.h (all return nvmlReturn_t, 0 = NVML_SUCCESS).
#include "probes/nvml_probe.h"

#include <dlfcn.h>

#include <memory>

namespace trainlock::validate {
// Named, not anonymous: NvmlSession (nvml_probe.h) holds one.
namespace nvml_dl {

class Nvml {
 public:
  Nvml() {
    handle_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle_) return;
    auto init = Sym<int (*)()>("nvmlInit_v2");
    ok_ = init && init() == 0;
  }
  ~Nvml() {
    if (ok_) {
      if (auto shutdown = Sym<int (*)()>("nvmlShutdown")) shutdown();
    }
    if (handle_) dlclose(handle_);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool ok() const { return ok_; }
  bool loaded() const { return handle_ != nullptr; }

  template <typename F>
  F Sym(const char* name) const {
    return handle_ ? reinterpret_cast<F>(dlsym(handle_, name)) : nullptr;
  }
  // Calls an NVML function if it exists: its nvmlReturn_t, or kMissing when the driver's NVML
  // lacks it.
  static constexpr int kMissing = -1;
  template <typename... Args>
  int Status(const char* name, Args... args) const {
    auto f = Sym<int (*)(Args...)>(name);
    return f ? f(args...) : kMissing;
  }
  // True on NVML_SUCCESS.
  template <typename... Args>
  bool Call(const char* name, Args... args) const {
    return Status(name, args...) == 0;
  }

 private:
  void* handle_ = nullptr;
  bool ok_ = false;
};

}  // namespace nvml_dl

namespace {

using nvml_dl::Nvml;
using Device = void*;
struct Memory {
  unsigned long long total, free, used;
};

// Why `nvml` cannot be used, "" when it can.
std::string NvmlUnavailableReason(const Nvml& nvml) {
  if (!nvml.loaded()) {
    return "NVML not found (libnvidia-ml.so.1 cannot be loaded): no NVIDIA driver on this node or "
           "in this container";
  }
  if (!nvml.ok()) return "NVML failed to initialise: the NVIDIA driver is not running";
  return "";
}

// The clocks-event call replaced the throttle-reasons one; older drivers have only the latter.
const char* ClocksEventReasonsCall(const Nvml& nvml) {
  return nvml.Sym<void*>("nvmlDeviceGetCurrentClocksEventReasons")
             ? "nvmlDeviceGetCurrentClocksEventReasons"
             : "nvmlDeviceGetCurrentClocksThrottleReasons";
}

constexpr int kNvmlNotSupported = 3;  // NVML_ERROR_NOT_SUPPORTED

// Calls `fn`; on success `read()` stores the result. A field the device does not support is
// named in `g.not_supported`; any other failure leaves it empty, that is unknown.
template <typename Read, typename... Args>
void Probe(const Nvml& nvml, GpuProbe& g, const char* field, Read read, const char* fn,
           Args... args) {
  const int status = nvml.Status(fn, args...);
  if (status == 0) {
    read();
  } else if (status == kNvmlNotSupported) {
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
  int pending = 0;
  Probe(
      nvml, g, "retired_pages_pending", [&] { g.retired_pages_pending = pending == 1; },
      "nvmlDeviceGetRetiredPagesPendingStatus", d, &pending);
  unsigned corrected = 0, uncorrected = 0, is_pending = 0, failed = 0;
  Probe(
      nvml, g, "remapped_rows",
      [&] {
        g.remapped_rows_uncorrectable = uncorrected;
        g.remap_pending = is_pending != 0;
        g.remap_failed = failed != 0;
      },
      "nvmlDeviceGetRemappedRows", d, &corrected, &uncorrected, &is_pending, &failed);
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
  node.unavailable_reason = NvmlUnavailableReason(nvml);
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
  unavailable_reason_ = NvmlUnavailableReason(*nvml_);
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
