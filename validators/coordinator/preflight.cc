// The diagnosis before any work; see preflight.h.
#include "coordinator/preflight.h"

#include <algorithm>

#include "base/strings.h"
#include "compat/catalog.h"
#include "coordinator/framework_import.h"
#include "image/in_image_paths.h"
#include "probes/node_checks.h"
#include "project/check_ids.h"
#include "support/check_selection.h"
#include "support/torch_build.h"

namespace trainlock::validate {
namespace {

// The ids of the checks judged first that failed: the node's own faults.
std::vector<std::string> FailedIds(const std::vector<CheckResult>& judged) {
  std::vector<std::string> ids;
  for (const CheckResult& c : judged)
    if (c.status == CheckStatus::kFail) ids.push_back(c.id);
  return ids;
}

// The locked image's own interpreter cannot import the engine's framework, and env.packages is
// selected to say so.
bool BrokenImageFramework(const EngineProbe& engine, bool in_image,
                          const std::vector<std::string>& only) {
  return in_image && engine.failure == EngineProbeFailure::kImport &&
         engine.python == kPythonInImage && Selected(only, {"env.packages"});
}

}  // namespace

std::vector<CheckResult> JudgeDriverFirst(const Lockfile& lock, NodeProbe node,
                                          const std::vector<std::string>& only) {
  BuildInfo build;
  build.flavour = BuiltTorchFlavour();
  build.torch = BuiltTorchVersion();
  build.cuda_runtime = BuiltCudaRuntimeVersion();
  if (build.flavour == "cpu") {
    node.nvml_loaded = false;
    node.unavailable_reason =
        "CPU build of the validator: no GPU driver, runtime or device to probe";
  }
  return DriverChecks(lock, node, build, Catalog::Embedded(), only);
}

Preflight DecideBeforeWork(std::vector<CheckResult> driver_checks, const std::string& no_gpu,
                           const std::optional<EngineProbe>& engine, bool in_image,
                           const std::vector<std::string>& only) {
  Preflight p;
  p.judged = std::move(driver_checks);
  std::string cannot_run = no_gpu;
  if (cannot_run.empty() && engine && !engine->error.empty()) {
    if (BrokenImageFramework(*engine, in_image, only)) {
      p.framework_import =
          FrameworkImportFailure(engine->python, engine->missing, engine->import_error);
    } else {
      cannot_run = engine->error;
    }
  }
  if (cannot_run.empty()) return p;
  const std::vector<std::string> failed = FailedIds(p.judged);
  if (failed.empty()) {
    p.stopped = p.environment_error = cannot_run;
    return p;
  }
  // The GPU is unusable because of what failed: "sees no GPU: start the container with its
  // GPUs" or "install a CUDA build of torch" would send the reader the wrong way.
  std::string and_then = ", and " + cannot_run;
  if (!no_gpu.empty()) {
    and_then = ", and CUDA can use no GPU here";
  } else if (engine->failure == EngineProbeFailure::kNoCuda) {
    and_then = ", and the engine's torch (" + engine->python + ") can use no GPU here";
  }
  p.stopped = JoinStrings(failed, ", ") + " failed before any work" + and_then;
  return p;
}

void ReportStoppedChecks(const Preflight& preflight, Report& report) {
  report.environment_error = preflight.environment_error;
  for (const CheckResult& c : preflight.judged) report.checks.push_back(c);
  for (std::string_view id : kCheckIds) {
    const bool judged = std::any_of(preflight.judged.begin(), preflight.judged.end(),
                                    [&](const CheckResult& c) { return c.id == id; });
    if (judged) continue;
    if (!preflight.environment_error.empty()) {
      report.checks.push_back(Skip(std::string(id),
                                   "not run: this environment cannot run the validation "
                                   "(environment_error)",
                                   preflight.environment_error));
    } else {
      report.checks.push_back(Skip(std::string(id), "not run: " + preflight.stopped));
    }
  }
}

}  // namespace trainlock::validate
