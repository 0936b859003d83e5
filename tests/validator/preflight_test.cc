// The validation's diagnosis before any work (validators/coordinator/preflight.h): the driver's
// checks are judged from NVML before CUDA or the engine's framework is asked anything, and when
// the GPU or the framework then cannot be used, what they found decides the verdict. In a locked
// image, a framework that does not import in the image's own interpreter fails env.packages
// naming the file (framework_import.h). Each test plants its fault in a node probe or in an
// engine probe's answer: no GPU is needed.
#include <gtest/gtest.h>

#include "compat/catalog.h"
#include "coordinator/accelerator_presence.h"
#include "coordinator/framework_import.h"
#include "coordinator/preflight.h"
#include "image/in_image_paths.h"
#include "probes/node_checks.h"
#include "project/check_ids.h"
#include "project/lockfile_loader.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

// examples/h200-pilot: a cuda target for CUDA 13.0 with driver-min 580.65.06, the native engine.
Lockfile PilotLock() {
  const auto file = testing::SourceDir() / "examples/h200-pilot/trainlock.lock";
  return LoadLockfile(testing::ReadFile(file), file.string(), LockfileKind::kLock);
}

Lockfile PilotLockWithEngine(const std::string& engine) {
  Lockfile lock = PilotLock();
  lock.validate.engine = engine;
  return lock;
}

// One H200 as NVML reports it on a node whose driver is 580 (CUDA 13.0), healthy.
NodeProbe H200Node() {
  NodeProbe node;
  node.nvml_loaded = true;
  node.driver_version = "580.159.04";
  node.cuda_driver_version = 13000;
  GpuProbe g;
  g.name = "NVIDIA H200";
  g.uuid = "GPU-0";
  g.cc_major = 9;
  g.ecc_enabled = true;
  g.ecc_uncorrected_volatile = 0;
  g.remap_pending = false;
  g.remap_failed = false;
  g.not_supported = {"retired_pages_pending"};
  g.temperature_c = 34;
  g.temperature_slowdown_c = 87;
  g.throttle_reasons = 0x1;
  g.pcie_gen_max = 5;
  g.pcie_gen_gpu_max = 5;
  g.pcie_width = 16;
  g.pcie_width_max = 16;
  node.gpus.push_back(g);
  return node;
}

// The same node provisioned with a driver of the CUDA 12.2 generation.
NodeProbe NodeWithDriver535() {
  NodeProbe node = H200Node();
  node.driver_version = "535.104.05";
  node.cuda_driver_version = 12020;
  return node;
}

BuildInfo CudaBuild(int cuda_runtime) {
  BuildInfo build;
  build.flavour = "cuda";
  build.torch = "2.11.0";
  build.cuda_runtime = cuda_runtime;
  return build;
}

std::vector<CheckResult> DriverFirst(const NodeProbe& node, const Lockfile& lock = PilotLock(),
                                     const BuildInfo& build = CudaBuild(13000)) {
  return DriverChecks(lock, node, build, Catalog::Embedded());
}

// What CUDA says on a node whose driver it cannot use: no GPU.
std::string CudaSeesNoGpu() {
  return MissingAccelerator("cuda", "auto", PilotLock(), 0);
}

// The engine probe's answer from the image's interpreter whose torch does not import.
EngineProbe TorchDoesNotImport(const std::string& python, const std::string& why) {
  EngineProbe p;
  p.engine = "ddp";
  p.python = python;
  p.failure = EngineProbeFailure::kImport;
  p.missing = "torch";
  p.import_error = why;
  p.error = "engine ddp: " + python + " cannot import torch (" + why +
            "): install torch in that interpreter or pass --python PATH";
  return p;
}

constexpr const char* kLibtorchNotLoaded =
    "libtorch_cpu.so: cannot open shared object file: No such file or directory";

const CheckResult& Find(const std::vector<CheckResult>& checks, const std::string& id) {
  for (const CheckResult& c : checks)
    if (c.id == id) return c;
  throw std::runtime_error("no check " + id);
}

Report StoppedReport(const Preflight& p) {
  Report report;
  ReportStoppedChecks(p, report);
  return report;
}

