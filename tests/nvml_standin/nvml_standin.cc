// A test-only stand-in for NVIDIA's management library, built as libnvidia-ml.so.1 so that the
// product loads it as it loads the driver's (dlopen through LD_LIBRARY_PATH), on machines
// without a GPU. It implements only the entry points trainlock calls, with nvml.h's C
// signatures, and its GPUs, readings and queued events come from the file that
// TRAINLOCK_NVML_STANDIN names, one statement a line ('#' starts a comment):
//
//   gpu pci=0000:3b:00 remap=CORR,UNCORR,PENDING,FAILED ecc=UV,UA,CV,CA recovery=N
//       events=xid,dbe,sbe|none lost=0|1        a GPU (indexed in order), every key optional
//   event INDEX xid N | dbe | sbe               an event nvmlEventSetWait_v2 returns, in order
//
// Without the variable, or with a file that does not read, nvmlInit_v2 fails (status 9,
// NVML_ERROR_DRIVER_NOT_LOADED).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kSuccess = 0, kInvalidArgument = 2, kNotSupported = 3, kDriverNotLoaded = 9;
constexpr int kTimeout = 10, kGpuIsLost = 15;
constexpr unsigned long long kSbe = 0x1, kDbe = 0x2, kXid = 0x8;

struct StandInGpu {
  std::string pci = "0000:00:00";
  unsigned remap[4] = {0, 0, 0, 0};
  unsigned long long ecc[4] = {0, 0, 0, 0};  // uncorrected volatile, aggregate; corrected v, a
  unsigned long long recovery = 0;
  unsigned long long events = kSbe | kDbe | kXid;
  bool lost = false;
};

struct StandInEvent {
  size_t gpu = 0;
  unsigned long long type = 0, data = 0;
};

std::mutex g_mutex;
std::vector<StandInGpu> g_gpus;
std::deque<StandInEvent> g_events;
int g_event_set = 0;  // its address is the event set handle

void ReadGpuKey(StandInGpu& gpu, const std::string& key, const std::string& value) {
  if (key == "pci") gpu.pci = value;
  if (key == "remap")
    std::sscanf(value.c_str(), "%u,%u,%u,%u", &gpu.remap[0], &gpu.remap[1], &gpu.remap[2],
                &gpu.remap[3]);
  if (key == "ecc")
    std::sscanf(value.c_str(), "%llu,%llu,%llu,%llu", &gpu.ecc[0], &gpu.ecc[1], &gpu.ecc[2],
                &gpu.ecc[3]);
  if (key == "recovery") gpu.recovery = std::strtoull(value.c_str(), nullptr, 10);
  if (key == "lost") gpu.lost = value == "1";
  if (key == "events") {
    gpu.events = 0;
    if (value.find("xid") != std::string::npos) gpu.events |= kXid;
    if (value.find("dbe") != std::string::npos) gpu.events |= kDbe;
    if (value.find("sbe") != std::string::npos) gpu.events |= kSbe;
  }
}

bool ReadScript(const char* path) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string verb;
    words >> verb;
    if (verb == "gpu") {
      StandInGpu gpu;
      for (std::string kv; words >> kv;) {
        const size_t eq = kv.find('=');
        if (eq != std::string::npos) ReadGpuKey(gpu, kv.substr(0, eq), kv.substr(eq + 1));
      }
      g_gpus.push_back(gpu);
    } else if (verb == "event") {
      StandInEvent event;
      std::string type;
      words >> event.gpu >> type >> event.data;
      event.type = type == "xid" ? kXid : type == "dbe" ? kDbe : kSbe;
      g_events.push_back(event);
    }
  }
  return true;
}

StandInGpu* Gpu(void* device) {
  return static_cast<StandInGpu*>(device);
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  std::lock_guard lock(g_mutex);
  g_gpus.clear();
  g_events.clear();
  const char* script = std::getenv("TRAINLOCK_NVML_STANDIN");
  return script && ReadScript(script) ? kSuccess : kDriverNotLoaded;
}

int nvmlShutdown() {
  return kSuccess;
}

int nvmlDeviceGetCount_v2(unsigned* count) {
  *count = static_cast<unsigned>(g_gpus.size());
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (index >= g_gpus.size()) return kInvalidArgument;
  *device = &g_gpus[index];
  return kSuccess;
}

int nvmlDeviceGetPciInfo_v3(void* device, void* info) {
  struct PciInfo {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
  } pci{};
  std::sscanf(Gpu(device)->pci.c_str(), "%x:%x:%x", &pci.domain, &pci.bus, &pci.device);
  std::memcpy(info, &pci, sizeof pci);
  return kSuccess;
}

int nvmlDeviceGetRemappedRows(void* device, unsigned* corrected, unsigned* uncorrected,
                              unsigned* pending, unsigned* failed) {
  const StandInGpu& gpu = *Gpu(device);
  if (gpu.lost) return kGpuIsLost;
  *corrected = gpu.remap[0];
  *uncorrected = gpu.remap[1];
  *pending = gpu.remap[2];
  *failed = gpu.remap[3];
  return kSuccess;
}

int nvmlDeviceGetTotalEccErrors(void* device, int error_type, int counter,
                                unsigned long long* count) {
  const StandInGpu& gpu = *Gpu(device);
  if (gpu.lost) return kGpuIsLost;
  *count = gpu.ecc[(error_type == 1 ? 0 : 2) + (counter == 1 ? 1 : 0)];
  return kSuccess;
}

int nvmlDeviceGetFieldValues(void* device, int count, void* values) {
  struct FieldValue {
    unsigned field_id, scope_id;
    long long timestamp, latency_us;
    int value_type, status;
    unsigned long long value;
  };
  auto* fields = static_cast<FieldValue*>(values);
  for (int i = 0; i < count; ++i) {
    fields[i].status = fields[i].field_id == 230 ? kSuccess : kNotSupported;
    fields[i].value_type = 3;  // unsigned long long
    fields[i].value = Gpu(device)->recovery;
  }
  return kSuccess;
}

int nvmlEventSetCreate(void** set) {
  *set = &g_event_set;
  return kSuccess;
}

int nvmlEventSetFree(void*) {
  return kSuccess;
}

int nvmlDeviceGetSupportedEventTypes(void* device, unsigned long long* types) {
  *types = Gpu(device)->events;
  return *types ? kSuccess : kNotSupported;
}

int nvmlDeviceRegisterEvents(void* device, unsigned long long types, void*) {
  return (types & ~Gpu(device)->events) ? kNotSupported : kSuccess;
}

int nvmlEventSetWait_v2(void*, void* data, unsigned timeout_ms) {
  struct EventData {
    void* device;
    unsigned long long type, data;
    unsigned gpu_instance, compute_instance;
  };
  {
    std::lock_guard lock(g_mutex);
    if (!g_events.empty()) {
      const StandInEvent event = g_events.front();
      g_events.pop_front();
      EventData out{&g_gpus.at(event.gpu), event.type, event.data, 0xffffffffu, 0xffffffffu};
      std::memcpy(data, &out, sizeof out);
      return kSuccess;
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
  return kTimeout;
}

}  // extern "C"
