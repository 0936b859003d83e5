// trainlock's own version, reported by --version and written into reports.
#pragma once

#include <string_view>

namespace trainlock {

inline constexpr std::string_view kTrainlockVersion = "0.1.0";

}  // namespace trainlock
