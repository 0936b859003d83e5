// The watch's NVML thread; see nvml_source.h. NVML is thread-safe: the thread makes every call
// after Start, the loop's thread none.
#include "watch/nvml_source.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "base/nvml_library.h"
#include "base/scoped_fd.h"

namespace trainlock {

// One GPU the thread watches (a member of NvmlSource::Shared, so not in an anonymous namespace).
struct NvmlWatchedGpu {
  unsigned index = 0;
  void* handle = nullptr;
  std::string pci;
  GpuHealthReading last;  // the baseline, then the last reading
  bool has_last = false;
};

namespace {

// nvml.h's event types (NVML API reference, "Event Types"): what the watch registers.
constexpr unsigned long long kNvmlEventSingleBitEcc = 0x1;
constexpr unsigned long long kNvmlEventDoubleBitEcc = 0x2;
constexpr unsigned long long kNvmlEventXidCritical = 0x8;
constexpr unsigned long long kNvmlWatchedEvents =
    kNvmlEventSingleBitEcc | kNvmlEventDoubleBitEcc | kNvmlEventXidCritical;
// At the end, at most this many queued events are read (NVML's own queue is bounded too).
constexpr int kMaxNvmlEventsDrained = 1024;

// nvmlEventData_t (nvml.h): device, eventType, eventData (the Xid of an XidCritical event, 999
// for one NVML does not know), gpuInstanceId, computeInstanceId (nvmlEventSetWait_v2's form).
struct NvmlEventData {
  void* device = nullptr;
  unsigned long long type = 0;
  unsigned long long data = 0;
  unsigned gpu_instance = 0, compute_instance = 0;
};

std::string NvmlGpuName(const NvmlWatchedGpu& gpu) {
  return "GPU " + std::to_string(gpu.index) + " " + (gpu.pci.empty() ? "?" : gpu.pci);
}

}  // namespace

struct NvmlSource::Shared {
  NvmlLibrary nvml;
  std::vector<NvmlWatchedGpu> gpus;
  std::vector<std::string> notes;
  void* event_set = nullptr;
  std::chrono::milliseconds interval{10000};
  ScopedFd wake_read, wake_write;

  std::mutex mutex;
  std::condition_variable changed;  // the queue, a stop, the thread's end
  std::deque<NvmlObservation> queue;
  bool stop = false, finish = false, exited = false;

  ~Shared() {
    if (event_set) {
      if (auto free_set = nvml.Sym<int (*)(void*)>("nvmlEventSetFree")) free_set(event_set);
    }
  }

  // Queues `o` for the loop, waiting while the queue is full; false once stopped.
  bool Push(NvmlObservation o) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return stop || queue.size() < kMaxNvmlQueue; });
    if (stop) return false;
    queue.push_back(std::move(o));
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_write.get(), &byte, 1);  // full: awake anyway
    return true;
  }
  bool Stopping() {
    std::lock_guard lock(mutex);
    return stop;
  }
  bool Finishing() {
    std::lock_guard lock(mutex);
    return finish;
  }
};

