// The env.* checks on given node probes: what passes, what fails with which reason, and that
// a node without NVML skips every probe with the reason instead of passing.
#include <gtest/gtest.h>

#include <optional>

#include "probes/node_checks.h"
#include "probes/perf_checks.h"
#include "probes/visible_gpus.h"
#include "project/lockfile_loader.h"
#include "report/check_metrics.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

Lockfile PilotLock() {
  auto file = testing::SourceDir() / "examples/h200-pilot/trainlock.lock";
  return LoadLockfile(testing::ReadFile(file), file.string(), LockfileKind::kLock);
}

NodeProbe HealthyH200Node() {
  NodeProbe node;
  node.nvml_loaded = true;
  node.driver_version = "580.159.04";
  node.cuda_driver_version = 13000;
  GpuProbe g;
  g.name = "NVIDIA H200";
  g.uuid = "GPU-0";
  g.memory_total_bytes = 150109880320;
  g.cc_major = 9;
  g.ecc_enabled = true;
  g.ecc_uncorrected_volatile = 0;
  g.ecc_uncorrected_aggregate = 0;
  g.remapped_rows_uncorrectable = 0;
  g.remap_pending = false;
  g.remap_failed = false;
  g.not_supported = {"retired_pages_pending"};  // Hopper remaps rows instead
  g.temperature_c = 34;
  g.temperature_slowdown_c = 87;
  g.throttle_reasons = 0x1;  // idle: normal
  g.pcie_gen = 1;            // an idle link drops its generation: not a finding
  g.pcie_gen_max = 5;
  g.pcie_gen_gpu_max = 5;
  g.pcie_width = 16;
  g.pcie_width_max = 16;
  node.gpus.push_back(g);
  return node;
}

const BuildInfo kCuda130{"cuda", "2.11.0", 13000, 0, "", ""};

std::vector<CheckResult> CheckNode(const NodeProbe& node, const BuildInfo& build = kCuda130) {
  nlohmann::json devices = nlohmann::json::array();
  return NodeChecks(PilotLock(), node, build, Catalog::Embedded(), DeviceRuns{}, &devices);
}

CheckResult Find(const std::vector<CheckResult>& checks, const std::string& id) {
  for (const CheckResult& c : checks) {
    if (c.id == id) return c;
  }
  throw std::runtime_error("no check " + id);
}

TEST(NodeChecks, AHealthyH200NodePassesDriverRuntimeVersionsHealthAndDevices) {
  auto checks = CheckNode(HealthyH200Node());
  for (const char* id :
       {"env.driver", "env.runtime", "env.versions", "env.health", "env.devices"}) {
    EXPECT_EQ(Find(checks, id).status, CheckStatus::kPass)
        << id << ": " << Find(checks, id).summary;
  }
}

TEST(NodeChecks, WithoutNvmlEveryProbeIsSkippedWithTheReason) {
  NodeProbe node;
  node.unavailable_reason = "NVML not found (libnvidia-ml.so.1 cannot be loaded)";
  auto checks = CheckNode(node);
  for (const char* id : {"env.driver", "env.runtime", "env.arch", "env.health", "env.devices"}) {
    EXPECT_EQ(Find(checks, id).status, CheckStatus::kSkip) << id;
    EXPECT_EQ(Find(checks, id).summary, node.unavailable_reason) << id;
  }
}

TEST(NodeChecks, ThisMachineHasNoNvmlAndSaysSo) {
  NodeProbe node = ProbeNode();
  if (node.nvml_loaded) GTEST_SKIP() << "this machine has an NVIDIA driver";
  EXPECT_NE(node.unavailable_reason.find("libnvidia-ml.so.1"), std::string::npos);
}

TEST(NodeChecks, ADriverOlderThanDriverMinFails) {
  NodeProbe node = HealthyH200Node();
  node.driver_version = "570.124.06";
  CheckResult c = Find(CheckNode(node), "env.driver");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("older than the lock's driver-min 580.65.06"), std::string::npos);
}

TEST(NodeChecks, ARuntimeNewerThanTheDriverSupportsFails) {
  NodeProbe node = HealthyH200Node();
  node.cuda_driver_version = 12080;
  CheckResult c = Find(CheckNode(node), "env.runtime");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("supports CUDA 12.8 but the image's runtime is CUDA 13.0"),
            std::string::npos);
  EXPECT_NE(c.remedy.find("580.65.06"), std::string::npos);
}

