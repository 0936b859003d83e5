// ops.custom's torch-free rules: which GPU code runs on a CUDA device (proven on libraries the
// suite builds with nvcc and hipcc from examples/ops), and how a worker run becomes the check.
#include <gtest/gtest.h>

#include <filesystem>

#include "ops/ops_check.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

fs::path OpsLib(const std::string& name) {
  return fs::path(TRAINLOCK_OPS_DIR) / name;
}

// The kernels alone, as nvcc or hipcc built them; skips when that compiler is missing.
#define LOAD_KERNELS_OR_SKIP(var, name)                                              \
  if (!fs::exists(OpsLib(name))) GTEST_SKIP() << name << " not built (no compiler)"; \
  GpuBinaryInfo var = InspectGpuBinary(OpsLib(name))

TEST(CudaCodeProblem, TheSampleKernelsBuiltForSm80AndSm90WithPtxRunOnSm90) {
  LOAD_KERNELS_OR_SKIP(code, "libtrainlock_ops_kernels_cuda.so");
  EXPECT_EQ(code.sass, (std::vector<int>{80, 90}));
  ASSERT_EQ(code.ptx.size(), 1u);
  EXPECT_EQ(code.ptx[0].arch, 90);
  EXPECT_EQ(CudaCodeProblem(code, 90, 13000), std::nullopt);
}

TEST(CudaCodeProblem, PtxLetsANewerGpuJitTheKernels) {
  LOAD_KERNELS_OR_SKIP(code, "libtrainlock_ops_kernels_cuda.so");
  EXPECT_EQ(CudaCodeProblem(code, 100, 13000), std::nullopt);
}

TEST(CudaCodeProblem, Sm80SassAloneDoesNotRunOnSm90) {
  LOAD_KERNELS_OR_SKIP(code, "libtrainlock_ops_kernels_cuda_sm80.so");
  EXPECT_EQ(code.sass, std::vector<int>{80});
  EXPECT_TRUE(code.ptx.empty());
  auto problem = CudaCodeProblem(code, 90, 13000);
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->find("sm_80"), std::string::npos) << *problem;
}

TEST(CudaCodeProblem, AmdCodeAloneDoesNotRunOnACudaDevice) {
  LOAD_KERNELS_OR_SKIP(code, "libtrainlock_ops_kernels_hip.so");
  EXPECT_EQ(code.gfx, std::vector<std::string>{"gfx90a"});
  auto problem = CudaCodeProblem(code, 90, 13000);
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->find("AMD GPU code only (gfx90a)"), std::string::npos) << *problem;
}

TEST(CudaCodeProblem, HostCodeAloneIsNoProblem) {
  EXPECT_EQ(CudaCodeProblem(GpuBinaryInfo{}, 90, 13000), std::nullopt);
}

TEST(OpsCheckFromRun, AWorkerKilledByASignalIsACrashFailure) {
  OpsRun run;
  run.exit_code = 128 + 11;
  run.stderr_tail = "loading ops/libbad.so";
  CheckResult c = OpsCheckFromRun(run);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_EQ(c.metrics["failures"][0]["kind"], op_failure::kCrashed);
  EXPECT_NE(c.summary.find("killed by signal 11: loading ops/libbad.so"), std::string::npos)
      << c.summary;
}

TEST(OpsCheckFromRun, AWorkerThatTimesOutSaysSo) {
  OpsRun run;
  run.timeout_s = 30;
  CheckResult c = OpsCheckFromRun(run);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("did not finish within 30 s"), std::string::npos) << c.summary;
}

TEST(OpsCheckFromRun, EveryLibrarysFailuresAreListedWithTheirKindsAndOneRemedyEach) {
  OpsRun run;
  run.exit_code = 0;
  nlohmann::json f1 = {
      {"kind", "library_missing"}, {"message", "a.so: not found"}, {"remedy", "r1"}};
  nlohmann::json f2 = {{"kind", "forward_exceeds_tolerance"}, {"message", "off"}, {"remedy", "r2"}};
  nlohmann::json f3 = {
      {"kind", "backward_exceeds_tolerance"}, {"message", "off"}, {"remedy", "r2"}};
  run.result = {{"device", "cpu"}, {"libraries", {{{"failures", {f1}}}, {{"failures", {f2, f3}}}}}};
  CheckResult c = OpsCheckFromRun(run);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_EQ(c.summary,
            "library_missing: a.so: not found; forward_exceeds_tolerance: off; "
            "backward_exceeds_tolerance: off");
  EXPECT_EQ(c.remedy, "1) r1; 2) r2");
}

}  // namespace
}  // namespace trainlock::validate
