// ops.custom end to end through the ops worker, on libraries the suite builds from
// examples/ops: the sample library passes, and each failure mode is its own named fail
// (library missing, not loadable, op not registered, no kernel for the device's dispatch key,
// a wrong kernel beyond tolerance, an unknown reference; on a CUDA machine also a library
// built for sm_80 only).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <torch/cuda.h>

#include <chrono>
#include <filesystem>

#include "ops/ops_check.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

constexpr const char* kOp = "trainlock_ops::fused_rmsnorm";

struct OpsLibrary {
  std::string built;  // file name in the examples/ops build directory; "" = none (missing)
  std::string op = kOp;
  std::string reference = "rmsnorm";
  std::string dtype = "fp32";
  // Puts something other than a built library at the lock's path (when `built` is "").
  void (*plant)(const fs::path& at) = nullptr;
};

// examples/tiny with the library copied to ops/ and declared in the lock.
class CustomOps : public ::testing::Test {
 protected:
  CheckResult Run(const OpsLibrary& lib, const std::string& device = "cpu") {
    fs::path project = dir_.path() / "tiny";
    testing::CopyExample("tiny", project);
    fs::create_directories(project / "ops");
    if (!lib.built.empty()) {
      fs::copy_file(fs::path(TRAINLOCK_OPS_DIR) / lib.built, project / "ops" / "libops.so",
                    fs::copy_options::overwrite_existing);
    }
    if (lib.plant) lib.plant(project / "ops" / "libops.so");
    const std::string tol = lib.dtype == "fp32"
                                ? "rtol = 1e-4\natol = 1e-5\ngrad-rtol = 1e-3\ngrad-atol = 1e-4\n"
                                : "rtol = 2e-2\natol = 2e-2\ngrad-rtol = 5e-2\ngrad-atol = 5e-2\n";
    testing::WriteFile(project / "trainlock.lock",
                       testing::ReadFile(project / "trainlock.lock") +
                           "\n[[custom-ops]]\nlibrary = \"ops/libops.so\"\nops = [\"" + lib.op +
                           "\"]\n[[custom-ops.smoke]]\nop = \"" + lib.op +
                           "\"\ninputs = [{ shape = [8, 64], dtype = \"" + lib.dtype +
                           "\" }, { shape = [64], dtype = \"" + lib.dtype +
                           "\" }]\nreference = \"" + lib.reference + "\"\n" + tol);
    fs::remove(project / "trainlock.toml");  // the libraries come from the lock alone
    OpsCheckOptions o;
    o.libraries = ResolveOpsLibraries(LoadProject(project, ManifestRequirement::kOptional));
    o.validator = testing::BinDir() / "trainlock-validate";
    o.work_dir = dir_.path();
    o.device = device;
    o.timeout_s = timeout_s_;
    return RunOpsCheck(o);
  }

  static std::string Kinds(const CheckResult& c) {
    std::string kinds;
    for (const auto& f : c.metrics["failures"])
      kinds += (kinds.empty() ? "" : ",") + f["kind"].get<std::string>();
    return kinds;
  }

  testing::TempDir dir_;
  int timeout_s_ = 300;
};

TEST_F(CustomOps, TheSampleLibraryPassesForwardAndBackwardOnTheCpu) {
  CheckResult c = Run({"libtrainlock_ops.so"});
  ASSERT_EQ(c.status, CheckStatus::kPass) << c.summary;
  const auto& smoke = c.metrics["libraries"][0]["ops"][0]["smoke"][0];
  EXPECT_TRUE(smoke["forward"]["within_tolerance"].get<bool>());
  EXPECT_LE(smoke["forward"]["max_rel_error"].get<double>(), 1e-4);
  EXPECT_EQ(smoke["backward"].size(), 2u);  // x and weight
  EXPECT_GT(smoke["time_per_call_s"].get<double>(), 0);
  EXPECT_GT(smoke["reference_time_per_call_s"].get<double>(), 0);
}

TEST_F(CustomOps, Bf16InputsPassWithinBf16Tolerances) {
  CheckResult c = Run({"libtrainlock_ops.so", kOp, "rmsnorm", "bf16"});
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.summary;
}

TEST_F(CustomOps, AMissingLibraryIsLibraryMissing) {
  CheckResult c = Run({""});
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_EQ(Kinds(c), "library_missing");
  EXPECT_NE(c.summary.find("ops/libops.so: not found"), std::string::npos) << c.summary;
}

TEST_F(CustomOps, AFileTheLoaderRejectsIsLibraryLoadFailedWithTheLoadersMessage) {
  testing::WriteFile(fs::path(TRAINLOCK_OPS_DIR) / "not-a-library.so", "not an ELF file\n");
  CheckResult c = Run({"not-a-library.so"});
  EXPECT_EQ(Kinds(c), "library_load_failed");
  EXPECT_NE(c.summary.find("libops.so"), std::string::npos) << c.summary;
}

