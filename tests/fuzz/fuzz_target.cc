// The libFuzzer driver: one executable per target, named by TRAINLOCK_FUZZ_TARGET at compile
// time (tests/fuzz/CMakeLists.txt), each running that target's body from fuzz_inputs.h.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "fuzz_inputs.h"

namespace {

using trainlock::fuzz::FuzzTarget;

void (*TargetBody())(std::string_view) {
  for (const FuzzTarget& t : trainlock::fuzz::FuzzTargets()) {
    if (std::strcmp(t.name, TRAINLOCK_FUZZ_TARGET) == 0) return t.run;
  }
  std::abort();  // a target the build names but fuzz_inputs.cc does not have
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static void (*const run)(std::string_view) = TargetBody();
  run(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
