// ops.custom from the coordinator's side: runs the ops worker (a crash in a custom op must
// not take the validator down) and turns its result into the check. The failure kinds and
// the architecture rule live here, torch-free, so they are tested without a GPU.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "compat/gpu_binary.h"
#include "ops/ops_spec.h"
#include "project/project.h"
#include "report/report.h"

namespace trainlock::validate {

// The named ways ops.custom fails; each is a "kind" in the check's metrics.failures.
namespace op_failure {
inline constexpr const char* kLibraryMissing = "library_missing";
inline constexpr const char* kLibraryLoadFailed = "library_load_failed";
inline constexpr const char* kLibraryChanged = "library_changed";  // not the lock's sha256
inline constexpr const char* kOpNotRegistered = "op_not_registered";
inline constexpr const char* kNoKernelForDevice = "no_kernel_for_device";
inline constexpr const char* kNoCodeForDevice = "no_code_for_device";
inline constexpr const char* kUnknownReference = "unknown_reference";
inline constexpr const char* kSmokeError = "smoke_error";
inline constexpr const char* kNoBackward = "no_backward";
inline constexpr const char* kForwardExceedsTolerance = "forward_exceeds_tolerance";
inline constexpr const char* kBackwardExceedsTolerance = "backward_exceeds_tolerance";
inline constexpr const char* kCrashed = "crashed";
}  // namespace op_failure

// Why a library's GPU code cannot run on a CUDA device of compute capability `sm` under a
// driver of CUDA `driver_cuda`, or nullopt when it can (or carries no GPU code: its kernels
// then go through LibTorch's own). HIP-only code on a CUDA device is a problem too.
std::optional<std::string> CudaCodeProblem(const GpuBinaryInfo& code, int sm, int driver_cuda);

struct OpsRun {
  std::optional<int> exit_code;  // nullopt: timed out (and killed)
  nlohmann::json result;         // the worker's result file ({} when none)
  std::string stderr_tail;
  int timeout_s = 0;
};

// The ops.custom check from one ops worker run.
CheckResult OpsCheckFromRun(const OpsRun& run);

// The lock's custom-op libraries, each at the path this node loads it from
// (op_library_path.h): what the ops worker is given to check.
std::vector<OpsLibrary> ResolveOpsLibraries(const Project& project);

struct OpsCheckOptions {
  std::vector<OpsLibrary> libraries;  // ResolveOpsLibraries
  std::filesystem::path validator;    // trainlock-validate; "" = this executable
  std::filesystem::path work_dir;
  std::string device = "auto";
  int timeout_s = 600;
};

// Writes the ops spec of options.libraries into the work directory, starts
// `trainlock-validate worker --role ops` on it and returns ops.custom.
CheckResult RunOpsCheck(const OpsCheckOptions& options);

}  // namespace trainlock::validate