// The CUDA a Python engine's torch runs on is the one the lock pins for it (the target's
// `cuda`), known before that torch is imported: a driver too old for it fails env.runtime
// naming it though the validator's own LibTorch is older.
TEST(NodeChecks, APythonEnginesTorchLockedForANewerCudaThanTheDriverSupportsFailsRuntime) {
  NodeProbe node = HealthyH200Node();
  node.driver_version = "535.104.05";
  node.cuda_driver_version = 12020;
  const BuildInfo cuda122{"cuda", "2.11.0", 12020, 0, "", ""};
  Lockfile lock = PilotLock();
  lock.validate.engine = "ddp";
  nlohmann::json devices = nlohmann::json::array();
  const CheckResult c = Find(
      NodeChecks(lock, node, cuda122, Catalog::Embedded(), DeviceRuns{}, &devices), "env.runtime");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_EQ(c.summary,
            "driver 535.104.05 supports CUDA 12.2 but the engine's torch is locked for CUDA 13.0 "
            "(the target's cuda)");
  EXPECT_NE(c.remedy.find("to 580.65.06 or newer"), std::string::npos) << c.remedy;
  // The native engine trains with the validator's LibTorch alone, which the driver supports.
  EXPECT_EQ(Find(CheckNode(node, cuda122), "env.runtime").status, CheckStatus::kPass);
}

TEST(NodeChecks, ADriverVersionNvmlDidNotGiveIsAnErrorNotAPass) {
  NodeProbe node = HealthyH200Node();
  node.driver_version.clear();
  CheckResult c = Find(CheckNode(node), "env.driver");
  EXPECT_EQ(c.status, CheckStatus::kError) << c.summary;
  EXPECT_EQ(c.summary, "NVML gave no driver version");
}

TEST(NodeChecks, ACudaDriverVersionNvmlDidNotGiveIsAnErrorNotAFailingNode) {
  NodeProbe node = HealthyH200Node();
  node.cuda_driver_version = 0;
  CheckResult c = Find(CheckNode(node), "env.runtime");
  EXPECT_EQ(c.status, CheckStatus::kError) << c.summary;
  EXPECT_NE(c.summary.find("NVML gave no CUDA version for the driver"), std::string::npos);
}

TEST(NodeChecks, TorchOrCudaDifferentFromTheLockFailsVersions) {
  CheckResult c =
      Find(CheckNode(HealthyH200Node(), {"cuda", "2.10.0", 12080, 0, "", ""}), "env.versions");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("torch 2.10.0 but the lock pins 2.11.0+cu130"), std::string::npos);
  EXPECT_NE(c.summary.find("CUDA runtime 12.8 but the lock pins 13.0"), std::string::npos);
}

// env.versions on the pilot's lock pinning `cudnn`, with `build`.
CheckResult VersionsWithCudnnPin(const std::string& pin, const BuildInfo& build) {
  Lockfile lock = PilotLock();
  lock.targets.at("cuda").cudnn = pin;
  nlohmann::json devices = nlohmann::json::array();
  return Find(
      NodeChecks(lock, HealthyH200Node(), build, Catalog::Embedded(), DeviceRuns{}, &devices),
      "env.versions");
}

BuildInfo Cuda130WithCudnn(int cudnn) {
  BuildInfo build = kCuda130;
  build.cudnn = cudnn;
  return build;
}

TEST(NodeChecks, ACudnnOtherThanTheLocksFailsVersionsNamingBoth) {
  CheckResult c = VersionsWithCudnnPin("9.13.0", Cuda130WithCudnn(91000));
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("cuDNN 9.10.0 but the lock pins 9.13.0"), std::string::npos)
      << c.summary;
  EXPECT_EQ(c.metrics["cudnn"], "9.10.0");
}

TEST(NodeChecks, TheLocksCudnnPassesVersionsToTheComponentsItPins) {
  EXPECT_EQ(VersionsWithCudnnPin("9.13.0", Cuda130WithCudnn(91300)).status, CheckStatus::kPass);
  EXPECT_EQ(VersionsWithCudnnPin("9.13", Cuda130WithCudnn(91302)).status, CheckStatus::kPass);
  EXPECT_EQ(VersionsWithCudnnPin("9.13.1", Cuda130WithCudnn(91302)).status, CheckStatus::kFail);
}

// The ROCm and RCCL that run are not read yet: their pins make env.versions an error, never a
// pass that says the versions match.
TEST(NodeChecks, ARocmPinThatIsNotComparedIsAnErrorNotAMatch) {
  const std::filesystem::path file = testing::SourceDir() / "examples/mi300x-pilot/trainlock.lock";
  const Lockfile lock = LoadLockfile(testing::ReadFile(file), file.string(), LockfileKind::kLock);
  const BuildInfo rocm{"rocm", lock.targets.at("rocm").torch.substr(0, 5), 0, 0, "", ""};
  nlohmann::json devices = nlohmann::json::array();
  const CheckResult c =
      Find(NodeChecks(lock, HealthyH200Node(), rocm, Catalog::Embedded(), DeviceRuns{}, &devices),
           "env.versions");
  EXPECT_EQ(c.status, CheckStatus::kError) << c.summary;
  EXPECT_NE(c.summary.find("the lock pins ROCm 6.3.4, which this validator does not compare yet"),
            std::string::npos)
      << c.summary;
}