namespace {

void OpenNvmlGpus(NvmlLibrary& nvml, std::vector<NvmlWatchedGpu>& gpus,
                  std::vector<std::string>& notes) {
  unsigned count = 0;
  const int status = nvml.Status("nvmlDeviceGetCount_v2", &count);
  if (status != kNvmlSuccess)
    notes.push_back("NVML cannot count the GPUs (status " + std::to_string(status) + ")");
  for (unsigned i = 0; i < count; ++i) {
    NvmlWatchedGpu gpu;
    gpu.index = i;
    const int open = nvml.Status("nvmlDeviceGetHandleByIndex_v2", i, &gpu.handle);
    if (open != kNvmlSuccess) {
      notes.push_back("GPU " + std::to_string(i) + ": NVML cannot open it (status " +
                      std::to_string(open) + "): not watched through NVML");
      continue;
    }
    gpu.pci = NvmlPciAddress(nvml, gpu.handle);
    gpus.push_back(std::move(gpu));
  }
}

// Registers each GPU's supported events in one set; a GPU without them is named, not fatal.
void* RegisterNvmlEvents(NvmlLibrary& nvml, const std::vector<NvmlWatchedGpu>& gpus,
                         std::vector<std::string>& notes) {
  void* set = nullptr;
  if (gpus.empty()) return nullptr;
  const int created = nvml.Status("nvmlEventSetCreate", &set);
  if (created != kNvmlSuccess) {
    notes.push_back("NVML events cannot be used (nvmlEventSetCreate status " +
                    std::to_string(created) + "): readings every interval only");
    return nullptr;
  }
  for (const NvmlWatchedGpu& gpu : gpus) {
    unsigned long long supported = 0;
    int status = nvml.Status("nvmlDeviceGetSupportedEventTypes", gpu.handle, &supported);
    const unsigned long long mask = supported & kNvmlWatchedEvents;
    if (status == kNvmlSuccess && mask != 0)
      status = nvml.Status("nvmlDeviceRegisterEvents", gpu.handle, mask, set);
    if (status == kNvmlSuccess && mask == 0) status = kNvmlErrorNotSupported;
    if (status != kNvmlSuccess) {
      notes.push_back(NvmlGpuName(gpu) + ": NVML events " +
                      (status == kNvmlErrorNotSupported ? std::string("not supported")
                                                        : "status " + std::to_string(status)) +
                      ": its readings only");
    }
  }
  return set;
}

NvmlObservation ObservationOfEvent(const NvmlWatchedGpu& gpu, const NvmlEventData& event) {
  NvmlObservation o;
  o.index = gpu.index;
  o.pci = gpu.pci;
  if (event.type & kNvmlEventXidCritical) {
    o.xid = true;
    o.code = static_cast<int64_t>(event.data);
    o.detail =
        "NVML: XidCritical event, Xid " + std::to_string(event.data) + " on " + NvmlGpuName(gpu);
  } else if (event.type & kNvmlEventDoubleBitEcc) {
    o.condition = NvmlCondition::kDbeEvent;
    o.detail = "NVML: double-bit ECC event on " + NvmlGpuName(gpu);
  } else {
    o.condition = NvmlCondition::kSbeEvent;
    o.detail = "NVML: single-bit ECC event on " + NvmlGpuName(gpu);
  }
  return o;
}

// Waits up to `timeout_ms` for one event; false on a timeout or an error (then after waiting,
// so that a failing wait never spins).
bool WaitNvmlEvent(NvmlSource::Shared& s, unsigned timeout_ms) {
  NvmlEventData event;
  int status = s.nvml.Status("nvmlEventSetWait_v2", s.event_set, &event, timeout_ms);
  if (status == NvmlLibrary::kMissing)
    status = s.nvml.Status("nvmlEventSetWait", s.event_set, &event, timeout_ms);
  if (status != kNvmlSuccess) {
    if (status != kNvmlErrorTimeout && timeout_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    return false;
  }
  for (const NvmlWatchedGpu& gpu : s.gpus) {
    if (gpu.handle == event.device && (event.type & kNvmlWatchedEvents))
      return s.Push(ObservationOfEvent(gpu, event));
  }
  return true;  // another GPU's or another type's: nothing to hand over
}

// Reads every GPU and hands over what each shows against its last reading (or baseline).
void ReadNvmlGpus(NvmlSource::Shared& s) {
  for (NvmlWatchedGpu& gpu : s.gpus) {
    const GpuHealthReading now = ReadGpuHealth(s.nvml, gpu.index, gpu.handle);
    for (GpuHealthFinding& finding : CompareGpuHealth(now, gpu.has_last ? &gpu.last : nullptr)) {
      NvmlObservation o;
      o.index = gpu.index;
      o.pci = gpu.pci;
      o.condition = finding.condition;
      o.detail = "NVML: " + NvmlGpuName(gpu) + ": " + finding.detail;
      if (!s.Push(std::move(o))) return;
    }
    gpu.last = gpu.has_last ? MergeGpuHealth(gpu.last, now) : now;
    gpu.has_last = true;
  }
}

void RunNvmlThread(const std::shared_ptr<NvmlSource::Shared>& shared) {
  // The stop signals go to the loop's thread, whose poll they interrupt.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int signal : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop_signals, signal);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  NvmlSource::Shared& s = *shared;
  auto next_read = std::chrono::steady_clock::now();
  while (!s.Stopping()) {
    if (s.Finishing()) {
      ReadNvmlGpus(s);
      for (int i = 0; s.event_set && i < kMaxNvmlEventsDrained && WaitNvmlEvent(s, 0); ++i) {
      }
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_read) {
      ReadNvmlGpus(s);
      next_read = now + s.interval;
    }
    const auto until_read =
        std::chrono::duration_cast<std::chrono::milliseconds>(next_read - now).count();
    const unsigned wait_ms =
        static_cast<unsigned>(std::clamp<int64_t>(until_read, 1, kNvmlEventWaitMs));
    if (s.event_set) {
      WaitNvmlEvent(s, wait_ms);
    } else {
      std::unique_lock lock(s.mutex);
      s.changed.wait_for(lock, std::chrono::milliseconds(wait_ms),
                         [&] { return s.stop || s.finish; });
    }
  }
  std::lock_guard lock(s.mutex);
  s.exited = true;
  s.changed.notify_all();
}

}  // namespace

NvmlSource::NvmlSource() : shared_(std::make_shared<Shared>()) {
  unavailable_reason_ = shared_->nvml.UnavailableReason();
}

NvmlSource::~NvmlSource() {
  Stop();
}

void NvmlSource::Start(std::chrono::milliseconds interval, NvmlBaseline baseline) {
  Shared& s = *shared_;
  s.interval = interval;
  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    s.notes.push_back("NVML not watched: no pipe to the loop");
    return;
  }
  s.wake_read = ScopedFd(fds[0]);
  s.wake_write = ScopedFd(fds[1]);
  OpenNvmlGpus(s.nvml, s.gpus, s.notes);
  for (NvmlWatchedGpu& gpu : s.gpus) {
    GpuHealthReading probe;
    probe.index = gpu.index;
    probe.pci = gpu.pci;
    if (const GpuHealthReading* before = baseline.For(probe)) {
      gpu.last = *before;
      gpu.has_last = true;
    }
  }
  s.event_set = RegisterNvmlEvents(s.nvml, s.gpus, s.notes);
  thread_ = std::thread(RunNvmlThread, shared_);
}

