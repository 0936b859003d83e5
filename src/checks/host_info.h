// The report's `host` object: what a person needs to know of the machine a report came from
// (hostname, kernel, CPUs, memory, OS).
#pragma once

#include <nlohmann/json.hpp>

namespace trainlock {

nlohmann::json HostInfo();

}  // namespace trainlock
