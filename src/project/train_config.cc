// Training-config schema over yaml-cpp and YamlFields; see train_config.h.
#include "project/train_config.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <optional>
#include <sstream>

#include "base/diagnostic.h"
#include "base/yaml_fields.h"

namespace trainlock {

namespace {

namespace R = shape_range;

void ReadRopeScaling(YamlFields& f, RopeScaling& r) {
  // Only what the validator's Llama computes (rope_frequencies.h); dynamic, yarn and longrope
  // change the model in ways it does not implement, so they are refused, never ignored.
  static constexpr std::string_view kTypes[] = {"linear", "llama3"};
  r.type = f.Choice("type", Need::kRequired, kTypes).value_or("");
  r.factor = f.Number("factor", Need::kRequired, R::kRopeFactor.min, R::kRopeFactor.max)
                 .value_or(r.factor);
  const Need llama3 = r.type == "llama3" ? Need::kRequired : Need::kOptional;
  if (r.type == "llama3") {
    r.low_freq_factor =
        f.Number("low_freq_factor", llama3, R::kRopeFreqFactor.min, R::kRopeFreqFactor.max)
            .value_or(r.low_freq_factor);
    r.high_freq_factor =
        f.Number("high_freq_factor", llama3, R::kRopeFreqFactor.min, R::kRopeFreqFactor.max)
            .value_or(r.high_freq_factor);
    r.original_max_position_embeddings = f.Integer("original_max_position_embeddings", llama3,
                                                   R::kRopeOriginalMax.min, R::kRopeOriginalMax.max)
                                             .value_or(r.original_max_position_embeddings);
  }
  f.Finish();
}

void ReadModel(YamlFields& f, ModelConfig& m, const std::string& path, Diagnostics& diags) {
  static constexpr std::string_view kArchitectures[] = {"llama"};
  m.architecture = f.Choice("architecture", Need::kRequired, kArchitectures).value_or("");
  m.hidden_size =
      f.Integer("hidden_size", Need::kRequired, R::kHiddenSize.min, R::kHiddenSize.max).value_or(0);
  m.num_layers = f.Integer("num_layers", Need::kRequired, R::kHeads.min, R::kHeads.max).value_or(0);
  m.num_heads = f.Integer("num_heads", Need::kRequired, R::kHeads.min, R::kHeads.max).value_or(0);
  // Without num_kv_heads every head has its own kv head (no grouped-query attention).
  m.num_kv_heads = f.Integer("num_kv_heads", Need::kOptional, R::kHeads.min, R::kHeads.max)
                       .value_or(m.num_heads);
  m.intermediate_size = f.Integer("intermediate_size", Need::kRequired, R::kIntermediateSize.min,
                                  R::kIntermediateSize.max)
                            .value_or(0);
  m.vocab_size =
      f.Integer("vocab_size", Need::kRequired, R::kVocabSize.min, R::kVocabSize.max).value_or(0);
  m.tie_embeddings = f.Bool("tie_embeddings", Need::kOptional).value_or(m.tie_embeddings);
  m.rope_theta = f.Number("rope_theta", Need::kOptional, R::kRopeTheta.min, R::kRopeTheta.max)
                     .value_or(m.rope_theta);
  if (auto r = f.Map("rope_scaling", Need::kOptional)) {
    YamlFields rf(*r, "model.rope_scaling", path, diags);
    ReadRopeScaling(rf, m.rope_scaling);
  }
  m.norm_eps =
      f.Number("norm_eps", Need::kOptional, R::kNormEps.min, R::kNormEps.max).value_or(m.norm_eps);
  m.dropout =
      f.Number("dropout", Need::kOptional, R::kDropout.min, R::kDropout.max).value_or(m.dropout);
  f.Finish();
}

// Shape rules that involve several fields (run_config.h), each reported at the field it names.
void CheckModelShape(const ModelConfig& m, YamlFields& f) {
  for (const ShapeProblem& p : ModelShapeProblems(m)) f.Error(f.Pos(p.field), p.message, p.hint);
}

void ReadOptimizer(YamlFields& f, OptimizerConfig& o) {
  static constexpr std::string_view kOptimizers[] = {"adamw"};
  o.name = f.Choice("name", Need::kRequired, kOptimizers).value_or(o.name);
  if (auto lr = f.Number("lr", Need::kRequired, -1e9, R::kLr.max)) {
    // A negative or zero learning rate is a classic typo; say what is wrong plainly.
    if (*lr <= 0) {
      f.Error(f.Pos("lr"), "'" + f.Qualified("lr") + "' must be positive",
              "a learning rate of 0 or below never trains");
    } else {
      o.lr = *lr;
    }
  }
  if (auto betas = f.Get("betas", Need::kOptional)) {
    if (!betas->IsSequence() || betas->size() != 2) {
      f.Error(PosOf(betas->Mark()), "'" + f.Qualified("betas") + "' must be a list of two numbers");
    } else {
      for (size_t i = 0; i < 2; ++i) {
        double b = -1;
        const YAML::Node& n = (*betas)[i];
        if (n.IsScalar()) {
          auto [ptr, ec] =
              std::from_chars(n.Scalar().data(), n.Scalar().data() + n.Scalar().size(), b);
          if (ec != std::errc() || ptr != n.Scalar().data() + n.Scalar().size()) b = -1;
        }
        if (!(b >= 0 && b < 1)) {
          f.Error(PosOf(n.Mark()),
                  "'" + f.Qualified("betas") + "' entries must be numbers in [0, 1)");
        } else {
          (i == 0 ? o.beta1 : o.beta2) = b;
        }
      }
    }
  }
  o.eps = f.Number("eps", Need::kOptional, R::kEps.min, R::kEps.max).value_or(o.eps);
  o.weight_decay =
      f.Number("weight_decay", Need::kOptional, R::kWeightDecay.min, R::kWeightDecay.max)
          .value_or(o.weight_decay);
  f.Finish();
}

void ReadScheduler(YamlFields& f, SchedulerConfig& s) {
  static constexpr std::string_view kSchedulers[] = {"cosine", "constant"};
  s.name = f.Choice("name", Need::kRequired, kSchedulers).value_or(s.name);
  s.warmup_steps =
      f.Integer("warmup_steps", Need::kOptional, R::kWarmupSteps.min, R::kWarmupSteps.max)
          .value_or(s.warmup_steps);
  s.total_steps = f.Integer("total_steps", Need::kOptional, R::kTotalSteps.min, R::kTotalSteps.max)
                      .value_or(s.total_steps);
  s.min_lr = f.Number("min_lr", Need::kOptional, R::kMinLr.min, R::kMinLr.max).value_or(s.min_lr);
  f.Finish();
}

void ReadTraining(YamlFields& f, TrainingConfig& t, const std::string& path, Diagnostics& diags) {
  t.seq_len = f.Integer("seq_len", Need::kRequired, R::kBatch.min, R::kBatch.max).value_or(0);
  t.micro_batch =
      f.Integer("micro_batch", Need::kRequired, R::kBatch.min, R::kBatch.max).value_or(0);
  t.grad_accum = f.Integer("grad_accum", Need::kOptional, R::kGradAccum.min, R::kGradAccum.max)
                     .value_or(t.grad_accum);
  static constexpr std::string_view kPrecisions[] = {"fp32", "bf16", "fp16"};
  t.precision = f.Choice("precision", Need::kRequired, kPrecisions).value_or(t.precision);
  if (auto o = f.Map("optimizer", Need::kRequired)) {
    YamlFields of(*o, "training.optimizer", path, diags);
    ReadOptimizer(of, t.optimizer);
  }
  if (auto s = f.Map("scheduler", Need::kOptional)) {
    YamlFields sf(*s, "training.scheduler", path, diags);
    ReadScheduler(sf, t.scheduler);
  }
  t.grad_clip = f.Number("grad_clip", Need::kOptional, R::kGradClip.min, R::kGradClip.max)
                    .value_or(t.grad_clip);
  t.activation_checkpointing =
      f.Bool("activation_checkpointing", Need::kOptional).value_or(t.activation_checkpointing);
  static constexpr std::string_view kParallelism[] = {"ddp", "fsdp"};
  t.parallelism = f.Choice("parallelism", Need::kOptional, kParallelism).value_or(t.parallelism);
  t.shuffle = f.Bool("shuffle", Need::kOptional).value_or(t.shuffle);
  t.deterministic = f.Bool("deterministic", Need::kOptional).value_or(t.deterministic);
  f.Finish();
}

// Records where a document's first node starts, to tell whether a document holds anything.
class FirstNodeMark : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> mark;
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { Record(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { Record(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Record(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Record(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Record(m);
  }
  void OnMapEnd() override {}

 private:
  void Record(const YAML::Mark& m) {
    if (!mark) mark = m;
  }
};

// Refuses a second document. yaml-cpp 0.7's LoadAll() loops forever on a stray flow
// indicator such as `"",` (jbeder/yaml-cpp#1040, fixed upstream in 0.8 by #1319), so the
// documents are walked by hand and never more than two of them.
void RefuseSecondDocument(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  FirstNodeMark first, second;
  if (!parser.HandleNextDocument(first)) return;
  if (!parser.HandleNextDocument(second)) return;
  SourcePos pos = second.mark ? PosOf(*second.mark) : SourcePos{};
  throw InputError(Diagnostic{path, pos, "unexpected content after the first YAML document",
                              "a training config holds exactly one document"});
}

YAML::Node ParseYaml(std::string_view text, const std::string& path) {
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    throw InputError(
        Diagnostic{path,
                   {},
                   "not a YAML file: contains a NUL byte at offset " + std::to_string(nul),
                   "is this a binary file?"});
  }
  std::string owned(text);
  try {
    YAML::Node root = YAML::Load(owned);
    RefuseSecondDocument(owned, path);
    return root;
  } catch (const YAML::DeepRecursion& e) {
    throw InputError(Diagnostic{path, PosOf(e.mark),
                                "invalid YAML: nested deeper than yaml-cpp's limit",
                                "a training config is two levels deep"});
  } catch (const YAML::Exception& e) {
    throw InputError(Diagnostic{path, PosOf(e.mark), "invalid YAML: " + e.msg, {}});
  }
}

}  // namespace

TrainConfig LoadTrainConfig(std::string_view text, const std::string& path) {
  YAML::Node root = ParseYaml(text, path);
  Diagnostics diags;
  TrainConfig config;
  if (root.IsNull() && text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    diags.Error(path, {}, "the file is empty", "a training config has 'model' and 'training'");
    throw InputError(diags);
  }
  if (!root.IsMap()) {
    diags.Error(path, PosOf(root.Mark()),
                "a training config must be a mapping with 'model' and 'training', not " +
                    YamlKindName(root));
    throw InputError(diags);
  }
  try {
    YamlFields f(root, "", path, diags);
    if (auto m = f.Map("model", Need::kRequired)) {
      YamlFields mf(*m, "model", path, diags);
      ReadModel(mf, config.model, path, diags);
      if (diags.empty()) CheckModelShape(config.model, mf);
    }
    if (auto t = f.Map("training", Need::kRequired)) {
      YamlFields tf(*t, "training", path, diags);
      ReadTraining(tf, config.training, path, diags);
    }
    f.Finish();
  } catch (const YAML::Exception& e) {
    diags.Error(path, PosOf(e.mark), "invalid YAML: " + e.msg);
  }
  if (!diags.empty()) throw InputError(diags);
  return config;
}

}  // namespace trainlock