TEST(NodeChecks, ACudnnPinNoLoadedCudnnCanBeComparedWithIsAnErrorNotAPass) {
  CheckResult c = VersionsWithCudnnPin("9.13.0", Cuda130WithCudnn(0));
  EXPECT_EQ(c.status, CheckStatus::kError) << c.summary;
  EXPECT_EQ(c.summary, "the lock pins cuDNN 9.13.0, and no cuDNN is loaded");
}

TEST(NodeChecks, APythonEnginesCudnnIsTheOneCompared) {
  BuildInfo build = Cuda130WithCudnn(91300);  // this binary's LibTorch's matches
  build.engine_torch = "2.11.0+cu130";
  build.engine_python = "/opt/venv/bin/python";
  build.engine_cudnn = "9.10.2";
  CheckResult c = VersionsWithCudnnPin("9.13.0", build);
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("cuDNN 9.10.2 but the lock pins 9.13.0"), std::string::npos)
      << c.summary;
}

TEST(NodeChecks, CudnnVersionNumbersReadAsTheirReleases) {
  EXPECT_EQ(CudnnVersionString(91300), "9.13.0");
  EXPECT_EQ(CudnnVersionString(8907), "8.9.7");
  EXPECT_EQ(CudnnVersionString(0), "");
}

// A Python engine trains with its interpreter's torch, which must be the lock's too.
TEST(NodeChecks, AnEngineTorchOtherThanTheLocksFailsVersionsNamingBoth) {
  CheckResult c = Find(CheckNode(HealthyH200Node(), {"cuda", "2.11.0", 13000, 0, "2.10.0+cu128",
                                                     "/opt/venv/bin/python"}),
                       "env.versions");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("the engine's torch 2.10.0+cu128 (/opt/venv/bin/python) but the lock "
                           "pins 2.11.0+cu130"),
            std::string::npos)
      << c.summary;
  EXPECT_EQ(c.metrics["engine_torch"], "2.10.0+cu128");
  EXPECT_EQ(c.metrics["engine_python"], "/opt/venv/bin/python");
}

TEST(NodeChecks, AnEngineTorchOfTheLocksReleasePassesVersions) {
  CheckResult c = Find(CheckNode(HealthyH200Node(), {"cuda", "2.11.0", 13000, 0, "2.11.0+cu130",
                                                     "/opt/venv/bin/python"}),
                       "env.versions");
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.summary;
}

// --only: a check not selected is the skip "not selected (--only)", whatever the probe says.
TEST(NodeChecks, AnUnselectedCheckIsNeverJudged) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].ecc_uncorrected_volatile = 3;  // env.health would fail
  nlohmann::json devices = nlohmann::json::array();
  auto checks = NodeChecks(PilotLock(), node, kCuda130, Catalog::Embedded(), DeviceRuns{}, &devices,
                           {"env.versions"});
  EXPECT_EQ(Find(checks, "env.health").status, CheckStatus::kSkip);
  EXPECT_EQ(Find(checks, "env.health").summary, "not selected (--only)");
  EXPECT_EQ(Find(checks, "env.arch").summary, "not selected (--only)");
  EXPECT_EQ(Find(checks, "env.versions").status, CheckStatus::kPass);
}

TEST(NodeChecks, UncorrectableEccErrorsFailHealth) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].ecc_uncorrected_volatile = 3;
  CheckResult c = Find(CheckNode(node), "env.health");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("GPU 0: 3 uncorrectable ECC errors"), std::string::npos);
}

// A GPU NVML counts but cannot open must not drop out of the evidence (7 healthy of 8).
TEST(NodeChecks, AGpuNvmlCountsButCannotOpenFailsHealthNamingTheFault) {
  NodeProbe node = HealthyH200Node();
  node.unopened = {{1, 15}};  // NVML_ERROR_GPU_IS_LOST
  CheckResult c = Find(CheckNode(node), "env.health");
  EXPECT_EQ(c.status, CheckStatus::kFail) << c.summary;
  EXPECT_NE(c.summary.find("GPU 1: NVML cannot open it: NVML_ERROR_GPU_IS_LOST"), std::string::npos)
      << c.summary;
}

TEST(NodeChecks, AGpuOfAnotherJobsDeviceCgroupIsNotAFinding) {
  NodeProbe node = HealthyH200Node();
  node.unopened = {{1, 4}};  // NVML_ERROR_NO_PERMISSION: Slurm's ConstrainDevices
  EXPECT_EQ(Find(CheckNode(node), "env.health").status, CheckStatus::kPass);
}