TEST(Preflight, ADriverTooOldForTheImagesCudaFailsRuntimeNamingBothVersionsAndTheDriverToInstall) {
  const Preflight p = DecideBeforeWork(DriverFirst(NodeWithDriver535()), CudaSeesNoGpu(),
                                       std::nullopt, /*in_image=*/false, {});
  const CheckResult& runtime = Find(p.judged, "env.runtime");
  EXPECT_EQ(runtime.status, CheckStatus::kFail);
  EXPECT_EQ(runtime.summary,
            "driver 535.104.05 supports CUDA 12.2 but the image's runtime is CUDA 13.0");
  EXPECT_NE(runtime.remedy.find("upgrade the NVIDIA driver on this node to 580.65.06 or newer"),
            std::string::npos)
      << runtime.remedy;

  // Not "start the container with its GPUs": the node fails, exit 1.
  EXPECT_EQ(p.environment_error, "");
  const Report report = StoppedReport(p);
  EXPECT_EQ(report.Verdict(), "fail");
  EXPECT_EQ(report.environment_error, "");
  EXPECT_EQ(report.checks.size(), kCheckIds.size());
  for (const CheckResult& c : report.checks) {
    if (c.id == "env.driver" || c.id == "env.runtime" || c.id == "env.health") continue;
    EXPECT_EQ(c.status, CheckStatus::kSkip) << c.id;
    EXPECT_EQ(c.summary.find("start the container"), std::string::npos) << c.summary;
    EXPECT_NE(c.summary.find("env.driver, env.runtime failed before any work"), std::string::npos)
        << c.summary;
  }
}

TEST(Preflight, TheDriverAndHealthAreJudgedBeforeTheEngineAndStayInTheReport) {
  // A Python engine whose torch sees no CUDA device: the driver checks, judged first from NVML
  // alone, say why, each with its own verdict.
  EngineProbe engine;
  engine.engine = "ddp";
  engine.python = kPythonInImage;
  engine.failure = EngineProbeFailure::kNoCuda;
  engine.error =
      "engine ddp: /opt/venv/bin/python3 has torch 2.11.0+cu130 without a usable CUDA "
      "device and this run trains on the GPU: install a CUDA build of torch in that "
      "interpreter or pass --python PATH";
  const Lockfile lock = PilotLockWithEngine("ddp");
  const Preflight p = DecideBeforeWork(DriverFirst(NodeWithDriver535(), lock), "", engine,
                                       /*in_image=*/true, {});
  ASSERT_EQ(p.judged.size(), 3u);
  EXPECT_EQ(p.judged[0].id, "env.driver");
  EXPECT_EQ(p.judged[0].status, CheckStatus::kFail);
  EXPECT_NE(p.judged[0].summary.find("older than the lock's driver-min 580.65.06"),
            std::string::npos);
  EXPECT_EQ(p.judged[1].id, "env.runtime");
  EXPECT_EQ(p.judged[1].status, CheckStatus::kFail);
  EXPECT_EQ(p.judged[2].id, "env.health");
  EXPECT_EQ(p.judged[2].status, CheckStatus::kPass) << p.judged[2].summary;
  EXPECT_EQ(p.environment_error, "");
  EXPECT_EQ(p.stopped,
            "env.driver, env.runtime failed before any work, and the engine's torch "
            "(/opt/venv/bin/python3) can use no GPU here");  // not "install a CUDA build"
  EXPECT_EQ(StoppedReport(p).Verdict(), "fail");
}

TEST(Preflight, WithoutNvmlACudaBuildSeeingNoGpuIsStillNotJudged) {
  NodeProbe node;
  node.unavailable_reason = "NVML not found (libnvidia-ml.so.1 cannot be loaded)";
  const Preflight p = DecideBeforeWork(DriverFirst(node), CudaSeesNoGpu(), std::nullopt, false, {});
  EXPECT_EQ(p.environment_error, CudaSeesNoGpu());
  const Report report = StoppedReport(p);
  EXPECT_EQ(report.Verdict(), "error");
  for (const CheckResult& c : report.checks) EXPECT_EQ(c.status, CheckStatus::kSkip) << c.id;
}

TEST(Preflight, AHealthyDriverLeavesAContainerWithoutItsGpusNotJudgedWithTheDriverChecksPassed) {
  const Preflight p =
      DecideBeforeWork(DriverFirst(H200Node()), CudaSeesNoGpu(), std::nullopt, false, {});
  EXPECT_EQ(p.environment_error, CudaSeesNoGpu());
  const Report report = StoppedReport(p);
  EXPECT_EQ(report.Verdict(), "error");
  EXPECT_EQ(Find(report.checks, "env.runtime").status, CheckStatus::kPass);
  EXPECT_EQ(Find(report.checks, "train.step").status, CheckStatus::kSkip);
}

TEST(Preflight, InALockedImageATorchThatDoesNotImportFailsEnvPackagesNamingTheFile) {
  const Preflight p =
      DecideBeforeWork(DriverFirst(H200Node()), "",
                       TorchDoesNotImport(kPythonInImage, kLibtorchNotLoaded), true, {});
  EXPECT_EQ(p.stopped, "");  // the node's other checks run
  ASSERT_TRUE(p.framework_import);
  const CheckResult& packages = *p.framework_import;
  EXPECT_EQ(packages.id, "env.packages");
  EXPECT_EQ(packages.status, CheckStatus::kFail);
  EXPECT_EQ(packages.summary,
            "the image's Python (/opt/venv/bin/python3) cannot import torch, which the lock "
            "installs in it: " +
                std::string(kLibtorchNotLoaded));
  EXPECT_EQ(packages.remedy,
            "the image is broken at libtorch_cpu.so: rebuild it from the lock (`trainlock image "
            "build`) or pull it again by its digest");
  Report report;
  report.checks.push_back(packages);
  for (const CheckResult& c : RoundTripNotRun(packages, {})) {
    EXPECT_EQ(c.status, CheckStatus::kSkip) << c.id;
    EXPECT_EQ(c.summary, "not run: env.packages failed: the engine's framework does not import");
    report.checks.push_back(c);
  }
  EXPECT_EQ(report.Verdict(), "fail");  // exit 1
}

