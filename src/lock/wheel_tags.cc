// Wheel names and tags; see wheel_tags.h. The supported tags are listed in the order of
// pypa/packaging's sys_tags() for CPython on Linux, which is the order pip prefers them in.
#include "lock/wheel_tags.h"

#include <map>
#include <regex>

namespace trainlock {
namespace {

std::vector<std::string> SplitDots(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t dot; (dot = text.find('.', start)) != std::string::npos; start = dot + 1)
    out.push_back(text.substr(start, dot - start));
  out.push_back(text.substr(start));
  return out;
}

// manylinux_2_X from the platform's glibc down (with the legacy aliases), then linux_<machine>.
std::vector<std::string> Platforms(const PythonPlatform& p) {
  std::vector<std::string> out;
  const int oldest = p.machine == "x86_64" || p.machine == "i686" ? 5 : 17;
  for (int minor = p.glibc_minor; minor >= oldest; --minor) {
    out.push_back("manylinux_2_" + std::to_string(minor) + "_" + p.machine);
    if (minor == 17) out.push_back("manylinux2014_" + p.machine);
    if (minor == 12) out.push_back("manylinux2010_" + p.machine);
    if (minor == 5) out.push_back("manylinux1_" + p.machine);
  }
  out.push_back("linux_" + p.machine);
  return out;
}

std::map<std::string, int> SupportedTags(const PythonPlatform& p) {
  std::map<std::string, int> rank;
  auto add = [&](const std::string& py, const std::string& abi, const std::string& plat) {
    rank.emplace(py + "-" + abi + "-" + plat, static_cast<int>(rank.size()));
  };
  const std::string cp = "cp" + std::to_string(p.major) + std::to_string(p.minor);
  const std::vector<std::string> platforms = Platforms(p);
  for (const char* abi : {"", "abi3", "none"}) {
    for (const std::string& plat : platforms) add(cp, *abi ? abi : cp, plat);
  }
  for (int minor = p.minor - 1; minor >= 2; --minor) {
    for (const std::string& plat : platforms) {
      add("cp" + std::to_string(p.major) + std::to_string(minor), "abi3", plat);
    }
  }
  // py3X, py3, py3(X-1) ... py30: the order of packaging's _py_interpreter_range.
  std::vector<std::string> pys = {"py" + std::to_string(p.major) + std::to_string(p.minor),
                                  "py" + std::to_string(p.major)};
  for (int minor = p.minor - 1; minor >= 0; --minor)
    pys.push_back("py" + std::to_string(p.major) + std::to_string(minor));
  for (const std::string& py : pys) {
    for (const std::string& plat : platforms) add(py, "none", plat);
  }
  add(cp, "none", "any");
  for (const std::string& py : pys) add(py, "none", "any");
  return rank;
}

}  // namespace

std::optional<WheelName> ParseWheelName(std::string_view file) {
  static const std::regex kWheel(
      R"(^([A-Za-z0-9_.]+)-([A-Za-z0-9_.!+]+)(?:-([0-9][A-Za-z0-9_.]*))?-([A-Za-z0-9_.]+)-([A-Za-z0-9_.]+)-([A-Za-z0-9_.]+)\.whl$)");
  if (file.size() > 512) return std::nullopt;
  const std::string text(file);
  std::smatch m;
  if (!std::regex_match(text, m, kWheel)) return std::nullopt;
  WheelName w;
  w.name = NormalizePackageName(m[1].str());
  w.version = m[2].str();
  w.python = SplitDots(m[4].str());
  w.abi = SplitDots(m[5].str());
  w.platform = SplitDots(m[6].str());
  return w;
}

std::optional<PythonPlatform> PythonPlatform::Parse(std::string_view python_version) {
  static const std::regex kPython(R"(^3\.([0-9]{1,2})(?:\.([0-9]{1,3}))?$)");
  const std::string text(python_version);
  std::smatch m;
  if (!std::regex_match(text, m, kPython)) return std::nullopt;
  PythonPlatform p;
  p.minor = std::stoi(m[1].str());
  p.micro = m[2].matched ? std::stoi(m[2].str()) : 0;
  return p;
}

std::string PythonPlatform::Describe() const {
  return "cp" + std::to_string(major) + std::to_string(minor) + " linux " + machine + " glibc 2." +
         std::to_string(glibc_minor);
}

MarkerEnvironment PythonPlatform::Markers() const {
  const std::string version = std::to_string(major) + "." + std::to_string(minor);
  const std::string full = version + "." + std::to_string(micro);
  return {{"python_version", version},
          {"python_full_version", full},
          {"implementation_version", full},
          {"implementation_name", "cpython"},
          {"platform_python_implementation", "CPython"},
          {"os_name", "posix"},
          {"sys_platform", "linux"},
          {"platform_system", "Linux"},
          {"platform_machine", machine},
          {"platform_release", ""},
          {"platform_version", ""}};
}

std::optional<int> WheelTagRank(const WheelName& wheel, const PythonPlatform& platform) {
  static thread_local std::map<std::string, std::map<std::string, int>> cache;
  const std::string key = platform.Describe();
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, SupportedTags(platform)).first;
  std::optional<int> best;
  for (const std::string& py : wheel.python) {
    for (const std::string& abi : wheel.abi) {
      for (const std::string& plat : wheel.platform) {
        auto tag = it->second.find(py + "-" + abi + "-" + plat);
        if (tag != it->second.end() && (!best || tag->second < *best)) best = tag->second;
      }
    }
  }
  return best;
}

}  // namespace trainlock