size_t NvmlSource::gpu_count() const {
  return shared_->gpus.size();
}

std::vector<std::string> NvmlSource::notes() const {
  return shared_->notes;
}

int NvmlSource::wake_fd() const {
  return shared_->wake_read.get();
}

std::vector<NvmlObservation> NvmlSource::Take() {
  char drain[256];
  while (shared_->wake_read.valid() && ::read(shared_->wake_read.get(), drain, sizeof drain) > 0) {
  }
  std::lock_guard lock(shared_->mutex);
  std::vector<NvmlObservation> taken(std::make_move_iterator(shared_->queue.begin()),
                                     std::make_move_iterator(shared_->queue.end()));
  shared_->queue.clear();
  shared_->changed.notify_all();
  return taken;
}

void NvmlSource::EndThread(bool finish, const std::function<void(NvmlObservation&&)>& sink) {
  if (!thread_.joinable()) return;
  std::unique_lock lock(shared_->mutex);
  (finish ? shared_->finish : shared_->stop) = true;
  shared_->changed.notify_all();
  // A finishing thread may wait for room in the queue: what it hands over goes to `sink`
  // between waits, so it ends without a deadlock and without losing an event.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(finish ? 10 : 2);
  while (!shared_->exited && std::chrono::steady_clock::now() < deadline) {
    shared_->changed.wait_for(lock, std::chrono::milliseconds(100));
    if (!sink) continue;
    std::deque<NvmlObservation> taken;
    taken.swap(shared_->queue);
    shared_->changed.notify_all();
    lock.unlock();
    for (NvmlObservation& o : taken) sink(std::move(o));
    lock.lock();
  }
  const bool ended = shared_->exited;
  lock.unlock();
  if (ended) {
    thread_.join();
  } else {
    thread_.detach();  // stuck in the driver; `shared_` stays alive with it
  }
  if (sink) {
    for (NvmlObservation& o : Take()) sink(std::move(o));
  }
}

void NvmlSource::Finish(const std::function<void(NvmlObservation&&)>& sink) {
  EndThread(true, sink);
}

void NvmlSource::Stop() {
  EndThread(false, {});
}

}  // namespace trainlock
