// The report's host facts; see host_info.h.
#include "checks/host_info.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <thread>

#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/rank_env.h"

namespace trainlock {

namespace {

// PRETTY_NAME of /etc/os-release, unquoted; "" when absent or not a readable regular file
// (an image's file: a FIFO there must not stall the report).
std::string OsPrettyName() {
  std::string text;
  try {
    text = ReadInputFile("/etc/os-release", "/etc/os-release");
  } catch (const InputError&) {
    return "";
  }
  std::istringstream os(text);
  for (std::string line; std::getline(os, line);) {
    if (line.rfind("PRETTY_NAME=", 0) != 0) continue;
    std::string v = line.substr(12);
    if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
    return v;
  }
  return "";
}

}  // namespace

nlohmann::json HostInfo() {
  nlohmann::json host;
  host["hostname"] = HostName();
  struct utsname u {};
  if (::uname(&u) == 0) host["kernel"] = std::string(u.sysname) + " " + u.release;
  host["cpus"] = std::thread::hardware_concurrency();
  host["memory_bytes"] = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  if (std::string os = OsPrettyName(); !os.empty()) host["os"] = os;
  return host;
}

}  // namespace trainlock
