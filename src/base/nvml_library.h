// NVIDIA's management library (NVML) loaded with dlopen: the one loader for everything that
// reads NVML (the validator's probes, the watch's events and readings), so that one binary runs
// on nodes without an NVIDIA driver, where a missing library is a reason, not a link error.
// Declares only the C calling convention of nvml.h (every entry point returns nvmlReturn_t,
// 0 = NVML_SUCCESS); each caller names the entry points it uses.
#pragma once

#include <string>

namespace trainlock {

// nvmlReturn_t values the callers name (nvml.h, "Return values for NVML API calls").
inline constexpr int kNvmlSuccess = 0;
inline constexpr int kNvmlErrorNotSupported = 3;
inline constexpr int kNvmlErrorTimeout = 10;
inline constexpr int kNvmlErrorGpuIsLost = 15;

class NvmlLibrary {
 public:
  // Loads libnvidia-ml.so.1 (found as the dynamic loader finds it: LD_LIBRARY_PATH, the cache)
  // and initialises NVML (nvmlInit_v2); nvmlShutdown and dlclose on destruction.
  NvmlLibrary();
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  bool ok() const { return ok_; }
  bool loaded() const { return handle_ != nullptr; }
  // Why NVML cannot be used, "" when it can.
  std::string UnavailableReason() const;

  template <typename F>
  F Sym(const char* name) const {
    return reinterpret_cast<F>(Symbol(name));
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
    return Status(name, args...) == kNvmlSuccess;
  }

 private:
  void* Symbol(const char* name) const;

  void* handle_ = nullptr;
  bool ok_ = false;
};

// NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, the field id of the action the driver says a GPU needs
// (nvml.h's field ids; NVIDIA's NVML API reference, "Field Value Enums"): its value is an
// nvmlDeviceGpuRecoveryAction_t, 0 NONE, 1 GPU_RESET, 2 NODE_REBOOT, 3 DRAIN_P2P,
// 4 DRAIN_AND_RESET (drivers from R570; later headers add 5 GPU_RESET_BUS).
inline constexpr unsigned kNvmlFieldGpuRecoveryAction = 230;

// One unsigned field of `device` through nvmlDeviceGetFieldValues: the call's status, or the
// field's own status when the call succeeded (NOT_SUPPORTED for a field the driver lacks).
int NvmlFieldValue(const NvmlLibrary& nvml, void* device, unsigned field_id,
                   unsigned long long& out);

// A device's PCI address as the kernel log names it, "0000:3b:00" (domain:bus:device, lower
// case, the function dropped: nvmlDeviceGetPciInfo_v3's domain, bus and device); "" when NVML
// cannot say.
std::string NvmlPciAddress(const NvmlLibrary& nvml, void* device);

}  // namespace trainlock
