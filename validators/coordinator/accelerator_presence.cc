// A GPU build without a GPU to train on; see accelerator_presence.h.
#include "coordinator/accelerator_presence.h"

#include <cstdlib>

namespace trainlock::validate {

std::string MissingAccelerator(const std::string& build, const std::string& device,
                               const Lockfile& lock, int visible_accelerators) {
  if (build == "cpu" || device == "cpu" || visible_accelerators > 0) return "";
  if (lock.targets.contains("cpu")) return "";  // a cpu project on a GPU host trains on the CPU
  std::string targets;
  for (const auto& [name, target] : lock.targets) targets += (targets.empty() ? "" : ", ") + name;
  const char* visible =
      std::getenv(build == "rocm" ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES");
  return "this " + build + " build of the validator sees no GPU" +
         (visible ? std::string(" (") + (build == "rocm" ? "HIP" : "CUDA") + "_VISIBLE_DEVICES='" +
                        visible + "')"
                  : "") +
         " and the lock's targets (" + targets +
         ") train on one: start the container with its GPUs (--gpus all, a CDI spec, the NVIDIA "
         "container toolkit) or run where the driver sees them";
}

}  // namespace trainlock::validate
