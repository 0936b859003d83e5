// The validation's diagnosis before any work, in its order. First what NVML tells without any
// framework: env.driver, env.runtime, env.health (probes/node_checks.h's DriverChecks). Then
// whether CUDA sees a GPU (accelerator_presence.h) and whether the lock's Python engine can run
// (engine_probe.h). When either cannot, nothing else runs, and what was judged first decides
// what the report says: a driver too old for the image's CUDA, a GPU NVML finds faulty, is the
// node failing that check (verdict "fail", exit 1), with the checks' own remedies; only when
// none of them failed (no NVML at all, a container without its GPUs, a --python lacking a
// module) is the node not judged (verdict "error", exit 3). In a locked image (BindImage found
// the project's image record), a framework that does not import in the image's own interpreter
// is a broken image: env.packages fails naming the file (framework_import.h), the round trip is
// not run, and the rest of the node's checks run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "coordinator/engine_probe.h"
#include "probes/nvml_probe.h"
#include "project/lockfile.h"
#include "report/report.h"

namespace trainlock::validate {

struct Preflight {
  // Judged before any work (env.driver, env.runtime, env.health), for a report that stops.
  // When the validation goes on, the node's checks judge them again once the node worker has
  // matched NVML's GPUs to the ones this process sees (node_run.h, visible_gpus.h).
  std::vector<CheckResult> judged;
  // Why no other check runs; "" when the validation goes on.
  std::string stopped;
  // `stopped` when nothing judged failed: the node was not judged, the report's
  // environment_error. "" otherwise.
  std::string environment_error;
  // env.packages when the locked image's own interpreter cannot import the engine's framework:
  // the validation goes on without the round trip (framework_import.h).
  std::optional<CheckResult> framework_import;
};

// env.driver, env.runtime and env.health judged from `node` (NVML; on a CPU build a skip saying
// there is nothing to probe), for this validator's build and the lock: what runs first.
std::vector<CheckResult> JudgeDriverFirst(const Lockfile& lock, NodeProbe node,
                                          const std::vector<std::string>& only);

// The decision on what was measured, in order: `driver_checks` (DriverChecks), `no_gpu`
// (MissingAccelerator: "" when CUDA sees a GPU or needs none), `engine` (the lock's Python
// engine probed, nullopt when not probed), `in_image` (ImageBinding.in_image) and `only`
// (--only: env.packages outside it is not judged, and the import failure stays not judged).
Preflight DecideBeforeWork(std::vector<CheckResult> driver_checks, const std::string& no_gpu,
                           const std::optional<EngineProbe>& engine, bool in_image,
                           const std::vector<std::string>& only);

// The checks of a validation that `preflight` stopped: what it judged, and every other check id
// a skip saying why. Sets report.environment_error when the node was not judged.
void ReportStoppedChecks(const Preflight& preflight, Report& report);

}  // namespace trainlock::validate
