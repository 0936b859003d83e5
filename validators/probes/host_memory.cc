// Host memory and the OOM killer; see host_memory.h.
#include "probes/host_memory.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

namespace trainlock::validate {
namespace {

std::string GiBText(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return text;
}

// The value after `key` in a "key value" text file; nullopt when absent.
std::optional<uint64_t> KeyedValue(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string name;
    uint64_t value = 0;
    if (fields >> name >> value && name == key) return value;
  }
  return std::nullopt;
}

// This process's cgroup path ("0::/system.slice/x" -> "/system.slice/x"; v1: the memory line).
std::pair<std::string, bool> OwnCgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string v2, v1;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("0::", 0) == 0) v2 = line.substr(3);
    const size_t memory = line.find(":memory:");
    if (memory != std::string::npos) v1 = line.substr(memory + 8);
  }
  return v1.empty() ? std::pair{v2, true} : std::pair{v1, false};
}

}  // namespace

std::optional<uint64_t> PeakRssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // kB
  }
  return std::nullopt;
}

uint64_t HostMemoryBytes() {
  return static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
         static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::optional<uint64_t> AvailableMemoryBytes() {
  const auto kib = KeyedValue("/proc/meminfo", "MemAvailable:");
  if (!kib || *kib > (uint64_t{1} << 50)) return std::nullopt;
  return *kib * 1024;
}

namespace {
// The free memory of the v2 cgroup directory `dir` under its limit; nullopt when unlimited.
std::optional<uint64_t> FreeUnderLimit(const std::string& dir) {
  std::ifstream max_file(dir + "/memory.max");
  uint64_t limit = 0;
  if (!(max_file >> limit)) return std::nullopt;  // no limit (the word max), or unreadable
  std::ifstream current_file(dir + "/memory.current");
  uint64_t current = 0;
  if (!(current_file >> current)) return std::nullopt;
  const uint64_t file = KeyedValue(dir + "/memory.stat", "file").value_or(0);
  const uint64_t shmem = KeyedValue(dir + "/memory.stat", "shmem").value_or(0);
  const uint64_t droppable = file > shmem ? file - shmem : 0;
  const uint64_t held = current > droppable ? current - droppable : 0;
  return limit > held ? limit - held : 0;
}
}  // namespace

std::optional<uint64_t> CgroupFreeMemoryBytes() {
  auto [path, v2] = OwnCgroup();
  if (!v2) return std::nullopt;
  std::optional<uint64_t> smallest;
  for (int depth = 0; depth < 64; ++depth) {  // a cgroup path is far shorter
    const std::optional<uint64_t> free = FreeUnderLimit("/sys/fs/cgroup" + path);
    if (free && (!smallest || *free < *smallest)) smallest = free;
    if (path.empty() || path == "/") break;
    path = path.substr(0, path.rfind('/'));
  }
  return smallest;
}

std::optional<uint64_t> CgroupOomKills() {
  const auto [path, v2] = OwnCgroup();
  if (v2) {
    if (auto n = KeyedValue("/sys/fs/cgroup" + path + "/memory.events", "oom_kill")) return n;
    return KeyedValue("/sys/fs/cgroup/memory.events", "oom_kill");
  }
  return KeyedValue("/sys/fs/cgroup/memory" + path + "/memory.oom_control", "oom_kill");
}

// `pid` and its children (/proc's children list): the engine under the small init of a PID
// namespace (base/subprocess.h), an engine launcher's ranks.
namespace {
std::vector<pid_t> ProcessAndItsChildren(pid_t pid) {
  std::vector<pid_t> out = {pid};
  const std::string task = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid);
  std::ifstream children(task + "/children");
  for (pid_t child; children >> child;) out.push_back(child);
  return out;
}
}  // namespace

RssSampler::RssSampler(pid_t pid) {
  thread_ = std::thread([this, pid] {
    while (!stop_.load()) {
      for (pid_t p : ProcessAndItsChildren(pid))
        if (auto rss = PeakRssBytes(p); rss && *rss > peak_.load()) peak_.store(*rss);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
}

RssSampler::~RssSampler() {
  stop_.store(true);
  thread_.join();
}

std::string DescribeOutsideKill(const std::string& process, uint64_t peak_rss, uint64_t host_bytes,
                                std::optional<uint64_t> oom_kills_before,
                                std::optional<uint64_t> oom_kills_after) {
  const bool counted = oom_kills_before && oom_kills_after;
  const bool oom = counted ? *oom_kills_after > *oom_kills_before : peak_rss > host_bytes / 10 * 9;
  const std::string reached =
      "at a peak RSS of " + GiBText(peak_rss) + " (host memory " + GiBText(host_bytes) + ")";
  if (oom) {
    return "host memory exhausted: the kernel's OOM killer ended process " + process + " " +
           reached + (counted ? "" : "; no cgroup oom_kill counter to confirm it");
  }
  return "process " + process + " was killed by SIGKILL from outside the validator " + reached;
}

}  // namespace trainlock::validate
