// What a save costs the steps that follow it, as a steady-state save (--steady-saves) is
// measured by the native worker (docs/validate.md, "Steady-state saves"): the steps after the
// save against the median of the run-mode steps before it. The Python engines' driver applies
// the same rule to its own step times (trainlock_engine/steady.py), in its own process.
#pragma once

#include <cstdint>
#include <vector>

namespace trainlock::validate {

// The median of `seconds` (the upper one of an even count); 0 for none.
double MedianSeconds(std::vector<double> seconds);

// How much longer than the median of `before` the steps of `after` took, summed over them; a
// step that was not longer adds nothing. 0 when `before` is empty.
double StretchSeconds(const std::vector<double>& before, const std::vector<double>& after);

// This process's resident memory now (/proc/self/statm), in bytes; -1 where it cannot be read.
int64_t ResidentBytes();

}  // namespace trainlock::validate