TEST(NodeChecks, AnUnexplainedStatusOpeningAGpuIsAnErrorNotAPass) {
  NodeProbe node = HealthyH200Node();
  node.unopened = {{1, 999}};
  CheckResult c = Find(CheckNode(node), "env.health");
  EXPECT_EQ(c.status, CheckStatus::kError) << c.summary;
  EXPECT_NE(c.summary.find("GPU 1 (NVML status 999 opening it)"), std::string::npos) << c.summary;
}

TEST(NodeChecks, AGpuCountNvmlCouldNotGiveIsAnErrorNotASkip) {
  NodeProbe node = HealthyH200Node();
  node.gpus.clear();
  node.count_status = 999;
  CheckResult c = Find(CheckNode(node), "env.health");
  EXPECT_EQ(c.status, CheckStatus::kError) << c.summary;
  EXPECT_NE(c.summary.find("the GPU count (NVML status 999)"), std::string::npos) << c.summary;
}

TEST(NodeChecks, PendingRowRemapFailsHealth) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].remap_pending = true;
  EXPECT_EQ(Find(CheckNode(node), "env.health").status, CheckStatus::kFail);
}

TEST(NodeChecks, HardwareThermalSlowdownFailsHealthButIdleDoesNot) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].throttle_reasons = 0x40 | 0x1;
  CheckResult c = Find(CheckNode(node), "env.health");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("clocks held down by hw_thermal_slowdown"), std::string::npos)
      << c.summary;
}

TEST(NodeChecks, ATemperatureAtTheSlowdownThresholdFailsHealth) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].temperature_c = 87;
  CheckResult c = Find(CheckNode(node), "env.health");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("GPU 0: 87 C, at or above its slowdown threshold of 87 C"),
            std::string::npos)
      << c.summary;
}

TEST(NodeChecks, APcieLinkBelowItsWidthFailsHealth) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].pcie_width = 8;
  CheckResult c = Find(CheckNode(node), "env.health");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("GPU 0: PCIe link at x8 of x16"), std::string::npos) << c.summary;
}

TEST(NodeChecks, ASlotThatLimitsThePcieGenerationFailsHealth) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].pcie_gen_max = 3;
  CheckResult c = Find(CheckNode(node), "env.health");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("limited to gen 3 by the slot; the GPU supports gen 5"),
            std::string::npos)
      << c.summary;
}

TEST(NodeChecks, EccDisabledOnAGpuThatHasItFailsHealth) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].ecc_enabled = false;
  CheckResult c = Find(CheckNode(node), "env.health");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("ECC is disabled"), std::string::npos) << c.summary;
}

TEST(NodeChecks, AGpuWithoutEccIsNotJudgedOnEcc) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].ecc_enabled.reset();
  node.gpus[0].ecc_uncorrected_volatile.reset();
  node.gpus[0].not_supported.push_back("ecc_enabled");
  const CheckResult c = Find(CheckNode(node), "env.health");
  EXPECT_EQ(c.status, CheckStatus::kPass);
  EXPECT_EQ(c.summary.find("ECC on"), std::string::npos) << "claims what it did not judge";
  EXPECT_NE(c.summary.find("the rest not judged"), std::string::npos) << c.summary;
}

TEST(NodeChecks, AHealthyGpuIsSaidToPassOnEveryAspect) {
  const CheckResult c = Find(CheckNode(HealthyH200Node()), "env.health");
  EXPECT_EQ(c.status, CheckStatus::kPass);
  EXPECT_NE(c.summary.find("ECC on, no uncorrectable errors, no pending retirements or remaps, "
                           "below the slowdown temperature, no slowdown, PCIe links at full width"),
            std::string::npos)
      << c.summary;
}

// Under a virtual GPU NVML may support no health field at all: nothing was measured, so no pass.
TEST(NodeChecks, AGpuWhoseEveryHealthFieldIsNotSupportedIsNotAPass) {
  NodeProbe node = HealthyH200Node();
  GpuProbe& g = node.gpus[0];
  g.ecc_enabled.reset();
  g.ecc_uncorrected_volatile.reset();
  g.retired_pages_pending.reset();
  g.remap_failed.reset();
  g.temperature_c.reset();
  g.temperature_slowdown_c.reset();
  g.throttle_reasons.reset();
  g.pcie_width.reset();
  g.pcie_width_max.reset();
  g.pcie_gen_max.reset();
  g.pcie_gen_gpu_max.reset();
  g.not_supported = {"ecc_enabled",           "ecc_uncorrected_volatile",
                     "retired_pages_pending", "remapped_rows",
                     "temperature_c",         "temperature_slowdown_c",
                     "throttle_reasons",      "pcie_width",
                     "pcie_width_max",        "pcie_gen_max",
                     "pcie_gen_gpu_max"};
  const CheckResult c = Find(CheckNode(node), "env.health");
  EXPECT_EQ(c.status, CheckStatus::kSkip) << c.summary;
  EXPECT_NE(c.summary.find("GPU 0: NVML supports none of the health fields"), std::string::npos)
      << c.summary;
}

