// Loading NVML; see nvml_library.h.
#include "base/nvml_library.h"

#include <dlfcn.h>

#include <cstdio>

namespace trainlock {

NvmlLibrary::NvmlLibrary() {
  handle_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle_) return;
  auto init = Sym<int (*)()>("nvmlInit_v2");
  ok_ = init && init() == kNvmlSuccess;
}

NvmlLibrary::~NvmlLibrary() {
  if (ok_) {
    if (auto shutdown = Sym<int (*)()>("nvmlShutdown")) shutdown();
  }
  if (handle_) dlclose(handle_);
}

void* NvmlLibrary::Symbol(const char* name) const {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

std::string NvmlLibrary::UnavailableReason() const {
  if (!loaded()) {
    return "NVML not found (libnvidia-ml.so.1 cannot be loaded): no NVIDIA driver on this node or "
           "in this container";
  }
  if (!ok()) return "NVML failed to initialise: the NVIDIA driver is not running";
  return "";
}

int NvmlFieldValue(const NvmlLibrary& nvml, void* device, unsigned field_id,
                   unsigned long long& out) {
  // nvmlFieldValue_t (nvml.h): fieldId, scopeId, timestamp, latencyUsec, valueType, nvmlReturn,
  // and an 8-byte nvmlValue_t; valueType 1 unsigned int, 2 unsigned long, 3 unsigned long long.
  struct {
    unsigned field_id, scope_id;
    long long timestamp, latency_us;
    int value_type, status;
    union {
      double d;
      unsigned ui;
      unsigned long ul;
      unsigned long long ull;
    } value;
  } field{};
  field.field_id = field_id;
  const int status = nvml.Status("nvmlDeviceGetFieldValues", device, 1, &field);
  if (status != kNvmlSuccess) return status;
  if (field.status != kNvmlSuccess) return field.status;
  out = field.value_type == 1 ? field.value.ui : field.value.ull;
  return kNvmlSuccess;
}

std::string NvmlPciAddress(const NvmlLibrary& nvml, void* device) {
  // nvmlPciInfo_t (nvml.h): busIdLegacy[16], domain, bus, device, pciDeviceId, pciSubSystemId,
  // busId[32].
  struct {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
  } info{};
  if (!nvml.Call("nvmlDeviceGetPciInfo_v3", device, &info)) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x", info.domain & 0xffffu, info.bus & 0xffu,
                info.device & 0xffu);
  return text;
}

}  // namespace trainlock
