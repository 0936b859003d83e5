// The check ids of the report contract (docs/DESIGN.md), in report order.
#pragma once

#include <array>
#include <string_view>

namespace trainlock {

inline constexpr std::array<std::string_view, 19> kCheckIds = {
    "env.driver",  "env.runtime",     "env.arch",   "env.versions",  "env.health",
    "env.devices", "env.packages",    "data.model", "data.dataset",  "ops.custom",
    "train.step",  "train.roundtrip", "train.eval", "ckpt.portable", "comm.allreduce",
    "comm.ddp",    "perf.matmul",     "perf.hbm",   "ext.command",
};

inline bool IsCheckId(std::string_view id) {
  for (std::string_view known : kCheckIds) {
    if (known == id) return true;
  }
  return false;
}

}  // namespace trainlock
