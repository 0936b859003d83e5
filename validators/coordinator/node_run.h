// The checks of one node that rank 0 (or the only process) runs: each device measured (env.arch,
// perf.*), env.*, data.*, ops.custom, the round trip on the training device, then perf.* and the
// project's smoke command. A non-lead rank runs only the round trip (RunTraining).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/progress.h"
#include "checks/python_files.h"
#include "coordinator/validate.h"
#include "probes/node_checks.h"
#include "project/project.h"
#include "report/report.h"

namespace trainlock::validate {

// What rank 0 (or the only process) measured on the node, for the checks after the collectives.
struct NodeRun {
  std::filesystem::path checkpoint_root;
  DeviceRuns runs;
  NodeProbe node;  // NVML's probe, restricted to the GPUs this process sees (visible_gpus.h)
};

// train.step, train.roundtrip, train.eval and ckpt.portable on `device`: the round trip. A
// Python engine runs the image's recorded interpreter and path (`python`, verified before any
// Python started), and not at all when that verification found anything (env.packages says
// what). `beside_portable` (RoundtripOptions's) starts what runs beside the portable process.
std::vector<CheckResult> RunTraining(const ValidateOptions& o, const Project& project,
                                     const ImagePythonFiles& python, const std::string& device,
                                     const std::filesystem::path& work,
                                     const std::filesystem::path& checkpoint_root,
                                     Progress& progress,
                                     std::function<void()> beside_portable = {});

// env.*, data.*, ops.custom and the round trip on `train_device`: the checks of one node.
// `measured` runs once the devices' throughput is measured (the other ranks wait for it
// before they load their GPUs). `python`: the image's Python as verified before any Python ran
// (image_python.h). `framework_import`: the locked image's interpreter cannot import the
// engine's framework (coordinator/preflight.h): env.packages is that failure and the round
// trip is not run.
NodeRun RunNodeChecks(const ValidateOptions& o, const Project& project,
                      const ImagePythonFiles& python, const NodeProbe& node,
                      const std::filesystem::path& work, const std::string& train_device,
                      const std::function<void()>& measured,
                      const std::optional<CheckResult>& framework_import, Progress& progress,
                      Report& report);

// perf.* from the device measurements, and (with `job_checks`: once per job, by rank 0) the
// project's own smoke command.
void RunTailChecks(const ValidateOptions& o, const Project& project, const NodeRun& run,
                   Progress& progress, Report& report, bool job_checks);

}  // namespace trainlock::validate
