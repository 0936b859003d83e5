// The defaults of [validate] (docs/DESIGN.md, "Formats"), written once: the manifest's spec
// (spec.h) starts from them and the validator's round trip (validators/coordinator/roundtrip.h)
// starts from them, so a project without a [validate] table and a round trip run on its own agree.
#pragma once

#include <cstdint>

namespace trainlock {

inline constexpr int64_t kDefaultValidateSteps = 8;
inline constexpr int64_t kDefaultCheckpointAt = 4;  // below kDefaultValidateSteps
inline constexpr int64_t kDefaultEvalBatches = 2;
inline constexpr int64_t kDefaultKeepLast = 2;      // complete checkpoints kept
inline constexpr double kDefaultLossTolerance = 0;  // 0 = bitwise
inline constexpr double kDefaultEvalTolerance = 0;  // 0 = bitwise
// The saves the saving process makes after its checkpoint, in the run's mode, to measure what a
// save costs training once its buffers exist (--steady-saves; docs/validate.md), and their cap.
inline constexpr int kDefaultSteadySaves = 1;
inline constexpr int kMaxSteadySaves = 16;

}  // namespace trainlock
