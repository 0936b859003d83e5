// ops.custom from the coordinator's side; see ops_check.h.
#include "ops/ops_check.h"

#include <csignal>

#include <chrono>
#include <set>
#include <sstream>

#include "base/json_file.h"
#include "base/program_path.h"
#include "ops/op_library_path.h"
#include "report/check_metrics.h"
#include "report/pass_rules.h"
#include "support/engine_protocol.h"
#include "support/worker_process.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
using nlohmann::json;

std::optional<std::string> CudaCodeProblem(const GpuBinaryInfo& code, int sm, int driver_cuda) {
  if (code.sass.empty() && code.ptx.empty()) {
    if (code.gfx.empty()) return std::nullopt;  // host code only: kernels come from LibTorch
    std::string gfx;
    for (const std::string& g : code.gfx) gfx += (gfx.empty() ? "" : ", ") + g;
    return "carries AMD GPU code only (" + gfx + "), nothing for a CUDA device of sm_" +
           std::to_string(sm);
  }
  std::string why;
  if (CudaCodeRunsOn(code, sm, driver_cuda, &why)) return std::nullopt;
  return why;
}

namespace {

// Several smoke failures with one remedy (say, every op's forward off) list it once.
std::string RemedyOf(const json& failures) {
  std::vector<std::string> remedies;
  std::set<std::string> seen;
  for (const auto& f : failures) {
    std::string r = f.value("remedy", "");
    if (!r.empty() && seen.insert(r).second) remedies.push_back(r);
  }
  std::string out;
  for (size_t i = 0; i < remedies.size(); ++i) {
    out +=
        (i ? "; " : "") + (remedies.size() > 1 ? std::to_string(i + 1) + ") " : "") + remedies[i];
  }
  return out;
}

// "N ops in M libraries pass on DEVICE; worst forward rel error E, op/reference time T".
std::string PassSummary(const json& result) {
  size_t ops = 0, smokes = 0;
  double worst_rel = 0;
  for (const auto& lib : result["libraries"]) {
    for (const auto& op : lib.value("ops", json::array())) {
      ++ops;
      for (const auto& s : op.value("smoke", json::array())) {
        ++smokes;
        if (s.contains("forward"))
          worst_rel = std::max(worst_rel, s["forward"].value("max_rel_error", 0.0));
      }
    }
  }
  std::ostringstream out;
  out.precision(3);
  const size_t libs = result["libraries"].size();
  out << ops << " op" << (ops == 1 ? "" : "s") << " in " << libs << " librar"
      << (libs == 1 ? "y" : "ies") << " registered with a kernel for "
      << result.value("device", "the device") << "; " << smokes << " smoke test"
      << (smokes == 1 ? "" : "s") << " within tolerance forward and backward";
  if (smokes) out << " (worst forward rel error " << worst_rel << ")";
  return out.str();
}

}  // namespace

CheckResult OpsCheckFromRun(const OpsRun& run) {
  json failures = json::array();
  OpsMetrics m;
  if (!run.exit_code || *run.exit_code != 0 || !run.result.contains("libraries")) {
    std::string how =
        !run.exit_code         ? "did not finish within " + std::to_string(run.timeout_s) + " s"
        : *run.exit_code > 128 ? "was killed by signal " + std::to_string(*run.exit_code - 128)
                               : "exited with " + std::to_string(*run.exit_code);
    std::string error = run.result.contains(kEventError)
                            ? ReadMetrics<ErrorEvent>(run.result[kEventError]).message.value_or("")
                            : run.stderr_tail.substr(run.stderr_tail.rfind('\n') + 1);
    failures.push_back({{"kind", op_failure::kCrashed},
                        {"op", ""},
                        {"message", "the process testing the custom ops " + how +
                                        (error.empty() ? "" : ": " + error)},
                        {"remedy",
                         "a custom op crashed or hung while loading or running: run "
                         "its smoke test alone under a debugger"}});
  } else {
    // The ops worker names its device and libraries with ops.custom's members.
    ReadInto(run.result, &m);
    for (const auto& lib : run.result["libraries"]) {
      for (const auto& f : lib.value("failures", json::array())) failures.push_back(f);
    }
  }
  m.failures = failures;
  if (failures.empty()) return Judged("ops.custom", ToJson(m), PassSummary(run.result));
  std::string summary;
  for (const auto& f : failures) {
    summary += (summary.empty() ? "" : "; ") + f.value("kind", "") + ": " + f.value("message", "");
  }
  return Judged("ops.custom", ToJson(m), summary, RemedyOf(failures));
}

std::vector<OpsLibrary> ResolveOpsLibraries(const Project& project) {
  std::vector<OpsLibrary> out;
  for (const CustomOpLibrary& lib : project.effective().custom_ops) {
    out.push_back({lib.library, fs::absolute(CustomOpLibraryPath(project, lib)).string(),
                   lib.sha256, lib.ops, lib.smoke});
  }
  return out;
}

CheckResult RunOpsCheck(const OpsCheckOptions& o) {
  auto start = std::chrono::steady_clock::now();
  const fs::path result_file = o.work_dir / "ops.json";
  const fs::path stderr_file = o.work_dir / "ops.stderr";
  const fs::path spec_file = o.work_dir / "ops-spec.json";
  const std::string spec_sha256 = WriteOpsSpec(spec_file, o.libraries);
  OpsRun run;
  run.timeout_s = o.timeout_s;
  bool capped = false;
  {
    const fs::path validator = o.validator.empty() ? RunningExecutable() : o.validator;
    Child child(
        {validator.string(), "worker", "--role", "ops", "--ops-spec", spec_file.string(),
         "--ops-spec-sha256", spec_sha256, "--device", o.device, "--result", result_file.string()},
        stderr_file);
    run.exit_code = child.Wait(start + std::chrono::seconds(o.timeout_s));
    if (child.stderr_capped() && !run.exit_code) run.exit_code = 128 + SIGKILL;  // stopped
    capped = child.stderr_capped();
  }
  json result = TryReadJsonFile(result_file, nullptr).value_or(json());
  run.result = result.is_object() ? result : json::object();
  run.stderr_tail =
      capped ? "stopped: its stderr passed " + std::to_string(kMaxChildStderrBytes >> 20) + " MiB"
             : TailOfFile(stderr_file, 5);
  CheckResult c = OpsCheckFromRun(run);
  c.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return c;
}

}  // namespace trainlock::validate
