// The engine's limits, checked before any work; see engine_requests.h.
#include "coordinator/engine_requests.h"

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

void RefuseOptions(const RoundTripEngine& engine, const ValidateOptions& o, const Spec& lock,
                   Diagnostics& diags) {
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
  if (o.kill_during_save && !engine.async_save) {
    diags.Error(
        "--kill-during-save", {}, "engine " + name + " does not support --kill-during-save",
        "engines that do: " + EnginesThat([](const RoundTripEngine& e) { return e.async_save; }));
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
  if (cpu && t.precision != "fp32") {
    diags.Error(project.config_path, {},
                "training.precision: " + t.precision + " is not supported on the CPU by engine " +
                    name + " (supported there: fp32)",
                "validate on the GPU target, or set precision: fp32");
  }
}

}  // namespace

void RefuseUnsupportedEngineRun(const Project& project, const ValidateOptions& o, bool cpu) {
  const Spec& lock = *project.lock;
  const RoundTripEngine* engine = FindRoundTripEngine(lock.validate.engine);
  if (!engine) {
    throw InputError(
        Diagnostic{project.lock_path, {}, "unknown engine \"" + lock.validate.engine + "\"", ""});
  }
  if (!engine->python) RefuseUnhonouredFields(project.config, project.config_path, cpu);
  Diagnostics diags;
  RefuseOptions(*engine, o, lock, diags);
  if (engine->python) RefuseFields(*engine, project, cpu, diags);
  if (!diags.empty()) throw InputError(std::move(diags));
  // Whether the interpreter can run the engine is engine_probe.h's, with a report (exit 3).
}

}  // namespace trainlock::validate