TEST(NodeChecks, AFieldNvmlCouldNotReadIsUnknownNotHealthy) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].temperature_c.reset();  // an NVML error, not "not supported"
  CheckResult c = Find(CheckNode(node), "env.health");
  EXPECT_EQ(c.status, CheckStatus::kError);
  EXPECT_NE(c.summary.find("NVML could not report: GPU 0 temperature_c"), std::string::npos)
      << c.summary;
  EXPECT_EQ(c.metrics["unknown"], nlohmann::json({"GPU 0 temperature_c"}));
}

TEST(NodeChecks, AnUnknownFieldIsStillListedBesideAFinding) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].pcie_width.reset();
  node.gpus[0].remap_failed = true;
  CheckResult c = Find(CheckNode(node), "env.health");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("row remapping failed; NVML could not report GPU 0 pcie_width"),
            std::string::npos)
      << c.summary;
}

TEST(NodeChecks, AGpuNotAmongTheTargetsAcceleratorsFailsDevices) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].name = "NVIDIA A100-SXM4-80GB";
  CheckResult c = Find(CheckNode(node), "env.devices");
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("not among the target's accelerators (H200, H100-80GB)"),
            std::string::npos);
}

TEST(NodeChecks, AnH100NamedAsNvmlNamesItIsAmongThePilotsAccelerators) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].name = "NVIDIA H100 80GB HBM3";  // NVML's name; the catalog's alias lacks "NVIDIA "
  node.gpus[0].memory_total_bytes = 85520809984;
  CheckResult c = Find(CheckNode(node), "env.devices");
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.summary;
}

TEST(NodeChecks, DevicesAreListedForTheReport) {
  nlohmann::json devices = nlohmann::json::array();
  NodeChecks(PilotLock(), HealthyH200Node(), kCuda130, Catalog::Embedded(), DeviceRuns{}, &devices);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0]["compute_capability"], "9.0");
  EXPECT_EQ(devices[0]["memory_bytes"], 150109880320ull);
}

DeviceRuns RunsOnOneH200(std::vector<int> sass, double tflops = 780, double tbps = 4.3) {
  DeviceRuns runs;
  runs.devices = {
      {{"index", 0}, {"launch_ok", true}, {"matmul_tflops", tflops}, {"copy_tbps", tbps}}};
  GpuBinaryInfo info;
  info.sass = std::move(sass);
  runs.libraries.emplace_back("/opt/torch/lib/libtorch_cuda.so", info);
  return runs;
}

CheckResult ArchOf(const DeviceRuns& runs) {
  nlohmann::json devices = nlohmann::json::array();
  return Find(
      NodeChecks(PilotLock(), HealthyH200Node(), kCuda130, Catalog::Embedded(), runs, &devices),
      "env.arch");
}

TEST(NodeChecks, ArchPassesWhenTheLibraryHasSm90AndTheLaunchRan) {
  CheckResult c = ArchOf(RunsOnOneH200({80, 90}));
  EXPECT_EQ(c.status, CheckStatus::kPass) << c.summary;
}

TEST(NodeChecks, ArchWithNoGpuVisibleIsSkippedNotPassed) {
  NodeProbe node = HealthyH200Node();
  node.hidden = node.gpus;  // as RestrictToVisibleGpus leaves a process that sees none
  node.gpus.clear();
  DeviceRuns runs = RunsOnOneH200({90});
  runs.devices.clear();
  nlohmann::json devices = nlohmann::json::array();
  CheckResult c = Find(NodeChecks(PilotLock(), node, kCuda130, Catalog::Embedded(), runs, &devices),
                       "env.arch");
  EXPECT_EQ(c.status, CheckStatus::kSkip) << c.summary;
  EXPECT_NE(c.summary.find("no GPU visible"), std::string::npos) << c.summary;
}

TEST(NodeChecks, ArchFailsWhenTheLibraryLacksCodeForTheDevice) {
  CheckResult c = ArchOf(RunsOnOneH200({80}));
  EXPECT_EQ(c.status, CheckStatus::kFail);
  EXPECT_NE(c.summary.find("libtorch_cuda.so on GPU 0: no code for sm_90 (has sm_80)"),
            std::string::npos)
      << c.summary;
}

