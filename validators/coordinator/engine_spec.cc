// The engine spec; see engine_spec.h.
#include "coordinator/engine_spec.h"

#include <algorithm>
#include <filesystem>

#include "base/diagnostic.h"
#include "project/artifact_paths.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

nlohmann::json ModelJson(const ModelConfig& m) {
  nlohmann::json rope = nullptr;
  if (!m.rope_scaling.type.empty()) {
    const RopeScaling& r = m.rope_scaling;
    rope = {{"type", r.type},
            {"factor", r.factor},
            {"low_freq_factor", r.low_freq_factor},
            {"high_freq_factor", r.high_freq_factor},
            {"original_max_position_embeddings", r.original_max_position_embeddings}};
  }
  return {{"architecture", m.architecture},  {"hidden_size", m.hidden_size},
          {"num_layers", m.num_layers},      {"num_heads", m.num_heads},
          {"num_kv_heads", m.num_kv_heads},  {"intermediate_size", m.intermediate_size},
          {"vocab_size", m.vocab_size},      {"tie_embeddings", m.tie_embeddings},
          {"rope_theta", m.rope_theta},      {"rope_scaling", rope},
          {"norm_eps", m.norm_eps},          {"dropout", m.dropout},
          {"files", nlohmann::json::array()}};
}

nlohmann::json TrainingJson(const TrainingConfig& t) {
  const OptimizerConfig& o = t.optimizer;
  const SchedulerConfig& s = t.scheduler;
  return {{"seq_len", t.seq_len},
          {"micro_batch", t.micro_batch},
          {"grad_accum", t.grad_accum},
          {"precision", t.precision},
          {"optimizer",
           {{"name", o.name},
            {"lr", o.lr},
            {"beta1", o.beta1},
            {"beta2", o.beta2},
            {"eps", o.eps},
            {"weight_decay", o.weight_decay}}},
          {"scheduler",
           {{"name", s.name},
            {"warmup_steps", s.warmup_steps},
            {"total_steps", s.total_steps},
            {"min_lr", s.min_lr}}},
          {"grad_clip", t.grad_clip},
          {"activation_checkpointing", t.activation_checkpointing},
          {"parallelism", t.parallelism},
          {"shuffle", t.shuffle},
          {"deterministic", t.deterministic}};
}

// The pinned files of `a` as the engine reads them: absolute paths with the lock's hashes.
// Empty when one is missing: the engine then trains on what the native worker would use
// instead (seeded initialisation, synthetic tokens), and the data checks report the gap.
nlohmann::json PinnedFilesJson(const fs::path& dir, const ArtifactSource& a,
                               std::string_view kind) {
  nlohmann::json files = nlohmann::json::array();
  for (const PinnedFile& f : a.files) {
    fs::path path;
    try {
      path = ResolvePinnedFile(dir, a, kind, f.path);
    } catch (const ArtifactPathError& e) {
      throw InputError(
          Diagnostic{e.path().string(), {}, e.why(), "keep pinned files inside the project"});
    }
    if (!fs::exists(path)) return nlohmann::json::array();
    files.push_back({{"path", fs::absolute(path).string()},
                     {"name", f.path},
                     {"sha256", f.sha256},
                     {"size", f.size}});
  }
  return files;
}

}  // namespace

nlohmann::json EngineSpec(const Project& project, int64_t steps) {
  const Spec& lock = *project.lock;
  const TrainingConfig& t = project.config.training;
  const int64_t eval_batches = std::max<int64_t>(1, lock.validate.eval_batches);
  nlohmann::json spec = {{"schema", kEngineSpecSchema},
                         {"engine", lock.validate.engine},
                         {"lock_sha256", project.lock_sha256},
                         {"config_sha256", project.config_sha256},
                         {"seed", lock.seed},
                         {"eval_batches", eval_batches},
                         {"model", ModelJson(project.config.model)},
                         {"training", TrainingJson(t)}};
  if (lock.model) {
    nlohmann::json files = PinnedFilesJson(project.dir, *lock.model, "model");
    // Weights only when the lock pins some: a pinned config.json alone is not a model.
    const bool weights = std::any_of(files.begin(), files.end(), [](const nlohmann::json& f) {
      return f["name"].get<std::string>().ends_with(".safetensors");
    });
    if (weights) spec["model"]["files"] = files;
  }
  if (lock.dataset && !lock.dataset->token_dtype.empty()) {
    nlohmann::json files = PinnedFilesJson(project.dir, *lock.dataset, "dataset");
    if (!files.empty()) {
      spec["data"] = {{"kind", "shards"},
                      {"files", files},
                      {"bytes_per_token", lock.dataset->token_dtype == "uint16" ? 2 : 4}};
    }
  }
  if (!spec.contains("data")) {
    // As many windows as the native worker's synthetic stream holds (worker.cc).
    const int64_t windows =
        std::max<int64_t>(64, steps * t.grad_accum * t.micro_batch) + eval_batches * t.micro_batch;
    spec["data"] = {
        {"kind", "synthetic"}, {"seed", lock.seed}, {"length", windows * t.seq_len + 1}};
  }
  return spec;
}

}  // namespace trainlock::validate
