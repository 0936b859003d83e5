// The engine's limits, checked before any work; see engine_requests.h.
#include "coordinator/engine_requests.h"

#include <algorithm>

#include "base/diagnostic.h"
#include "coordinator/engine_support.h"
#include "project/round_trip_engines.h"

namespace trainlock::validate {
namespace {

// "fsdp2, native" : the engines for which `can` holds, for messages.
template <typename Can>
std::string EnginesThat(Can can) {
  std::string names;
  for (const RoundTripEngine& e : RoundTripEngines())
    if (can(e)) names += (names.empty() ? "" : ", ") + std::string(e.name);
  return names.empty() ? "none" : names;
}

void RefuseOptions(const RoundTripEngine& engine, const ValidateOptions& o, const Project& project,
                   Diagnostics& diags) {
  const Lockfile& lock = *project.lock;
  const std::string name(engine.name);
  if (o.engine_nproc > 1 && !engine.python) {
    diags.Error("--engine-nproc", {},
                "the native engine trains one process per rank (use --nproc for ranks)",
                "engines with several processes per run: " +
                    EnginesThat([](const RoundTripEngine& e) { return e.python; }));
  }
  if (o.reshard_to > 0 && !engine.reshard) {
    diags.Error(
        "--reshard-to", {}, "engine " + name + " cannot restore at another world size",
        "engines that reshard: " + EnginesThat([](const RoundTripEngine& e) { return e.reshard; }));
  }
  if (o.reshard_to > 0 && o.reshard_to == o.engine_nproc) {
    diags.Error("--reshard-to", {},
                "--reshard-to " + std::to_string(o.reshard_to) +
                    " is the world size the checkpoint is saved at",
                "give another world size than --engine-nproc");
  }
  // Process E keeps the global batch: world x grad_accum micro-batches per step must split
  // evenly over the new world size, or E could only fail after A to D have trained.
  const int64_t global_micro =
      int64_t{std::max(1, o.engine_nproc)} * project.config.training.grad_accum;
  if (o.reshard_to > 0 && engine.reshard && global_micro % o.reshard_to != 0) {
    diags.Error("--reshard-to", {},
                "--reshard-to " + std::to_string(o.reshard_to) +
                    " cannot keep the global batch of " + std::to_string(global_micro) +
                    " micro-batches (world size " + std::to_string(std::max(1, o.engine_nproc)) +
                    " x training.grad_accum " + std::to_string(project.config.training.grad_accum) +
                    ")",
                "give a world size that divides " + std::to_string(global_micro));
  }
  if (o.kill_during_save && !engine.async_save) {
    diags.Error(
        "--kill-during-save", {}, "engine " + name + " does not support --kill-during-save",
        "engines that do: " + EnginesThat([](const RoundTripEngine& e) { return e.async_save; }));
  }
  if (o.negative_control == NegativeControl::kTornSnapshot &&
      (!o.kill_during_save || engine.name != "native")) {
    diags.Error("--negative-control", {},
                "torn-snapshot plants its fault in the native engine's save and is judged by the "
                "kill during a save's torn-snapshot check",
                "give it with --kill-during-save and validate.engine = \"native\"");
  }
  if (o.negative_control == NegativeControl::kFlipBit && engine.name != "native") {
    diags.Error("--negative-control", {}, "bitflip plants its fault in the native engine's step",
                "give it with validate.engine = \"native\"");
  }
  if (o.kill_during_save && lock.validate.checkpoint_at + 2 > lock.validate.steps) {
    diags.Error("--kill-during-save", {},
                "needs validate.steps >= validate.checkpoint-at + 2 (a second save, then a step)",
                "raise validate.steps in trainlock.toml and re-lock");
  }
}

// The parallelism a Python engine trains with must be the config's: fsdp2 shards, the others
// keep a replica per process.
void RefuseFields(const RoundTripEngine& engine, const Project& project, bool cpu,
                  Diagnostics& diags) {
  const TrainingConfig& t = project.config.training;
  const std::string name(engine.name);
  const std::string wants = engine.name == "fsdp2" ? "fsdp" : "ddp";
  if (t.parallelism != wants) {
    diags.Error(project.config_path, {},
                "training.parallelism: " + t.parallelism + " is not what engine " + name +
                    " trains (" + wants + ")",
                t.parallelism == "fsdp"
                    ? "engines that shard: fsdp2 ([validate] engine = \"fsdp2\")"
                    : "set parallelism: " + wants + " or pick another engine");
  }
  if (engine.name == "fsdp2" && t.precision == "fp16") {
    // fp16 needs a sharded gradient scaler, which the engine does not build (fsdp2.py).
    diags.Error(
        project.config_path, {},
        "training.precision: fp16 is not supported by engine fsdp2 (it trains fp32 or bf16)",
        "set precision: bf16, or pick another engine");
  }
  if (cpu && t.precision != "fp32") {
    diags.Error(project.config_path, {},
                "training.precision: " + t.precision + " is not supported on the CPU by engine " +
                    name + " (supported there: fp32)",
                "validate on the GPU target, or set precision: fp32");
  }
}

// A weights file of a format no engine loads (they load HF safetensors).
bool IsUnloadableWeights(const std::string& name) {
  if (name == "training_args.bin") return false;  // the HF Trainer's arguments, not weights
  for (const char* ext : {".bin", ".pt", ".pth", ".ckpt", ".gguf", ".h5", ".msgpack", ".onnx"})
    if (name.ends_with(ext)) return true;
  return false;
}

// A lock whose model pins weights, none of them safetensors, pins a model no engine can load:
// training a seeded model in its place would pass on what the lock does not pin.
void RefuseUnloadableModel(const Project& project, Diagnostics& diags) {
  const std::optional<ArtifactSource>& model = project.lock->model;
  if (!model) return;
  std::string unloadable;
  for (const PinnedFile& f : model->files) {
    if (f.path.ends_with(".safetensors")) return;
    if (IsUnloadableWeights(f.path)) unloadable += (unloadable.empty() ? "" : ", ") + f.path;
  }
  if (unloadable.empty()) return;
  diags.Error(project.lock_path, {},
              "model.files pins weights no engine loads (" + unloadable +
                  "); the engines load *.safetensors",
              "pin the model's *.safetensors files in trainlock.toml's [model] files and re-lock");
}

}  // namespace

void RefuseUnsupportedEngineRun(const Project& project, const ValidateOptions& o, bool cpu) {
  const Lockfile& lock = *project.lock;
  const RoundTripEngine* engine = FindRoundTripEngine(lock.validate.engine);
  if (!engine) {
    throw InputError(
        Diagnostic{project.lock_path, {}, "unknown engine \"" + lock.validate.engine + "\"", ""});
  }
  if (!engine->python) RefuseUnhonouredFields(project.config, project.config_path, cpu);
  Diagnostics diags;
  RefuseUnloadableModel(project, diags);
  RefuseOptions(*engine, o, project, diags);
  if (engine->python) RefuseFields(*engine, project, cpu, diags);
  if (!diags.empty()) throw InputError(std::move(diags));
  // Whether the interpreter can run the engine is engine_probe.h's, with a report (exit 3).
}

}  // namespace trainlock::validate
