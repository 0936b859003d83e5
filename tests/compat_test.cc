// Known-answer compatibility cases: each manifest variation gives exactly the finding named.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "compat/catalog.h"
#include "compat/compat.h"
#include "project/project.h"
#include "test_support.h"

namespace trainlock {
namespace {

using testing::CopyExample;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

// The h200-pilot manifest with `from` replaced by `to`, checked against the built-in catalog.
class CompatTest : public ::testing::Test {
 protected:
  std::vector<Finding> CheckWith(const std::string& from, const std::string& to,
                                 const std::string& file = "trainlock.toml") {
    CopyExample("h200-pilot", dir_.path());
    std::filesystem::path path = dir_.path() / file;
    std::string text = ReadFile(path);
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << "fixture lacks: " << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    WriteFile(path, text);
    // The lock is stale once the manifest changes; keep these cases about compatibility.
    if (file == "trainlock.toml") std::filesystem::remove(dir_.path() / "trainlock.lock");
    return CheckCompatibility(LoadProject(dir_.path()), catalog_);
  }

  static std::vector<std::string> Ids(const std::vector<Finding>& findings) {
    std::vector<std::string> ids;
    for (const Finding& f : findings) ids.push_back(f.id);
    return ids;
  }

  TempDir dir_;
  Catalog catalog_ = Catalog::Embedded();
};

TEST_F(CompatTest, H200WithCuda13AndDriver580_65_06IsClean) {
  std::vector<Finding> findings =
      CheckWith("driver-min = \"580.65.06\"", "driver-min = \"580.65.06\"");
  EXPECT_TRUE(findings.empty()) << findings.front().Format();
}

TEST_F(CompatTest, Cuda13WithDriverMin550IsADriverFinding) {
  auto findings = CheckWith("driver-min = \"580.65.06\"", "driver-min = \"550\"");
  ASSERT_EQ(Ids(findings), std::vector<std::string>{"compat.driver"});
  EXPECT_NE(findings[0].message.find("580.65.06"), std::string::npos);
  EXPECT_EQ(findings[0].pos.line, 13);
  EXPECT_FALSE(findings[0].remedy.empty());
}

TEST_F(CompatTest, DriverOneUpdateBelowTheMinimumIsAFinding) {
  auto findings = CheckWith("driver-min = \"580.65.06\"", "driver-min = \"580.65.05\"");
  EXPECT_EQ(Ids(findings), std::vector<std::string>{"compat.driver"});
}

TEST_F(CompatTest, V100WithCuda13IsAnArchitectureFinding) {
  auto findings = CheckWith(R"(["H200", "H100-80GB"])", R"(["V100"])");
  auto ids = Ids(findings);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "compat.arch"), ids.end());
  EXPECT_NE(findings[0].message.find("sm_70"), std::string::npos);
}

TEST_F(CompatTest, V100WithCuda13AlsoLacksBf16) {
  auto ids = Ids(CheckWith(R"(["H200", "H100-80GB"])", R"(["V100"])"));
  EXPECT_NE(std::find(ids.begin(), ids.end(), "compat.precision"), ids.end());
}

TEST_F(CompatTest, MI300XInACudaTargetIsAVendorFinding) {
  auto findings = CheckWith(R"(["H200", "H100-80GB"])", R"(["H200", "MI300X"])");
  ASSERT_EQ(Ids(findings), std::vector<std::string>{"compat.vendor"});
  EXPECT_NE(findings[0].remedy.find("rocm"), std::string::npos);
}

TEST_F(CompatTest, Cu124TorchTagInACuda13TargetIsATorchTagFinding) {
  auto findings = CheckWith("2.11.0+cu130", "2.11.0+cu124");
  ASSERT_EQ(Ids(findings), std::vector<std::string>{"compat.torch-tag"});
  EXPECT_NE(findings[0].remedy.find("+cu130"), std::string::npos);
}

TEST_F(CompatTest, RocmTorchBuildInACudaTargetIsATorchTagFinding) {
  EXPECT_EQ(Ids(CheckWith("2.11.0+cu130", "2.7.1+rocm6.3")),
            std::vector<std::string>{"compat.torch-tag"});
}

TEST_F(CompatTest, MisspeltAcceleratorIsUnknownWithASuggestion) {
  auto findings = CheckWith(R"(["H200", "H100-80GB"])", R"(["H2000"])");
  ASSERT_EQ(Ids(findings), std::vector<std::string>{"compat.accelerator-unknown"});
  EXPECT_EQ(findings[0].remedy, "did you mean 'H200'?");
}

TEST_F(CompatTest, UnreleasedCudaIsUnknown) {
  auto ids = Ids(CheckWith("cuda = \"13.0\"", "cuda = \"14.5\""));
  EXPECT_EQ(ids.front(), "compat.cuda-unknown");
  // The +cu130 torch build disagrees with 14.5 too, and says so separately.
  EXPECT_EQ(ids.back(), "compat.torch-tag");
}

