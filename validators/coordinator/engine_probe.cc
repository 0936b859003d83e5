// The Python engine's interpreter, probed before any training; see engine_probe.h.
#include "coordinator/engine_probe.h"

#include <optional>
#include <vector>

#include "base/failure.h"
#include "base/scratch_dir.h"
#include "base/subprocess.h"
#include "base/version.h"
#include "coordinator/engine_command.h"
#include "probes/node_checks.h"

namespace trainlock::validate {
namespace {

constexpr std::string_view kProbeMarker = "trainlock-engine-probe ";

// What each Python engine imports before any work (its prepare(); "a|b": a, else b) and the
// oldest torch it trains with (0.0: any).
struct EngineNeeds {
  std::string_view engine;
  std::vector<std::string> modules;
  int torch_major = 0, torch_minor = 0;
};

const std::vector<EngineNeeds>& AllEngineNeeds() {
  static const std::vector<EngineNeeds> needs = {
      {"ddp", {}},
      {"hf-trainer", {"transformers", "accelerate"}},
      {"lightning", {"lightning|pytorch_lightning", "transformers"}},
      {"deepspeed", {"deepspeed"}},  // the engine asks for transformers with the real one
      {"fsdp2", {"transformers"}, 2, 4},
  };
  return needs;
}

EngineNeeds NeedsOf(const std::string& engine) {
  for (const EngineNeeds& n : AllEngineNeeds())
    if (n.engine == engine) return n;
  return {engine, {}};
}

// Imports torch, then each argument ("a|b" for a, else b), and prints one marker line of JSON:
// the versions, the first module that would not import and why, and whether CUDA is usable.
// It runs as the engine does (engine_command.h): `-I -S`, its own pycache prefix, a clean
// environment, and the path of trainlock_engine/isolated.py (inside an image the recorded one,
// TRAINLOCK_ENGINE_SYS_PATH; else the standard library and the interpreter's own
// site-packages, its venv's when it is one, no .pth file), so it sees exactly the modules the
// engine will.
constexpr const char* kProbeScript = R"PY(
import importlib, json, os, site, sys
recorded = os.environ.get("TRAINLOCK_ENGINE_SYS_PATH")
def _venv():
    exe_dir = os.path.dirname(sys.executable)
    for d in (exe_dir, os.path.dirname(exe_dir)):
        cfg = os.path.join(d, "pyvenv.cfg")
        if os.path.isfile(cfg):
            with open(cfg) as f:
                pairs = [line.partition("=") for line in f]
            return d, any(k.strip() == "include-system-site-packages" and v.strip().lower() == "true"
                          for k, _, v in pairs)
    return None, True
venv, include_base = _venv()
version = "python%d.%d" % sys.version_info[:2]
found = [os.path.join(venv, lib, version, "site-packages") for lib in ("lib", "lib64")] if venv else []
if include_base:
    found += site.getsitepackages([sys.base_prefix])
sys.path[:] = [p for p in recorded.split(os.pathsep) if p] if recorded is not None else [p for p in sys.path if p and os.path.isabs(p)] + [d for d in dict.fromkeys(found) if os.path.isdir(d)]
out = {"versions": {}}
def load(names):
    first = None
    for name in names.split("|"):
        try:
            m = importlib.import_module(name)
            out["versions"][name] = str(getattr(m, "__version__", ""))
            return None
        except BaseException as e:
            first = first or e
    return first
for names in ["torch"] + sys.argv[1:]:
    e = load(names)
    if e is not None:
        out["missing"] = names
        out["reason"] = str(e) if isinstance(e, ImportError) else "%s: %s" % (type(e).__name__, e)
        break
if "torch" in out["versions"]:
    import torch
    out["cuda"] = bool(torch.cuda.is_available())
    v = torch.backends.cudnn.version() if out["cuda"] and torch.backends.cudnn.is_available() else None
    if v:  # cuDNN 9 counts major*10000 + minor*100 + patch, cuDNN 8 major*1000 + minor*100 + patch
        out["versions"]["cudnn"] = "%d.%d.%d" % ((v // 10000, v % 10000 // 100, v % 100) if v >= 90000 else (v // 1000, v % 1000 // 100, v % 100))
print("trainlock-engine-probe " + json.dumps(out))
)PY";

// "lightning (nor pytorch_lightning)" for "lightning|pytorch_lightning".
std::string ModuleWords(const std::string& names) {
  const size_t bar = names.find('|');
  if (bar == std::string::npos) return names;
  return names.substr(0, bar) + " (nor " + names.substr(bar + 1) + ")";
}

constexpr const char* kNoPythonRemedy = ": pass --python PATH naming a Python 3 with torch";

std::string Remedy(const std::string& what) {
  return ": install " + what + " in that interpreter or pass --python PATH";
}

// The probe's JSON from its marker line; a discarded value when there is none.
nlohmann::json ProbeAnswer(const std::string& output) {
  size_t at = 0;
  while ((at = output.find(kProbeMarker, at)) != std::string::npos) {
    if (at == 0 || output[at - 1] == '\n') {
      const size_t end = output.find('\n', at);
      const std::string line = output.substr(
          at + kProbeMarker.size(),
          end == std::string::npos ? std::string::npos : end - at - kProbeMarker.size());
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object()) return j;
    }
    at += kProbeMarker.size();
  }
  return nlohmann::json(nlohmann::json::value_t::discarded);
}

// The member `key` of the interpreter's answer when it is a string, else "" (it is untrusted).
std::string Said(const nlohmann::json& answer, const char* key) {
  auto it = answer.find(key);
  return it != answer.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string LastLine(const std::string& output) {
  std::string text = output;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

}  // namespace

EngineProbe JudgeEngineProbe(const std::string& engine, const std::string& python, bool gpu,
                             int exit_code, const std::string& output) {
  EngineProbe p;
  p.engine = engine;
  p.python = python;
  const std::string who = "engine " + engine + ": " + python;
  const nlohmann::json answer = ProbeAnswer(output);
  if (!answer.is_object()) {
    p.failure = EngineProbeFailure::kNoInterpreter;
    p.error = who + " did not answer the probe (exit " + std::to_string(exit_code) +
              (output.empty() ? "" : ": " + LastLine(output)) + ")" + kNoPythonRemedy;
    return p;
  }
  if (answer.contains("versions") && answer["versions"].is_object()) {
    for (const auto& [module, version] : answer["versions"].items())
      if (version.is_string()) p.versions[module] = version;
  }
  p.torch = Said(p.versions, "torch");
  if (const std::string missing = Said(answer, "missing"); !missing.empty()) {
    const std::string reason = Said(answer, "reason");
    p.failure = EngineProbeFailure::kImport;
    p.missing = missing;
    p.import_error = reason;
    p.error = who + " cannot import " + ModuleWords(missing) + " (" +
              (reason.empty() ? "no reason given" : reason) + ")" +
              Remedy(missing.substr(0, missing.find('|')));
    return p;
  }
  const EngineNeeds needs = NeedsOf(engine);
  const std::optional<Version> have = ParseVersion(TorchRelease(p.torch));
  if (needs.torch_major > 0 &&
      (!have || have->major() < needs.torch_major ||
       (have->major() == needs.torch_major && have->minor() < needs.torch_minor))) {
    const std::string want =
        "torch >= " + std::to_string(needs.torch_major) + "." + std::to_string(needs.torch_minor);
    p.failure = EngineProbeFailure::kTorchTooOld;
    p.error =
        who + " has torch " + p.torch + "; engine " + engine + " needs " + want + Remedy(want);
    return p;
  }
  const auto cuda = answer.find("cuda");
  if (gpu && !(cuda != answer.end() && cuda->is_boolean() && cuda->get<bool>())) {
    p.failure = EngineProbeFailure::kNoCuda;
    p.error = who + " has torch " + p.torch +
              " without a usable CUDA device and this run trains on the GPU" +
              Remedy("a CUDA build of torch");
  }
  return p;
}

EngineProbe ProbeEngine(const std::string& engine, const std::string& requested, bool gpu,
                        int timeout_s, const std::vector<std::string>& sys_path) {
  std::string python;
  try {
    python = EnginePython(requested).string();
  } catch (const Failure& none) {
    EngineProbe p;
    p.engine = engine;
    p.failure = EngineProbeFailure::kNoInterpreter;
    p.error = "engine " + engine + ": " + none.what();
    return p;
  }
  const ScratchDir pycache("trainlock-probe-pycache");  // bytecode of its own, as the engine's
  SpawnOptions spawn;
  spawn.argv = {python};
  for (const std::string& option : IsolatedPythonOptions(pycache.path() / "pycache"))
    spawn.argv.push_back(option);
  spawn.argv.insert(spawn.argv.end(), {"-c", kProbeScript});
  for (const std::string& m : NeedsOf(engine).modules) spawn.argv.push_back(m);
  spawn.clean_env = true;  // what the engine inherits, nothing more (engine_command.h)
  spawn.env = EngineEnvironment();
  if (!sys_path.empty()) spawn.env[kEngineSysPathVariable] = EngineSysPathValue(sys_path);
  spawn.cwd = "/";
  spawn.null_stdin = true;
  spawn.own_group = true;
  const ProcessRun run = RunProcess(spawn, {.timeout_s = static_cast<double>(timeout_s)});
  if (!run.started) {
    EngineProbe p;
    p.engine = engine;
    p.python = python;
    p.failure = EngineProbeFailure::kNoInterpreter;
    p.error = "engine " + engine + ": " + python + " cannot be started (" + run.start_error + ")" +
              kNoPythonRemedy;
    return p;
  }
  if (run.timed_out) {
    EngineProbe p;
    p.engine = engine;
    p.python = python;
    p.failure = EngineProbeFailure::kNoInterpreter;
    p.error = "engine " + engine + ": " + python + " did not answer the probe within " +
              std::to_string(timeout_s) + " s" + kNoPythonRemedy;
    return p;
  }
  return JudgeEngineProbe(engine, python, gpu, run.exit_code, run.output);
}

}  // namespace trainlock::validate
