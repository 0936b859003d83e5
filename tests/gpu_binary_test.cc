// The GPU-code inspector on libraries built by the real compilers: nvcc's fat binaries
// (SASS and PTX) and hipcc's offload bundles (gfx targets), and what can run where.
#include <gtest/gtest.h>

#include "base/failure.h"
#include "compat/gpu_binary.h"
#include "test_support.h"

namespace trainlock {
namespace {

std::filesystem::path Lib(const std::string& name) {
  return std::filesystem::path(TRAINLOCK_GPU_LIBS_DIR) / name;
}

#define REQUIRE_LIB(name)                                                         \
  if (!std::filesystem::exists(Lib(name))) {                                      \
    GTEST_SKIP() << Lib(name) << " was not built: nvcc/hipcc not found by CMake"; \
  }

TEST(GpuBinary, NvccLibraryListsSm80AndSm90SassAndCompute90Ptx) {
  REQUIRE_LIB("libcuda_sm80_sm90_ptx90.so");
  GpuBinaryInfo info = InspectGpuBinary(Lib("libcuda_sm80_sm90_ptx90.so"));
  EXPECT_EQ(info.sass, (std::vector<int>{80, 90}));
  ASSERT_EQ(info.ptx.size(), 1u);
  EXPECT_EQ(info.ptx[0].arch, 90);
  EXPECT_EQ(info.ptx[0].isa_major, 9);  // nvcc 13 emits PTX ISA 9.x
  EXPECT_TRUE(info.gfx.empty());
}

TEST(GpuBinary, Sm90SassRunsOnAnH200) {
  REQUIRE_LIB("libcuda_sm80_sm90_ptx90.so");
  std::string why;
  EXPECT_TRUE(CudaCodeRunsOn(InspectGpuBinary(Lib("libcuda_sm80_sm90_ptx90.so")), 90, 13000, &why));
  EXPECT_EQ(why, "SASS sm_90 runs on sm_90");
}

TEST(GpuBinary, Sm80SassRunsOnAnSm86Device) {
  REQUIRE_LIB("libcuda_sm80_only.so");
  EXPECT_TRUE(CudaCodeRunsOn(InspectGpuBinary(Lib("libcuda_sm80_only.so")), 86, 13000, nullptr));
}

TEST(GpuBinary, Sm80OnlyWithoutPtxDoesNotRunOnSm90) {
  REQUIRE_LIB("libcuda_sm80_only.so");
  GpuBinaryInfo info = InspectGpuBinary(Lib("libcuda_sm80_only.so"));
  EXPECT_EQ(info.sass, std::vector<int>{80});
  EXPECT_TRUE(info.ptx.empty());
  std::string why;
  EXPECT_FALSE(CudaCodeRunsOn(info, 90, 13000, &why));
  EXPECT_EQ(why, "no code for sm_90 (has sm_80)");
}

TEST(GpuBinary, Compute90PtxJitsForANewerDeviceOnlyWithADriverNewEnough) {
  REQUIRE_LIB("libcuda_sm80_sm90_ptx90.so");
  GpuBinaryInfo info = InspectGpuBinary(Lib("libcuda_sm80_sm90_ptx90.so"));
  std::string why;
  EXPECT_TRUE(CudaCodeRunsOn(info, 100, 13000, &why));
  EXPECT_NE(why.find("PTX compute_90"), std::string::npos);
  EXPECT_FALSE(CudaCodeRunsOn(info, 100, 12080, &why));
  EXPECT_NE(why.find("needs a driver for CUDA 13.0"), std::string::npos);
}

TEST(GpuBinary, HipccLibraryListsGfx90a) {
  REQUIRE_LIB("libhip_gfx90a.so");
  GpuBinaryInfo info = InspectGpuBinary(Lib("libhip_gfx90a.so"));
  EXPECT_EQ(info.gfx, std::vector<std::string>{"gfx90a"});
  EXPECT_TRUE(info.sass.empty());
}

TEST(GpuBinary, AHostOnlyLibraryHasNoGpuCode) {
  GpuBinaryInfo info = InspectGpuBinary(testing::BinDir() / "trainlock");
  EXPECT_FALSE(info.has_gpu_code());
}

TEST(GpuBinary, ANonElfFileIsRefusedNamingIt) {
  std::filesystem::path readme = testing::SourceDir() / "README.md";
  try {
    InspectGpuBinary(readme);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), readme.string() + ": not an ELF file");
  }
}