TEST(NodeChecks, ArchFailsWhenTheKernelLaunchFailed) {
  DeviceRuns runs = RunsOnOneH200({90});
  runs.devices[0]["launch_ok"] = false;
  EXPECT_EQ(ArchOf(runs).status, CheckStatus::kFail);
}

// A MIG node as the audit found it: NVML lists whole GPUs, CUDA reached one MIG instance.
NodeProbe TwoH200sInMigMode() {
  NodeProbe node = HealthyH200Node();
  node.gpus.push_back(node.gpus[0]);
  node.gpus[1].index = 1;
  for (GpuProbe& g : node.gpus) g.mig = true;
  return node;
}

TEST(NodeChecks, ArchOnMigInstancesIsSkippedNamingMigNotFailed) {
  nlohmann::json devices = nlohmann::json::array();
  CheckResult c = Find(NodeChecks(PilotLock(), TwoH200sInMigMode(), kCuda130, Catalog::Embedded(),
                                  RunsOnOneH200({90}), &devices),
                       "env.arch");
  EXPECT_EQ(c.status, CheckStatus::kSkip) << c.summary;
  EXPECT_NE(c.summary.find("MIG mode on GPU 0 and GPU 1"), std::string::npos) << c.summary;
}

TEST(PerfChecks, OnMigInstancesTheWholeGpusThresholdsAreNotApplied) {
  // A 1g slice measures a seventh of the datasheet: not a slow GPU.
  auto checks = PerfChecks(TwoH200sInMigMode(), RunsOnOneH200({90}, 110, 0.6), Catalog::Embedded());
  for (const char* id : {"perf.matmul", "perf.hbm"}) {
    EXPECT_EQ(Find(checks, id).status, CheckStatus::kSkip) << Find(checks, id).summary;
    EXPECT_NE(Find(checks, id).summary.find("MIG mode on GPU 0"), std::string::npos);
  }
}

TEST(PerfChecks, AnH200AtDatasheetSpeedPasses) {
  auto checks = PerfChecks(HealthyH200Node(), RunsOnOneH200({90}), Catalog::Embedded());
  EXPECT_EQ(Find(checks, "perf.matmul").status, CheckStatus::kPass);
  EXPECT_EQ(Find(checks, "perf.hbm").status, CheckStatus::kPass);
  EXPECT_NE(Find(checks, "perf.matmul").summary.find("GPU 0 (NVIDIA H200) 780"), std::string::npos);
}

TEST(PerfChecks, AThrottledGpuFailsWithItsNumbers) {
  auto checks = PerfChecks(HealthyH200Node(), RunsOnOneH200({90}, 300, 2.0), Catalog::Embedded());
  CheckResult matmul = Find(checks, "perf.matmul"), hbm = Find(checks, "perf.hbm");
  EXPECT_EQ(matmul.status, CheckStatus::kFail);
  EXPECT_NE(matmul.summary.find("300 TFLOP/s"), std::string::npos) << matmul.summary;
  EXPECT_EQ(hbm.status, CheckStatus::kFail);  // 2.0 < 0.7 x 4.8 TB/s
}

TEST(PerfChecks, AReadingAboveTheDatasheetIsAnErrorNotAFastGpu) {
  // What timing a second GPU's work by synchronizing the first gave: 22 PFLOP/s, 333 TB/s.
  auto checks =
      PerfChecks(HealthyH200Node(), RunsOnOneH200({90}, 22305, 333.1), Catalog::Embedded());
  CheckResult matmul = Find(checks, "perf.matmul"), hbm = Find(checks, "perf.hbm");
  EXPECT_EQ(matmul.status, CheckStatus::kError);
  EXPECT_NE(matmul.summary.find("above the datasheet peak"), std::string::npos) << matmul.summary;
  EXPECT_EQ(hbm.status, CheckStatus::kError);
}

TEST(PerfChecks, AGpuTheCatalogDoesNotKnowIsASkipNotAPass) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].name = "NVIDIA Future GPU";
  auto checks = PerfChecks(node, RunsOnOneH200({90}), Catalog::Embedded());
  CheckResult matmul = Find(checks, "perf.matmul");
  EXPECT_EQ(matmul.status, CheckStatus::kSkip);
  EXPECT_NE(matmul.summary.find("no threshold: GPU 0 (NVIDIA Future GPU): not in the GPU catalog"),
            std::string::npos)
      << matmul.summary;
  EXPECT_EQ(Find(checks, "perf.hbm").status, CheckStatus::kSkip);
}

