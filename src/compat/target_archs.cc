// Target architectures from the catalog; see target_archs.h.
#include "compat/target_archs.h"

#include <algorithm>

#include "base/diagnostic.h"

namespace trainlock {

std::vector<std::string> TargetArchitectures(const Project& project, const std::string& target,
                                             const Catalog& catalog) {
  const Lockfile& spec = project.effective();
  const std::string file = project.lock ? project.lock_path : project.manifest_path;
  auto fail = [&](const std::string& message, const std::string& hint = {}) {
    throw InputError(Diagnostic{file, {}, message, hint});
  };
  if (target != "cuda" && target != "rocm") {
    fail("'" + target + "' has no GPU architectures", "use --target cuda or --target rocm");
  }
  auto it = spec.targets.find(target);
  if (it == spec.targets.end()) fail("no [targets." + target + "]");
  std::vector<std::string> archs;
  for (const std::string& name : it->second.accelerators) {
    const GpuModel* gpu = catalog.FindGpu(name);
    if (!gpu) fail("accelerator '" + name + "' of [targets." + target + "] is not in the catalog");
    if (target == "cuda" && gpu->compute_capability > 0) {
      archs.push_back(std::to_string(gpu->compute_capability));
    } else if (target == "rocm" && !gpu->gfx.empty()) {
      archs.push_back(gpu->gfx);
    }
  }
  std::sort(archs.begin(), archs.end());
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  return archs;
}

}  // namespace trainlock