TEST(GpuBinary, ATruncatedElfIsRefused) {
  testing::TempDir dir;
  std::string bytes = testing::ReadFile(testing::BinDir() / "trainlock").substr(0, 200);
  testing::WriteFile(dir.path() / "cut.so", bytes);
  EXPECT_THROW(InspectGpuBinary(dir.path() / "cut.so"), Failure);
}

TEST(GpuBinary, PtxIsaVersionsMapToTheirCudaRelease) {
  EXPECT_EQ(CudaVersionForPtxIsa(9, 0), 13000);
  EXPECT_EQ(CudaVersionForPtxIsa(8, 8), 12080);
  EXPECT_EQ(CudaVersionForPtxIsa(7, 8), 11080);
}

TEST(CliInspect, PrintsTheArchitecturesAndExitsOneWhenTheDeviceCannotRunThem) {
  REQUIRE_LIB("libcuda_sm80_only.so");
  auto ok = testing::RunTrainlock({"inspect", Lib("libcuda_sm80_only.so").string()});
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_NE(ok.out.find("SASS sm_80"), std::string::npos);
  auto no = testing::RunTrainlock({"inspect", Lib("libcuda_sm80_only.so").string(), "--sm", "90"});
  EXPECT_EQ(no.exit_code, 1);
  EXPECT_NE(no.out.find("does NOT run on sm_90"), std::string::npos);
}

TEST(CliInspect, SmIsAcceptedAsNinePointZeroSmNinetyOrNinety) {
  REQUIRE_LIB("libcuda_sm80_only.so");
  for (const char* sm : {"9.0", "sm_90", "90"}) {
    auto r = testing::RunTrainlock({"inspect", Lib("libcuda_sm80_only.so").string(), "--sm", sm});
    EXPECT_EQ(r.exit_code, 1) << sm;
    EXPECT_NE(r.out.find("does NOT run on sm_90"), std::string::npos) << sm << r.out;
  }
  auto bad =
      testing::RunTrainlock({"inspect", Lib("libcuda_sm80_only.so").string(), "--sm", "nine"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--sm: error: not a compute capability: 'nine'"), std::string::npos);
}

TEST(CliInspect, GfxSaysWhetherAnAmdDeviceCanRunTheHipCode) {
  REQUIRE_LIB("libhip_gfx90a.so");
  for (const char* gfx : {"gfx90a", "90a"}) {
    auto r = testing::RunTrainlock({"inspect", Lib("libhip_gfx90a.so").string(), "--gfx", gfx});
    EXPECT_EQ(r.exit_code, 0) << gfx << r.err;
    EXPECT_NE(r.out.find("; runs on gfx90a"), std::string::npos) << r.out;
  }
  auto no = testing::RunTrainlock({"inspect", Lib("libhip_gfx90a.so").string(), "--gfx", "942"});
  EXPECT_EQ(no.exit_code, 1);
  EXPECT_NE(no.out.find("does NOT run on gfx942: no code object for gfx942"), std::string::npos)
      << no.out;
}

// A library's name (and what its bundles call themselves) is not ours: a right-to-left override
// or an escape sequence in it is shown, never obeyed.
TEST(CliInspect, ALibraryNamedWithABidiOverrideOrAnEscapeIsShownEscaped) {
  REQUIRE_LIB("libcuda_sm80_only.so");
  testing::TempDir dir;
  const std::filesystem::path named = dir.path() / "lib\u202Eos.\x1b[2Jx.so";
  std::filesystem::copy_file(Lib("libcuda_sm80_only.so"), named);
  auto r = testing::RunTrainlock({"inspect", named.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("\u202E"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lib\\u202eos.\\x1b[2Jx.so: "), std::string::npos) << r.out;
}

TEST(CliInspect, ANonElfFileIsBadInput) {
  auto r = testing::RunTrainlock({"inspect", (testing::SourceDir() / "README.md").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("README.md: error: not an ELF file"), std::string::npos);
}

}  // namespace
}  // namespace trainlock