TEST(Preflight, OutsideAnImageATorchThatDoesNotImportIsStillNotJudged) {
  const EngineProbe engine = TorchDoesNotImport(kPythonInImage, kLibtorchNotLoaded);
  const Preflight p = DecideBeforeWork(DriverFirst(H200Node()), "", engine, false, {});
  EXPECT_FALSE(p.framework_import);
  EXPECT_EQ(p.environment_error, engine.error);  // "install torch in that interpreter", exit 3
  EXPECT_EQ(StoppedReport(p).Verdict(), "error");
}

TEST(Preflight, InAnImageAnotherInterpreterThanTheImagesIsNotTheImagesFault) {
  const EngineProbe engine = TorchDoesNotImport("/usr/bin/python3", kLibtorchNotLoaded);
  const Preflight p = DecideBeforeWork(DriverFirst(H200Node()), "", engine, true, {});
  EXPECT_FALSE(p.framework_import);
  EXPECT_EQ(p.environment_error, engine.error);
}

TEST(Preflight, WithOnlyLeavingOutEnvPackagesTheImportFailureIsNotJudged) {
  const EngineProbe engine = TorchDoesNotImport(kPythonInImage, kLibtorchNotLoaded);
  const Preflight p = DecideBeforeWork(DriverFirst(H200Node()), "", engine, true, {"train.step"});
  EXPECT_FALSE(p.framework_import);
  EXPECT_EQ(p.environment_error, engine.error);
}

TEST(Preflight, AnEngineThatCanRunAndAVisibleGpuGoOn) {
  EngineProbe engine;
  engine.engine = "ddp";
  engine.python = kPythonInImage;
  const Preflight p = DecideBeforeWork(DriverFirst(H200Node()), "", engine, true, {});
  EXPECT_EQ(p.stopped, "");
  EXPECT_FALSE(p.framework_import);
}

TEST(FrameworkImport, TheFileTheLoaderCouldNotOpenIsNamed) {
  EXPECT_EQ(ImportErrorFile(kLibtorchNotLoaded), "libtorch_cpu.so");
  EXPECT_EQ(ImportErrorFile("OSError: libcudnn.so.9: cannot open shared object file: No such "
                            "file or directory"),
            "libcudnn.so.9");
  EXPECT_EQ(ImportErrorFile("/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so: "
                            "undefined symbol: cudaGetDriverEntryPointByVersion, version "
                            "libcudart.so.13"),
            "/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so");
  EXPECT_EQ(ImportErrorFile("cannot import name 'fully_shard' from 'torch.distributed' "
                            "(/opt/venv/lib/python3.12/site-packages/torch/distributed/"
                            "__init__.py)"),
            "/opt/venv/lib/python3.12/site-packages/torch/distributed/__init__.py");
}

TEST(FrameworkImport, WithoutAFileTheModuleIsNamed) {
  EXPECT_EQ(ImportErrorFile("No module named 'torch'"), "");
  EXPECT_EQ(ImportErrorFile("the .so files are gone; a.sox is no library"), "");
  const CheckResult c = FrameworkImportFailure(kPythonInImage, "lightning|pytorch_lightning",
                                               "No module named 'lightning'");
  EXPECT_NE(c.summary.find("cannot import lightning,"), std::string::npos) << c.summary;
  EXPECT_EQ(c.remedy.find("the image is broken at module lightning:"), 0u) << c.remedy;
}

TEST(FrameworkImport, AHostileImportErrorIsBoundedAndTerminalSafe) {
  const std::string hostile = "\x1b]0;owned\x07/x/lib\x1b[2Jevil.so: " + std::string(100000, 'A');
  const CheckResult c = FrameworkImportFailure(kPythonInImage, "torch", hostile);
  EXPECT_EQ(c.summary.find('\x1b'), std::string::npos);
  EXPECT_EQ(c.remedy.find('\x1b'), std::string::npos);
  EXPECT_LT(c.summary.size(), 1500u);
  EXPECT_NE(c.remedy.find("/x/lib\\x1b[2Jevil.so"), std::string::npos) << c.remedy;
  // A word longer than any path is not taken for one.
  EXPECT_EQ(ImportErrorFile(std::string(5000, 'a') + ".so: cannot open"), "");
}

}  // namespace
}  // namespace trainlock::validate
