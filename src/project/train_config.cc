// Training-config schema over yaml-cpp; see train_config.h.
//
// Scalars are converted here rather than with yaml-cpp's as<T>() so that every error carries
// the key, the position and the expected type.
#include "project/train_config.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "base/diagnostic.h"
#include "base/suggest.h"

namespace trainlock {

int64_t ModelConfig::ParameterCount() const {
  int64_t kv_dim = num_heads ? num_kv_heads * head_dim() : 0;
  int64_t attention = hidden_size * hidden_size * 2 + hidden_size * kv_dim * 2;
  int64_t mlp = 3 * hidden_size * intermediate_size;
  int64_t norms = 2 * hidden_size;
  int64_t embeddings = vocab_size * hidden_size * (tie_embeddings ? 1 : 2);
  return num_layers * (attention + mlp + norms) + embeddings + hidden_size;
}

namespace {

constexpr int64_t kMaxBatch = int64_t{1} << 20;

SourcePos PosOf(const YAML::Mark& mark) {
  if (mark.is_null()) return {};
  return {mark.line + 1, mark.column + 1};
}

// Reads one YAML mapping against a schema, like TomlFields does for TOML.
class YamlFields {
 public:
  YamlFields(const YAML::Node& node, std::string name, const std::string& path, Diagnostics& diags)
      : node_(node), name_(std::move(name)), path_(path), diags_(diags) {
    // yaml-cpp keeps the first of duplicate keys silently; a config with two values for one
    // key is ambiguous, so refuse it.
    std::set<std::string> seen;
    for (const auto& entry : node_) {
      const YAML::Node& key = entry.first;
      if (!key.IsScalar()) {
        Error(PosOf(key.Mark()), "keys " + Where() + " must be plain strings");
        continue;
      }
      if (!seen.insert(key.Scalar()).second) {
        Error(PosOf(key.Mark()), "duplicate key " + Quoted(key.Scalar()) + " " + Where());
      }
    }
  }

  std::string Qualified(std::string_view key) const {
    return name_.empty() ? std::string(key) : name_ + "." + std::string(key);
  }
  void Error(SourcePos pos, std::string message, std::string hint = {}) {
    diags_.Error(path_, pos, std::move(message), std::move(hint));
  }

  // Position of a key's value, or of the mapping when the key is absent.
  SourcePos PosOfKey(std::string_view key) const {
    for (const auto& entry : node_) {
      if (entry.first.IsScalar() && entry.first.Scalar() == key) return PosOf(entry.second.Mark());
    }
    return PosOf(node_.Mark());
  }

  std::optional<YAML::Node> Get(std::string_view key, bool required) {
    known_.insert(std::string(key));
    for (const auto& entry : node_) {
      if (entry.first.IsScalar() && entry.first.Scalar() == key) return entry.second;
    }
    if (required) {
      Error(PosOf(node_.Mark()), "missing required key '" + Qualified(key) + "'");
    }
    return std::nullopt;
  }

  std::optional<std::string> ScalarOf(std::string_view key, const YAML::Node& v,
                                      std::string_view expected) {
    if (!v.IsScalar()) {
      Error(PosOf(v.Mark()),
            "'" + Qualified(key) + "' must be " + std::string(expected) + ", not " + KindName(v));
      return std::nullopt;
    }
    return v.Scalar();
  }

  std::optional<int64_t> Integer(std::string_view key, bool required, int64_t min, int64_t max,
                                 std::optional<int64_t> fallback = std::nullopt) {
    auto v = Get(key, required);
    if (!v) return fallback;
    auto text = ScalarOf(key, *v, "an integer");
    if (!text) return std::nullopt;
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (ec == std::errc::result_out_of_range) {
      Error(PosOf(v->Mark()), "'" + Qualified(key) + "' = " + Quoted(*text) + " is out of range",
            "expected " + std::to_string(min) + " to " + std::to_string(max));
      return std::nullopt;
    }
    if (ec != std::errc() || ptr != text->data() + text->size()) {
      Error(PosOf(v->Mark()), "'" + Qualified(key) + "' must be an integer, not " + Quoted(*text));
      return std::nullopt;
    }
    if (value < min || value > max) {
      Error(PosOf(v->Mark()),
            "'" + Qualified(key) + "' = " + std::to_string(value) + " is out of range",
            "expected " + std::to_string(min) + " to " + std::to_string(max));
      return std::nullopt;
    }
    return value;
  }