TEST(PerfChecks, AProbeThatErroredIsAnErrorNotAPass) {
  DeviceRuns runs = RunsOnOneH200({90});
  runs.devices[0].erase("matmul_tflops");
  runs.devices[0].erase("copy_tbps");
  runs.devices[0]["error"] = "CUDA error: an illegal memory access was encountered";
  auto checks = PerfChecks(HealthyH200Node(), runs, Catalog::Embedded());
  CheckResult matmul = Find(checks, "perf.matmul");
  EXPECT_EQ(matmul.status, CheckStatus::kError);
  EXPECT_NE(matmul.summary.find("GPU 0 (NVIDIA H200): CUDA error: an illegal memory access"),
            std::string::npos)
      << matmul.summary;
}

TEST(PerfChecks, AGpuTheWorkerNeverMeasuredIsAnError) {
  NodeProbe node = HealthyH200Node();
  node.gpus.push_back(node.gpus[0]);
  node.gpus[1].index = 1;
  CheckResult hbm = Find(PerfChecks(node, RunsOnOneH200({90}), Catalog::Embedded()), "perf.hbm");
  EXPECT_EQ(hbm.status, CheckStatus::kError);
  EXPECT_NE(hbm.summary.find("GPU 1 (NVIDIA H200): no measurement"), std::string::npos)
      << hbm.summary;
}

TEST(PerfChecks, ADatasheetWithoutBf16IsASkipNotAboveThePeak) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].name = "Tesla V100-SXM2-32GB";
  CheckResult matmul =
      Find(PerfChecks(node, RunsOnOneH200({70}, 100, 0.8), Catalog::Embedded()), "perf.matmul");
  EXPECT_EQ(matmul.status, CheckStatus::kSkip);
  EXPECT_NE(matmul.summary.find("no TFLOP/s bf16 dense on the datasheet"), std::string::npos)
      << matmul.summary;
}

// An H100 80GB HBM3 that bursts at 780 TFLOP/s and sustained `sustained` over the last second at
// its power limit (the catalog's healthy figure: 691).
CheckResult MatmulOfAnH100Sustaining(std::optional<double> sustained) {
  NodeProbe node = HealthyH200Node();
  node.gpus[0].name = "NVIDIA H100 80GB HBM3";
  DeviceRuns runs = RunsOnOneH200({90}, 780, 3.0);
  if (sustained) runs.devices[0]["matmul_tflops_sustained"] = *sustained;
  return Find(PerfChecks(node, runs, Catalog::Embedded()), "perf.matmul");
}

TEST(PerfChecks, AnH100SustainingFarBelowAHealthyOneAtItsPowerLimitFailsNamingTheSustainedRate) {
  const CheckResult matmul = MatmulOfAnH100Sustaining(560);  // 0.81 x 691
  EXPECT_EQ(matmul.status, CheckStatus::kFail);
  EXPECT_NE(matmul.summary.find("GPU 0 (NVIDIA H100 80GB HBM3) 560 TFLOP/s bf16 dense sustained "
                                "at its power limit, under 0.85 x the 691 a healthy one sustains "
                                "there"),
            std::string::npos)
      << matmul.summary;
  const PerfDevice d = ReadMetrics<PerfMetrics>(matmul.metrics).devices->at(0);
  EXPECT_EQ(d.sustained_value, 560.0);
  EXPECT_NEAR(d.sustained_threshold.value_or(std::nullopt).value_or(0), 587.35, 1e-9);
}

TEST(PerfChecks, AnH100SustainingNearAHealthyOneAtItsPowerLimitPasses) {
  const CheckResult matmul = MatmulOfAnH100Sustaining(680);
  EXPECT_EQ(matmul.status, CheckStatus::kPass) << matmul.summary;
  EXPECT_NE(matmul.summary.find("slowest sustained: GPU 0 (NVIDIA H100 80GB HBM3) 680 TFLOP/s"),
            std::string::npos)
      << matmul.summary;
}

TEST(PerfChecks, AnH100WithoutASustainedRateIsAnErrorNotAPass) {
  const CheckResult matmul = MatmulOfAnH100Sustaining(std::nullopt);
  EXPECT_EQ(matmul.status, CheckStatus::kError);
  EXPECT_NE(matmul.summary.find("no sustained rate (matmul_tflops_sustained)"), std::string::npos)
      << matmul.summary;
}