// An unpinned library is measured, not compared, and dlopen reopens it through /proc/self/fd
// without O_NONBLOCK: a FIFO there (no writer) or a device must be refused by type at once,
// never hashed as the empty file (FIFO) or read forever (/dev/zero) until --timeout.
TEST_F(CustomOps, AFifoAtTheLibrarysPathIsRefusedByTypeWithoutWaiting) {
  timeout_s_ = 60;  // without the refusal the worker hangs until this and is "crashed"
  const auto start = std::chrono::steady_clock::now();
  CheckResult c = Run({"", kOp, "rmsnorm", "fp32",
                       [](const fs::path& at) { ASSERT_EQ(::mkfifo(at.c_str(), 0644), 0); }});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(Kinds(c), "library_load_failed");
  EXPECT_NE(c.summary.find("ops/libops.so: not a regular file"), std::string::npos) << c.summary;
}

TEST_F(CustomOps, ADeviceAtTheLibrarysPathIsRefusedByTypeWithoutReadingIt) {
  timeout_s_ = 60;
  const auto start = std::chrono::steady_clock::now();
  CheckResult c =
      Run({"", kOp, "rmsnorm", "fp32", [](const fs::path& at) {
             fs::create_symlink("/dev/zero", at);  // links are followed; a device is not
           }});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(Kinds(c), "library_load_failed");
  EXPECT_NE(c.summary.find("ops/libops.so: not a regular file"), std::string::npos) << c.summary;
}

TEST_F(CustomOps, AnOpTheLibraryDoesNotRegisterIsOpNotRegistered) {
  CheckResult c = Run({"libtrainlock_ops.so", "trainlock_ops::fused_layernorm"});
  EXPECT_EQ(Kinds(c), "op_not_registered");
  EXPECT_NE(c.summary.find("registered: trainlock_ops::fused_rmsnorm"), std::string::npos)
      << c.summary;
}

TEST_F(CustomOps, ALibraryWithOnlyACudaKernelIsNoKernelForTheCpu) {
  CheckResult c = Run({"libtrainlock_ops_gpu_only.so"});
  EXPECT_EQ(Kinds(c), "no_kernel_for_device");
  EXPECT_NE(c.summary.find("no kernel for the CPU dispatch key"), std::string::npos) << c.summary;
  EXPECT_NE(c.summary.find("kernels: CUDA"), std::string::npos) << c.summary;
}

TEST_F(CustomOps, AWrongKernelExceedsTheForwardTolerance) {
  CheckResult c = Run({"libtrainlock_ops_wrong.so"});
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_EQ(Kinds(c).rfind("forward_exceeds_tolerance", 0), 0u) << Kinds(c);
  const auto& forward = c.metrics["libraries"][0]["ops"][0]["smoke"][0]["forward"];
  EXPECT_GT(forward["max_rel_error"].get<double>(), 5e-3);  // the kernel is 1% off
}

TEST_F(CustomOps, AnUnknownReferenceIsNamed) {
  CheckResult c = Run({"libtrainlock_ops.so", kOp, "rms_norm"});
  EXPECT_EQ(Kinds(c), "unknown_reference");
  EXPECT_NE(c.summary.find("known: bias_gelu, rmsnorm"), std::string::npos) << c.summary;
}

// On a CUDA machine with the CUDA build of the library.
class CustomOpsOnCuda : public CustomOps {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    if (!fs::exists(fs::path(TRAINLOCK_OPS_DIR) / "libtrainlock_ops_sm80.so"))
      GTEST_SKIP() << "the CUDA variants need a CUDA LibTorch and nvcc";
  }
};

TEST_F(CustomOpsOnCuda, TheSampleLibraryPassesOnTheGpuInBf16) {
  CheckResult c = Run({"libtrainlock_ops.so", kOp, "rmsnorm", "bf16"}, "cuda");
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.summary;
}

TEST_F(CustomOpsOnCuda, ALibraryWithSm80SassOnlyIsNoCodeForAnSm90Device) {
  CheckResult c = Run({"libtrainlock_ops_sm80.so"}, "cuda");
  if (c.metrics.value("libraries", nlohmann::json::array()).empty()) FAIL() << c.summary;
  EXPECT_EQ(Kinds(c), "no_code_for_device") << c.summary;
}

TEST_F(CustomOpsOnCuda, AWrongCudaKernelExceedsTheForwardTolerance) {
  CheckResult c = Run({"libtrainlock_ops_wrong.so"}, "cuda");
  EXPECT_EQ(Kinds(c).rfind("forward_exceeds_tolerance", 0), 0u) << c.summary;
}

}  // namespace
}  // namespace trainlock::validate
