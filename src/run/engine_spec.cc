// The engine spec's JSON, written and read back member by member; see engine_spec.h.
#include "run/engine_spec.h"

#include <algorithm>

#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "base/sha256.h"  // IsSha256Hex
#include "run/spec_members.h"

namespace trainlock {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
namespace R = shape_range;

json FilesJson(const std::vector<SpecFile>& files) {
  json out = json::array();
  for (const SpecFile& f : files)
    out.push_back({{"path", f.path}, {"name", f.name}, {"sha256", f.sha256}, {"size", f.size}});
  return out;
}

json ModelJson(const EngineSpec& spec) {
  const ModelConfig& m = spec.config.model;
  json rope = nullptr;
  if (!m.rope_scaling.type.empty()) {
    const RopeScaling& r = m.rope_scaling;
    rope = {{"type", r.type},
            {"factor", r.factor},
            {"low_freq_factor", r.low_freq_factor},
            {"high_freq_factor", r.high_freq_factor},
            {"original_max_position_embeddings", r.original_max_position_embeddings}};
  }
  return {{"architecture", m.architecture},
          {"hidden_size", m.hidden_size},
          {"num_layers", m.num_layers},
          {"num_heads", m.num_heads},
          {"num_kv_heads", m.num_kv_heads},
          {"intermediate_size", m.intermediate_size},
          {"vocab_size", m.vocab_size},
          {"tie_embeddings", m.tie_embeddings},
          {"rope_theta", m.rope_theta},
          {"rope_scaling", rope},
          {"norm_eps", m.norm_eps},
          {"dropout", m.dropout},
          {"files", FilesJson(spec.model_files)},
          {"dir", spec.model_dir}};
}

json TrainingJson(const TrainingConfig& t) {
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

json DataJson(const SpecData& d) {
  if (d.kind == "shards")
    return {
        {"kind", "shards"}, {"files", FilesJson(d.files)}, {"bytes_per_token", d.bytes_per_token}};
  return {{"kind", "synthetic"}, {"seed", d.seed}, {"length", d.length}};
}

std::vector<SpecFile> ReadFiles(const SpecMembers& m, const std::string& key) {
  std::vector<SpecFile> files;
  const json& list = m.Array(key);
  for (size_t i = 0; i < list.size(); ++i) {
    const SpecMembers f(list[i], m.Name(key) + "[" + std::to_string(i) + "]", m.display());
    SpecFile file{f.String("path"), f.String("name"), f.String("sha256"),
                  f.Integer("size", {0, INT64_MAX})};
    if (!fs::path(file.path).is_absolute()) f.Fail(f.Name("path"), "is not an absolute path");
    if (!IsSha256Hex(file.sha256)) f.Fail(f.Name("sha256"), "is not a lowercase hex SHA-256");
    files.push_back(std::move(file));
  }
  return files;
}

RopeScaling ReadRopeScaling(const SpecMembers& m) {
  RopeScaling r;
  r.type = m.OneOf("type", {"linear", "llama3"});
  r.factor = m.Number("factor", R::kRopeFactor);
  if (r.type == "llama3") {
    r.low_freq_factor = m.Number("low_freq_factor", R::kRopeFreqFactor);
    r.high_freq_factor = m.Number("high_freq_factor", R::kRopeFreqFactor);
    r.original_max_position_embeddings =
        m.Integer("original_max_position_embeddings", R::kRopeOriginalMax);
  }
  return r;
}

ModelConfig ReadModel(const SpecMembers& m) {
  ModelConfig c;
  c.architecture = m.OneOf("architecture", {"llama"});
  c.hidden_size = m.Integer("hidden_size", R::kHiddenSize);
  c.num_layers = m.Integer("num_layers", R::kHeads);
  c.num_heads = m.Integer("num_heads", R::kHeads);
  c.num_kv_heads = m.Integer("num_kv_heads", R::kHeads);
  c.intermediate_size = m.Integer("intermediate_size", R::kIntermediateSize);
  c.vocab_size = m.Integer("vocab_size", R::kVocabSize);
  c.tie_embeddings = m.Bool("tie_embeddings");
  c.rope_theta = m.Number("rope_theta", R::kRopeTheta);
  if (m.Has("rope_scaling")) c.rope_scaling = ReadRopeScaling(m.Object("rope_scaling"));
  c.norm_eps = m.Number("norm_eps", R::kNormEps);
  c.dropout = m.Number("dropout", R::kDropout);
  for (const ShapeProblem& p : ModelShapeProblems(c))
    m.Fail(m.Name(p.field), "breaks a rule: " + p.message);
  return c;
}

TrainingConfig ReadTraining(const SpecMembers& m) {
  TrainingConfig t;
  t.seq_len = m.Integer("seq_len", R::kBatch);
  t.micro_batch = m.Integer("micro_batch", R::kBatch);
  t.grad_accum = m.Integer("grad_accum", R::kGradAccum);
  t.precision = m.OneOf("precision", {"fp32", "bf16", "fp16"});
  const SpecMembers o = m.Object("optimizer");
  t.optimizer.name = o.OneOf("name", {"adamw"});
  t.optimizer.lr = o.Number("lr", R::kLr);
  if (t.optimizer.lr <= 0) o.Fail(o.Name("lr"), "is not above 0");
  t.optimizer.beta1 = o.Number("beta1", {0.0, 1.0});
  t.optimizer.beta2 = o.Number("beta2", {0.0, 1.0});
  if (t.optimizer.beta1 >= 1 || t.optimizer.beta2 >= 1)
    o.Fail(o.Name("beta1"), "or beta2 is not below 1");
  t.optimizer.eps = o.Number("eps", R::kEps);
  t.optimizer.weight_decay = o.Number("weight_decay", R::kWeightDecay);
  const SpecMembers s = m.Object("scheduler");
  t.scheduler.name = s.OneOf("name", {"cosine", "constant"});
  t.scheduler.warmup_steps = s.Integer("warmup_steps", R::kWarmupSteps);
  t.scheduler.total_steps = s.Integer("total_steps", R::kTotalSteps);
  t.scheduler.min_lr = s.Number("min_lr", R::kMinLr);
  t.grad_clip = m.Number("grad_clip", R::kGradClip);
  t.activation_checkpointing = m.Bool("activation_checkpointing");
  t.parallelism = m.OneOf("parallelism", {"ddp", "fsdp"});
  t.shuffle = m.Bool("shuffle");
  t.deterministic = m.Bool("deterministic");
  return t;
}

SpecData ReadData(const SpecMembers& m, const TrainingConfig& t) {
  SpecData d;
  d.kind = m.OneOf("kind", {"synthetic", "shards"});
  if (d.kind == "shards") {
    d.bytes_per_token = static_cast<int>(m.Integer("bytes_per_token", {2, 4}));
    if (d.bytes_per_token == 3) m.Fail(m.Name("bytes_per_token"), "is not 2 or 4");
    d.files = ReadFiles(m, "files");
    if (d.files.empty()) m.Fail(m.Name("files"), "lists no shards");
    return d;
  }
  d.seed = m.Unsigned("seed");
  d.length = m.Unsigned("length");
  if (d.length < 2) m.Fail(m.Name("length"), "is below 2 tokens");
  // A huge length would be allocated whole as the stream's window order.
  if ((d.length - 1) / static_cast<uint64_t>(t.seq_len) > kMaxDataWindows)
    m.Fail(m.Name("length"), std::to_string(d.length) + " is over " +
                                 std::to_string(kMaxDataWindows) + " windows of seq_len " +
                                 std::to_string(t.seq_len));
  return d;
}

}  // namespace

json EngineSpecJson(const EngineSpec& spec) {
  return {{"schema", kEngineSpecSchema},
          {"engine", spec.engine},
          {"lock_sha256", spec.lock_sha256},
          {"config_sha256", spec.config_sha256},
          {"seed", spec.seed},
          {"eval_batches", spec.eval_batches},
          {"model", ModelJson(spec)},
          {"training", TrainingJson(spec.config.training)},
          {"data", DataJson(spec.data)}};
}

EngineSpec ReadEngineSpec(const json& doc, const std::string& display) {
  const SpecMembers root(doc, "spec", display);
  if (root.String("schema") != kEngineSpecSchema)
    root.Fail(root.Name("schema"), Quoted(root.String("schema")) + " is not " + kEngineSpecSchema);
  EngineSpec spec;
  spec.engine = root.String("engine");
  spec.lock_sha256 = root.String("lock_sha256");
  spec.config_sha256 = root.String("config_sha256");
  spec.seed = root.Unsigned("seed");
  spec.eval_batches = root.Integer("eval_batches", {1, kMaxEvalBatches});
  const SpecMembers model = root.Object("model");
  spec.config.model = ReadModel(model);
  spec.model_files = ReadFiles(model, "files");
  if (!spec.model_files.empty()) {
    // The directory a loader reads the files' names under (a Hugging Face model directory).
    spec.model_dir = model.String("dir");
    if (!fs::path(spec.model_dir).is_absolute())
      model.Fail(model.Name("dir"), "is not an absolute path");
  }
  spec.config.training = ReadTraining(root.Object("training"));
  spec.data = ReadData(root.Object("data"), spec.config.training);
  return spec;
}

std::string ReadSpecFile(const fs::path& file, const std::string& what) {
  std::string text = ReadInputFile(file, file.string());
  if (text.size() > kMaxEngineSpecBytes)
    throw InputError(Diagnostic{
        file.string(),
        {},
        "the " + what + " is larger than " + std::to_string(kMaxEngineSpecBytes >> 20) + " MiB",
        "the spec is written by trainlock-validate's coordinator"});
  return text;
}

EngineSpec ParseEngineSpec(std::string_view text, const std::string& display) {
  return ReadEngineSpec(ParseJsonText(text, display), display);
}

}  // namespace trainlock
