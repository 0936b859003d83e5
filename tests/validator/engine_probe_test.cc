// Whether the lock's Python engine can run here (validators/coordinator/engine_probe.h), asked
// of the interpreter before any training: each way an engine cannot run is planted with a
// stand-in interpreter and gives one line naming the interpreter, the module and the remedy.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "coordinator/engine_probe.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

// An executable script standing in for an interpreter.
std::string StandIn(const testing::TempDir& dir, const std::string& body) {
  const fs::path script = dir.path() / "python";
  testing::WriteFile(script, "#!/bin/sh\n" + body + "\n");
  ::chmod(script.c_str(), 0755);
  return script.string();
}

// What the probe prints, from an interpreter that has what `json` says.
std::string Answering(const testing::TempDir& dir, const std::string& json) {
  return StandIn(dir, "cat <<'EOF'\ntrainlock-engine-probe " + json + "\nEOF");
}

TEST(EngineProbe, DebiansPythonCanRunTheDdpEngineAndSaysItsTorch) {
  const EngineProbe p = ProbeEngine("ddp", "/usr/bin/python3", /*gpu=*/false, 120);
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.python, "/usr/bin/python3");
  EXPECT_FALSE(p.torch.empty());
  EXPECT_EQ(p.versions.value("torch", ""), p.torch);
}

// The real probe script, under a real interpreter without torch: a venv of Debian's Python
// that does not include the system's site-packages.
TEST(EngineProbe, AnInterpreterWithoutTorchCannotRunTheEngine) {
  testing::TempDir dir;
  const fs::path venv = dir.path() / "venv";
  ASSERT_EQ(testing::RunCommand({"/usr/bin/python3", "-m", "venv", "--without-pip", venv.string()})
                .exit_code,
            0);
  const std::string python = (venv / "bin" / "python3").string();
  const EngineProbe p = ProbeEngine("ddp", python, false, 120);
  EXPECT_EQ(p.error, "engine ddp: " + python +
                         " cannot import torch (No module named 'torch'): install torch in that "
                         "interpreter or pass --python PATH");
}

TEST(EngineProbe, AMissingFrameworkNamesTheInterpreterTheModuleAndTheRemedy) {
  testing::TempDir dir;
  const std::string python =
      Answering(dir, R"({"versions": {"torch": "2.11.0"}, "missing": "transformers", )"
                     R"("reason": "No module named 'transformers'", "cuda": true})");
  const EngineProbe p = ProbeEngine("hf-trainer", python, true, 120);
  EXPECT_EQ(p.error, "engine hf-trainer: " + python +
                         " cannot import transformers (No module named 'transformers'): install "
                         "transformers in that interpreter or pass --python PATH");
  EXPECT_EQ(p.torch, "2.11.0");
}

// The interpreter's own words are kept apart from the line: in a locked image they are a broken
// image's evidence (coordinator/preflight.h), naming the file the loader could not open.
TEST(EngineProbe, ATorchWhoseLibraryCannotBeLoadedIsAnImportFailureWithTheInterpretersWords) {
  testing::TempDir dir;
  const std::string why =
      "libtorch_cpu.so: cannot open shared object file: No such file or directory";
  const std::string python =
      Answering(dir, R"({"versions": {}, "missing": "torch", "reason": ")" + why + R"("})");
  const EngineProbe p = ProbeEngine("ddp", python, false, 120);
  EXPECT_EQ(p.failure, EngineProbeFailure::kImport);
  EXPECT_EQ(p.missing, "torch");
  EXPECT_EQ(p.import_error, why);
  EXPECT_EQ(p.error, "engine ddp: " + python + " cannot import torch (" + why +
                         "): install torch in that interpreter or pass --python PATH");
}

TEST(EngineProbe, ATorchOlderThanTheEngineNeedsCannotRunIt) {
  testing::TempDir dir;
  const std::string python = Answering(
      dir, R"({"versions": {"torch": "2.1.0+cu121", "transformers": "4.40.0"}, "cuda": true})");
  const EngineProbe p = ProbeEngine("fsdp2", python, true, 120);
  EXPECT_EQ(p.error, "engine fsdp2: " + python +
                         " has torch 2.1.0+cu121; engine fsdp2 needs torch >= 2.4: install torch "
                         ">= 2.4 in that interpreter or pass --python PATH");
  EXPECT_EQ(p.failure, EngineProbeFailure::kTorchTooOld);
}

TEST(EngineProbe, ACpuTorchCannotRunAnEngineOnTheGpu) {
  testing::TempDir dir;
  const std::string python =
      Answering(dir, R"({"versions": {"torch": "2.11.0+cpu"}, "cuda": false})");
  const EngineProbe on_gpu = ProbeEngine("ddp", python, /*gpu=*/true, 120);
  EXPECT_NE(on_gpu.error.find("has torch 2.11.0+cpu without a usable CUDA device"),
            std::string::npos);
  EXPECT_EQ(on_gpu.failure, EngineProbeFailure::kNoCuda);
  EXPECT_EQ(ProbeEngine("ddp", python, /*gpu=*/false, 120).error, "");
}

TEST(EngineProbe, ANonexistentInterpreterCannotRunTheEngine) {
  const EngineProbe p = ProbeEngine("ddp", "/nonexistent/python3", false, 120);
  EXPECT_EQ(p.python, "");
  EXPECT_NE(p.error.find("engine ddp: no Python to run the engine: tried /nonexistent/python3"),
            std::string::npos)
      << p.error;
  EXPECT_EQ(p.failure, EngineProbeFailure::kNoInterpreter);
}

TEST(EngineProbe, AProgramThatIsNoPythonDoesNotAnswer) {
  testing::TempDir dir;
  const std::string python = StandIn(dir, "echo 'not python' >&2; exit 7");
  EXPECT_EQ(ProbeEngine("ddp", python, false, 120).error,
            "engine ddp: " + python +
                " did not answer the probe (exit 7: not python): pass --python PATH naming a "
                "Python 3 with torch");
}

}  // namespace
}  // namespace trainlock::validate