TEST_F(CompatTest, EditedManifestMakesTheLockStale) {
  CopyExample("h200-pilot", dir_.path());
  std::string text = ReadFile(dir_.path() / "trainlock.toml");
  WriteFile(dir_.path() / "trainlock.toml", text + "\n[python]\nnumpy = \"2.1.0\"\n");
  auto findings = CheckCompatibility(LoadProject(dir_.path()), catalog_);
  ASSERT_EQ(Ids(findings), std::vector<std::string>{"lock.stale"});
  EXPECT_EQ(findings[0].path, (dir_.path() / "trainlock.lock").string());
}

TEST_F(CompatTest, EditedConfigIsALockConfigFinding) {
  auto findings = CheckWith("micro_batch: 4", "micro_batch: 2", "configs/llama-1b.yaml");
  EXPECT_EQ(Ids(findings), std::vector<std::string>{"lock.config"});
}

TEST(CompatRocm, Mi300xPilotIsClean) {
  Project project = LoadProject(testing::SourceDir() / "examples/mi300x-pilot");
  EXPECT_TRUE(CheckCompatibility(project, Catalog::Embedded()).empty());
}

TEST(CompatRocm, H200InARocmTargetIsAVendorFinding) {
  TempDir dir;
  CopyExample("mi300x-pilot", dir.path());
  std::string text = ReadFile(dir.path() / "trainlock.toml");
  text.replace(text.find(R"(["MI300X", "MI325X"])"), 20, R"(["H200"])");
  WriteFile(dir.path() / "trainlock.toml", text);
  std::filesystem::remove(dir.path() / "trainlock.lock");
  auto findings = CheckCompatibility(LoadProject(dir.path()), Catalog::Embedded());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].id, "compat.vendor");
}

TEST(CatalogData, AllReduceThresholdIsEightyPercentOfTheInterconnectAtEightGpusHalfBelow) {
  const Catalog catalog = Catalog::Embedded();
  const GpuModel& h200 = *catalog.FindGpu("H200");
  EXPECT_DOUBLE_EQ(AllReduceBusbwThreshold(h200, 8), 360.0);
  EXPECT_DOUBLE_EQ(AllReduceBusbwThreshold(h200, 2), 225.0);
  EXPECT_DOUBLE_EQ(AllReduceBusbwThreshold(h200, 16), 0.0);  // more than one node: no threshold
  EXPECT_DOUBLE_EQ(AllReduceBusbwThreshold(*catalog.FindGpu("L40S"), 2), 0.0);  // unknown
}

TEST(CatalogData, DirectoryAndEmbeddedCopiesAgree) {
  Catalog from_dir = Catalog::FromDirectory(testing::SourceDir() / "lockfiles/compat");
  Catalog embedded = Catalog::Embedded();
  EXPECT_EQ(from_dir.GpuNames(), embedded.GpuNames());
  EXPECT_GE(embedded.gpus().size(), 11u);
}

TEST(CatalogData, EveryRequiredAcceleratorIsListed) {
  Catalog catalog = Catalog::Embedded();
  for (const char* name : {"A100-40GB", "A100-80GB", "H100-80GB", "H200", "B200", "L40S", "V100",
                           "T4", "MI250X", "MI300X", "MI325X"}) {
    const GpuModel* gpu = catalog.FindGpu(name);
    ASSERT_NE(gpu, nullptr) << name;
    EXPECT_GT(gpu->memory_gb, 0) << name;
    EXPECT_GT(gpu->hbm_tbps, 0) << name;
  }
}

TEST(CatalogData, ADeviceNameAsNvmlGivesItFindsItsModel) {
  const Catalog catalog = Catalog::Embedded();
  for (const auto& [nvml, model] :
       std::vector<std::pair<const char*, const char*>>{{"NVIDIA H100 80GB HBM3", "H100-80GB"},
                                                        {"NVIDIA A100-SXM4-80GB", "A100-80GB"},
                                                        {"NVIDIA A100-SXM4-40GB", "A100-40GB"},
                                                        {"NVIDIA H200", "H200"},
                                                        {"NVIDIA L40S", "L40S"},
                                                        {"Tesla T4", "T4"}}) {
    const GpuModel* gpu = catalog.FindGpu(nvml);
    ASSERT_NE(gpu, nullptr) << nvml;
    EXPECT_EQ(gpu->name, model) << nvml;
  }
  EXPECT_EQ(catalog.FindGpu("NVIDIA RTX 9999"), nullptr);
  EXPECT_EQ(catalog.FindGpu("NVIDIA "), nullptr);
}

TEST(CatalogData, Cuda13DroppedVoltaAndKeptTuring) {
  Catalog catalog = Catalog::Embedded();
  auto sms = catalog.CudaArchitectures(*ParseVersion("13.0"));
  EXPECT_EQ(std::count(sms.begin(), sms.end(), 70), 0);
  EXPECT_EQ(std::count(sms.begin(), sms.end(), 75), 1);
  EXPECT_EQ(catalog.FindCudaDriver(*ParseVersion("13.0.1"))->linux_driver_min.ToString(),
            "580.82.07");
  EXPECT_EQ(catalog.FindCudaDriver(*ParseVersion("11.8"))->linux_driver_min.ToString(),
            "520.61.05");
}

}  // namespace
}  // namespace trainlock
