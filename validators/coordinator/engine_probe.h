// Whether the lock's Python engine can run here, decided before any training work: the
// interpreter is asked (`python -c`) to import torch and the engine's framework modules and to
// print their versions. An engine that cannot run here (no interpreter, a framework missing,
// torch older than the engine needs, a torch without CUDA for a run on the GPU) is an
// environment error (report verdict "error", exit 3), never a failing check; except a framework
// that does not import in a locked image's own interpreter, a broken image (env.packages fails,
// coordinator/preflight.h), and a GPU the node's driver checks found unusable (preflight.h).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace trainlock::validate {

// Why an engine cannot run here: the validation treats a framework that does not import in a
// locked image's own interpreter as a broken image (env.packages), the rest as a setup that
// cannot run (exit 3).
enum class EngineProbeFailure {
  kNone,
  kNoInterpreter,  // no interpreter, one that cannot be started, or one that does not answer
  kImport,         // torch or a framework module does not import (`missing`, `import_error`)
  kTorchTooOld,    // torch older than the engine needs
  kNoCuda,         // a run on the GPU, and that torch has no usable CUDA device
};

struct EngineProbe {
  std::string engine;
  std::string python;  // the interpreter the engine runs under; "" when there is none
  std::string torch;   // torch.__version__ in it; "" when unknown
  nlohmann::json versions = nlohmann::json::object();  // {module: version} it imported
  // One line naming the interpreter, the module and how to get it; "" when the engine can run.
  std::string error;
  EngineProbeFailure failure = EngineProbeFailure::kNone;
  // kImport: the module that did not import ("lightning|pytorch_lightning": neither did) and
  // the interpreter's words (an ImportError's text, as the interpreter said it: untrusted).
  std::string missing;
  std::string import_error;
};

// Probes Python engine `engine` under the interpreter `requested` (--python; "" the image's or
// python3 on PATH, engine_command.h's EnginePython). `gpu`: the run trains on a GPU.
// `sys_path`: inside an image, the recorded path the engine will run with.
EngineProbe ProbeEngine(const std::string& engine, const std::string& requested, bool gpu,
                        int timeout_s, const std::vector<std::string>& sys_path = {});

// The judgement on what an interpreter printed (`output`, the probe's marker line among
// others) and how it ended; ProbeEngine's second half, for tests.
EngineProbe JudgeEngineProbe(const std::string& engine, const std::string& python, bool gpu,
                             int exit_code, const std::string& output);

}  // namespace trainlock::validate