TEST(PerfChecks, AGpuTheCatalogHasNoSustainedFigureForIsNotJudgedOnItAndTheSummarySaysSo) {
  DeviceRuns runs = RunsOnOneH200({90});
  runs.devices[0]["matmul_tflops_sustained"] = 100.0;  // would fail any H200 figure
  const CheckResult matmul =
      Find(PerfChecks(HealthyH200Node(), runs, Catalog::Embedded()), "perf.matmul");
  EXPECT_EQ(matmul.status, CheckStatus::kPass) << matmul.summary;
  EXPECT_NE(matmul.summary.find("sustained rate not judged (no matmul-tflops-at-power-limit in "
                                "the GPU catalog for GPU 0 (NVIDIA H200))"),
            std::string::npos)
      << matmul.summary;
  const PerfDevice d = ReadMetrics<PerfMetrics>(matmul.metrics).devices->at(0);
  ASSERT_TRUE(d.sustained_threshold);
  EXPECT_FALSE(*d.sustained_threshold) << "written as null";
}

}  // namespace
// Two GPUs on the node, the second of which this process sees as cuda:0 (CUDA_VISIBLE_DEVICES=1).
NodeProbe TwoH200NodeWithUuids() {
  NodeProbe node = HealthyH200Node();
  node.gpus.push_back(node.gpus[0]);
  node.gpus[0].uuid = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
  node.gpus[1].uuid = "GPU-bbbbbbbb-0000-0000-0000-000000000000";
  node.gpus[1].index = 1;
  return node;
}

DeviceRuns RunsSeeingOnlyTheSecondGpu() {
  DeviceRuns runs = RunsOnOneH200({90});
  runs.devices[0]["uuid"] = "GPU-bbbbbbbb-0000-0000-0000-000000000000";
  return runs;
}

TEST(VisibleGpus, AProcessSeeingOneOfTwoGpusIsJudgedOnThatGpuByItsNvmlIndex) {
  NodeProbe node = TwoH200NodeWithUuids();
  DeviceRuns runs = RunsSeeingOnlyTheSecondGpu();
  RestrictToVisibleGpus(node, runs);
  ASSERT_EQ(node.gpus.size(), 1u);
  EXPECT_EQ(node.gpus[0].index, 1u);
  ASSERT_EQ(node.hidden.size(), 1u);
  EXPECT_EQ(node.hidden[0].index, 0u);
  EXPECT_EQ(runs.devices[0]["index"], 1);
  EXPECT_EQ(runs.devices[0]["cuda_index"], 0);
  auto perf = PerfChecks(node, runs, Catalog::Embedded());
  EXPECT_EQ(Find(perf, "perf.matmul").status, CheckStatus::kPass);
  EXPECT_NE(Find(perf, "perf.matmul").summary.find("GPU 1 (NVIDIA H200) 780"), std::string::npos);
  nlohmann::json devices = nlohmann::json::array();
  auto env = NodeChecks(PilotLock(), node, kCuda130, Catalog::Embedded(), runs, &devices);
  EXPECT_EQ(Find(env, "env.arch").status, CheckStatus::kPass) << Find(env, "env.arch").summary;
  CheckResult listed = Find(env, "env.devices");
  EXPECT_EQ(listed.status, CheckStatus::kPass);
  EXPECT_NE(listed.summary.find("GPU 0 of the node not visible to this process"), std::string::npos)
      << listed.summary;
  EXPECT_EQ(listed.metrics["not_visible"], nlohmann::json::array({0}));
}

TEST(VisibleGpus, WithoutUuidsFromTheWorkerEveryNvmlGpuStaysAndTheUnmeasuredOneIsAnError) {
  NodeProbe node = TwoH200NodeWithUuids();
  DeviceRuns runs = RunsOnOneH200({90});  // no uuid: an older worker, or a build without CUDA
  RestrictToVisibleGpus(node, runs);
  EXPECT_EQ(node.gpus.size(), 2u);
  EXPECT_TRUE(node.hidden.empty());
  EXPECT_EQ(Find(PerfChecks(node, runs, Catalog::Embedded()), "perf.hbm").status,
            CheckStatus::kError);
}

TEST(VisibleGpus, AUuidNvmlDoesNotKnowChangesNothing) {
  NodeProbe node = TwoH200NodeWithUuids();
  DeviceRuns runs = RunsSeeingOnlyTheSecondGpu();
  runs.devices[0]["uuid"] = "MIG-cccccccc-0000-0000-0000-000000000000";
  RestrictToVisibleGpus(node, runs);
  EXPECT_EQ(node.gpus.size(), 2u);
  EXPECT_EQ(runs.devices[0]["index"], 0);
}

TEST(VisibleGpus, TwoDevicesClaimingOneGpuChangeNothing) {
  NodeProbe node = TwoH200NodeWithUuids();
  DeviceRuns runs = RunsSeeingOnlyTheSecondGpu();
  runs.devices.push_back(runs.devices[0]);
  runs.devices[1]["index"] = 1;
  RestrictToVisibleGpus(node, runs);
  EXPECT_EQ(node.gpus.size(), 2u);
  EXPECT_TRUE(node.hidden.empty());
}

}  // namespace trainlock::validate
