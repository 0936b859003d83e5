// [targets.<t>] of a manifest or lock: which targets (cuda, rocm, cpu), each one's base image
// (pinned by digest in a lock, with base-platforms), accelerators and versions. Its Python is
// read in spec_target_python.cc, its Debian packages in spec_target_debian.cc.
#include "project/lockfile_reader.h"

#include <algorithm>

#include "base/refs.h"
#include "base/strings.h"
#include "base/suggest.h"

namespace trainlock {

void LockfileReader::ReadTargets(const toml::table& t) {
  static constexpr std::string_view kTargets[] = {"cuda", "rocm", "cpu"};
  TomlFields f = Fields(t, "targets");
  for (std::string_view name : kTargets) {
    if (const toml::table* target = f.Table(name, Need::kOptional)) {
      spec_.targets[std::string(name)] = ReadTarget(*target, std::string(name));
    }
  }
  // Unknown target names get a clearer message than the generic unknown key.
  for (auto&& [key, node] : t) {
    std::string_view k = key.str();
    if (std::find(std::begin(kTargets), std::end(kTargets), k) == std::end(kTargets)) {
      f.Error(PosOf(key.source()), "unknown target " + Quoted(k) + " in [targets]",
              DidYouMean(k, kTargets).empty() ? "targets are cuda, rocm and cpu"
                                              : DidYouMean(k, kTargets));
      f.Allow(k);
    }
  }
  if (t.empty())
    f.Error(f.TablePos(), "[targets] names no target",
            "add [targets.cuda], [targets.rocm] or [targets.cpu]");
  f.Finish();
}

void LockfileReader::ReadBaseImage(TomlFields& f, Target& target) {
  auto base = f.String("base", target.name == "cpu" ? Need::kOptional : Need::kRequired);
  if (!base) return;
  target.base = *base;
  std::string error;
  auto ref = ParseImageRef(*base, &error);
  if (!ref) {
    f.Error(f.Pos("base"), "'" + f.Qualified("base") + "' = " + Quoted(*base) +
                               " is not an image reference: " + error);
    return;
  }
  if (lock() && !ref->pinned()) {
    f.Error(f.Pos("base"),
            "unpinned image reference " + Quoted(*base) + " in '" + f.Qualified("base") + "'",
            "a lock pins base images by digest (name@sha256:...); run `trainlock lock`");
  }
  if (!lock()) return;
  if (const toml::table* platforms = f.Table("base-platforms", Need::kOptional)) {
    for (auto&& [platform, node] : *platforms) {
      const auto* digest = node.as_string();
      std::string problem = digest ? DigestProblem(digest->get()) : "must be a digest string";
      if (!problem.empty()) {
        f.Error(PosOf(node), "'" + f.Qualified("base-platforms") + "." +
                                 std::string(platform.str()) + "': " + problem);
        continue;
      }
      target.base_platforms[std::string(platform.str())] = digest->get();
    }
  }
}

Target LockfileReader::ReadTarget(const toml::table& t, const std::string& target_name) {
  TomlFields f = Fields(t, "targets." + target_name);
  Target target;
  target.name = target_name;
  ReadBaseImage(f, target);
  bool gpu = target_name != "cpu";
  if (auto acc = f.StringArray("accelerators", gpu ? Need::kRequired : Need::kOptional)) {
    if (gpu && acc->empty()) {
      f.Error(f.Pos("accelerators"), "'" + f.Qualified("accelerators") + "' is empty",
              "name at least one catalog accelerator, e.g. \"H200\"");
    }
    target.accelerators = *acc;
  }
  auto version = [&](std::string_view key, Need need) {
    auto v = f.String(key, need);
    CheckVersion(f, key, v);
    return v.value_or("");
  };
  target.torch = version("torch", Need::kRequired);
  if (target_name == "cuda") {
    target.cuda = version("cuda", Need::kRequired);
    target.nccl = version("nccl", Need::kOptional);
    target.cudnn = version("cudnn", Need::kOptional);
    target.driver_min = version("driver-min", Need::kRequired);
  } else if (target_name == "rocm") {
    target.rocm = version("rocm", Need::kRequired);
    target.rccl = version("rccl", Need::kOptional);
    target.driver_min = version("driver-min", Need::kOptional);
  }
  ReadPythonTarget(f, target);
  ReadDebianPackages(f, target);
  if (lock()) f.Allow("base-platforms");
  f.Finish();
  return target;
}

}  // namespace trainlock