  std::optional<double> Number(std::string_view key, bool required, double min, double max,
                               std::optional<double> fallback = std::nullopt) {
    auto v = Get(key, required);
    if (!v) return fallback;
    auto text = ScalarOf(key, *v, "a number");
    if (!text) return std::nullopt;
    double value = 0;
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (ec != std::errc() || ptr != text->data() + text->size() || !std::isfinite(value)) {
      Error(PosOf(v->Mark()), "'" + Qualified(key) + "' must be a number, not " + Quoted(*text));
      return std::nullopt;
    }
    if (value < min || value > max) {
      Error(PosOf(v->Mark()), "'" + Qualified(key) + "' = " + *text + " is out of range",
            "expected " + Format(min) + " to " + Format(max));
      return std::nullopt;
    }
    return value;
  }

  std::optional<bool> Bool(std::string_view key, bool required, std::optional<bool> fallback) {
    auto v = Get(key, required);
    if (!v) return fallback;
    auto text = ScalarOf(key, *v, "a boolean");
    if (!text) return std::nullopt;
    if (*text == "true" || *text == "True" || *text == "yes") return true;
    if (*text == "false" || *text == "False" || *text == "no") return false;
    Error(PosOf(v->Mark()), "'" + Qualified(key) + "' must be true or false, not " + Quoted(*text));
    return std::nullopt;
  }

  std::optional<std::string> Choice(std::string_view key, bool required,
                                    std::span<const std::string_view> choices,
                                    std::optional<std::string> fallback = std::nullopt) {
    auto v = Get(key, required);
    if (!v) return fallback;
    auto text = ScalarOf(key, *v, "a string");
    if (!text) return std::nullopt;
    if (std::find(choices.begin(), choices.end(), *text) == choices.end()) {
      std::string all;
      for (std::string_view c : choices) all += (all.empty() ? "" : ", ") + std::string(c);
      Error(PosOf(v->Mark()),
            "'" + Qualified(key) + "' = " + Quoted(*text) + " is not one of " + all,
            DidYouMean(*text, choices));
      return std::nullopt;
    }
    return text;
  }

  // A nested mapping, or nullopt (with an error when present but not a mapping).
  std::optional<YAML::Node> Map(std::string_view key, bool required) {
    auto v = Get(key, required);
    if (!v) return std::nullopt;
    if (!v->IsMap()) {
      Error(PosOf(v->Mark()), "'" + Qualified(key) + "' must be a mapping, not " + KindName(*v));
      return std::nullopt;
    }
    return v;
  }

  void Finish() {
    std::vector<std::string_view> candidates(known_.begin(), known_.end());
    for (const auto& entry : node_) {
      const YAML::Node& key = entry.first;
      if (!key.IsScalar() || known_.count(key.Scalar())) continue;
      Error(PosOf(key.Mark()), "unknown key " + Quoted(key.Scalar()) + " " + Where(),
            DidYouMean(key.Scalar(), candidates));
    }
  }

  static std::string KindName(const YAML::Node& v) {
    switch (v.Type()) {
      case YAML::NodeType::Map:
        return "a mapping";
      case YAML::NodeType::Sequence:
        return "a list";
      case YAML::NodeType::Scalar:
        return "a scalar";
      case YAML::NodeType::Null:
        return "null";
      case YAML::NodeType::Undefined:
        break;
    }
    return "nothing";
  }

 private:
  // "at the top level" or "in 'training.optimizer'".
  std::string Where() const { return name_.empty() ? "at the top level" : "in '" + name_ + "'"; }
  static std::string Format(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }

  const YAML::Node& node_;
  std::string name_;
  const std::string& path_;
  Diagnostics& diags_;
  std::set<std::string> known_;
};

void ReadModel(YamlFields& f, ModelConfig& m) {
  static constexpr std::string_view kArchitectures[] = {"llama"};
  auto arch = f.Choice("architecture", true, kArchitectures);
  m.architecture = arch.value_or("");
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  m.hidden_size = f.Integer("hidden_size", true, 1, kMaxDim).value_or(0);
  m.num_layers = f.Integer("num_layers", true, 1, 4096).value_or(0);
  m.num_heads = f.Integer("num_heads", true, 1, 4096).value_or(0);
  m.num_kv_heads = f.Integer("num_kv_heads", false, 1, 4096, m.num_heads).value_or(0);
  m.intermediate_size = f.Integer("intermediate_size", true, 1, kMaxDim * 4).value_or(0);
  m.vocab_size = f.Integer("vocab_size", true, 2, int64_t{1} << 24).value_or(0);
  m.tie_embeddings = f.Bool("tie_embeddings", false, false).value_or(false);
  m.rope_theta = f.Number("rope_theta", false, 1.0, 1e9, 10000.0).value_or(10000.0);
  m.norm_eps = f.Number("norm_eps", false, 1e-12, 1e-1, 1e-5).value_or(1e-5);
  m.dropout = f.Number("dropout", false, 0.0, 0.9, 0.0).value_or(0.0);
  f.Finish();
}

// Shape rules that involve several fields; reported at the model mapping.
void CheckModelShape(const ModelConfig& m, YamlFields& f) {
  SourcePos pos = f.PosOfKey("num_heads");
  if (m.hidden_size && m.num_heads && m.hidden_size % m.num_heads != 0) {
    f.Error(pos, "model.hidden_size " + std::to_string(m.hidden_size) +
                     " is not divisible by model.num_heads " + std::to_string(m.num_heads));
  } else if (m.head_dim() % 2 != 0) {
    f.Error(pos, "model head dimension " + std::to_string(m.head_dim()) +
                     " is odd; rotary embeddings need an even head dimension");
  }
  if (m.num_heads && m.num_kv_heads && m.num_heads % m.num_kv_heads != 0) {
    f.Error(f.PosOfKey("num_kv_heads"),
            "model.num_heads " + std::to_string(m.num_heads) +
                " is not a multiple of model.num_kv_heads " + std::to_string(m.num_kv_heads),
            "grouped-query attention shares each kv head among num_heads / num_kv_heads heads");
  }
}

void ReadOptimizer(YamlFields& f, OptimizerConfig& o) {
  static constexpr std::string_view kOptimizers[] = {"adamw"};
  o.name = f.Choice("name", true, kOptimizers).value_or("adamw");
  if (auto lr = f.Number("lr", true, -1e9, 10.0)) {
    // A negative or zero learning rate is a classic typo; say what is wrong plainly.
    if (*lr <= 0) {
      f.Error(PosOf(f.Get("lr", true)->Mark()), "'" + f.Qualified("lr") + "' must be positive",
              "a learning rate of 0 or below never trains");
    } else {
      o.lr = *lr;
    }
  }
  if (auto betas = f.Get("betas", false)) {
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
  o.eps = f.Number("eps", false, 0.0, 1.0, o.eps).value_or(o.eps);
  o.weight_decay = f.Number("weight_decay", false, 0.0, 10.0, o.weight_decay).value_or(0.0);
  f.Finish();
}

void ReadScheduler(YamlFields& f, SchedulerConfig& s) {
  static constexpr std::string_view kSchedulers[] = {"cosine", "constant"};
  s.name = f.Choice("name", true, kSchedulers).value_or("cosine");
  s.warmup_steps = f.Integer("warmup_steps", false, 0, int64_t{1} << 40, 0).value_or(0);
  s.total_steps = f.Integer("total_steps", false, 1, int64_t{1} << 40, 1000).value_or(1000);
  s.min_lr = f.Number("min_lr", false, 0.0, 10.0, 0.0).value_or(0.0);
  f.Finish();
}

void ReadTraining(YamlFields& f, TrainingConfig& t, const std::string& path, Diagnostics& diags) {
  t.seq_len = f.Integer("seq_len", true, 1, kMaxBatch).value_or(0);
  t.micro_batch = f.Integer("micro_batch", true, 1, kMaxBatch).value_or(0);
  t.grad_accum = f.Integer("grad_accum", false, 1, 1 << 16, 1).value_or(1);
  static constexpr std::string_view kPrecisions[] = {"fp32", "bf16", "fp16"};
  t.precision = f.Choice("precision", true, kPrecisions).value_or("fp32");
  if (auto o = f.Map("optimizer", true)) {
    YamlFields of(*o, "training.optimizer", path, diags);
    ReadOptimizer(of, t.optimizer);
  }
  if (auto s = f.Map("scheduler", false)) {
    YamlFields sf(*s, "training.scheduler", path, diags);
    ReadScheduler(sf, t.scheduler);
  }
  t.grad_clip = f.Number("grad_clip", false, 0.0, 1e6, 0.0).value_or(0.0);
  t.activation_checkpointing = f.Bool("activation_checkpointing", false, false).value_or(false);
  static constexpr std::string_view kParallelism[] = {"ddp", "fsdp"};
  t.parallelism = f.Choice("parallelism", false, kParallelism, "ddp").value_or("ddp");
  t.shuffle = f.Bool("shuffle", false, false).value_or(false);
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
                    YamlFields::KindName(root));
    throw InputError(diags);
  }
  try {
    YamlFields f(root, "", path, diags);
    if (auto m = f.Map("model", true)) {
      YamlFields mf(*m, "model", path, diags);
      ReadModel(mf, config.model);
      if (diags.empty()) CheckModelShape(config.model, mf);
    }
    if (auto t = f.Map("training", true)) {
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
