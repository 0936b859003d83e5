// config.json into ModelConfig, and training-config mismatches; see hub_model_config.h.
#include "run/hub_model_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/json_file.h"
#include "base/yaml_fields.h"

namespace trainlock {
namespace {

using nlohmann::json;

// Reads the fields of one config.json object, collecting every problem instead of stopping at
// the first, as the other loaders do. `prefix` names a nested object ("rope_scaling.").
class HubFields {
 public:
  HubFields(const json& object, std::string display, std::string prefix, Diagnostics& diags)
      : object_(object), display_(std::move(display)), prefix_(std::move(prefix)), diags_(diags) {}

  std::optional<int64_t> Integer(const char* key, bool required, int64_t min, int64_t max) {
    const json* v = Find(key, required);
    if (!v) return std::nullopt;
    if (!v->is_number_integer() || v->get<int64_t>() < min || v->get<int64_t>() > max) {
      Error(Name(key) + " must be an integer in [" + std::to_string(min) + ", " +
            std::to_string(max) + "], not " + Quoted(v->dump()));
      return std::nullopt;
    }
    return v->get<int64_t>();
  }
  std::optional<double> Number(const char* key, bool required) {
    const json* v = Find(key, required);
    if (!v) return std::nullopt;
    if (!v->is_number() || !(v->get<double>() >= 0)) {
      Error(Name(key) + " must be a non-negative number, not " + Quoted(v->dump()));
      return std::nullopt;
    }
    return v->get<double>();
  }
  std::optional<bool> Bool(const char* key) {
    const json* v = Find(key, false);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) {
      Error(Name(key) + " must be true or false, not " + Quoted(v->dump()));
      return std::nullopt;
    }
    return v->get<bool>();
  }
  std::optional<std::string> String(const char* key) {
    const json* v = Find(key, false);
    if (!v) return std::nullopt;
    if (!v->is_string()) {
      Error(Name(key) + " must be a string, not " + Quoted(v->dump()));
      return std::nullopt;
    }
    return v->get<std::string>();
  }
  // Absent and null read alike: transformers writes null for a default.
  const json* Find(const char* key, bool required) {
    auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) {
      if (required) Error(Name(key) + " is missing");
      return nullptr;
    }
    return &*it;
  }
  void Error(std::string message, std::string hint = {}) {
    diags_.Error(display_, {}, std::move(message), std::move(hint));
  }
  std::string Name(const char* key) const { return "'" + prefix_ + key + "'"; }
  const std::string& display() const { return display_; }
  Diagnostics& diags() { return diags_; }

 private:
  const json& object_;
  std::string display_;
  std::string prefix_;
  Diagnostics& diags_;
};

constexpr const char* kLlamaComputes =
    "the validator's Llama (validators/engines/native/llama.cc) computes RMSNorm, SwiGLU (silu), "
    "no biases, "
    "head_dim = hidden_size / num_attention_heads and RoPE with rope_scaling none, linear or "
    "llama3";

void ReadModelType(HubFields& f, const json& object) {
  std::optional<std::string> type = f.String("model_type");
  bool llama = type == "llama";
  if (!type) {
    auto it = object.find("architectures");
    llama = it != object.end() && it->is_array() &&
            std::find(it->begin(), it->end(), json("LlamaForCausalLM")) != it->end();
  }
  if (!llama) {
    f.Error("model_type " + Quoted(type.value_or("(absent)")) + " is not a Llama",
            std::string("trainlock trains Llama-shaped models: ") + kLlamaComputes);
  }
}

// rope_scaling: honoured when the validator computes it, refused otherwise. Training the model
// with plain RoPE instead would validate a different model than the one named.
void ReadRopeScaling(HubFields& f, const json& object, RopeScaling& r) {
  const json* scaling = f.Find("rope_scaling", false);
  if (!scaling) return;
  if (!scaling->is_object()) {
    f.Error("'rope_scaling' must be an object or null, not " + Quoted(scaling->dump()));
    return;
  }
  HubFields rf(*scaling, f.display(), "rope_scaling.", f.diags());
  // transformers reads "rope_type", and "type" from configs written before it.
  std::optional<std::string> type = rf.String("rope_type");
  if (!type) type = rf.String("type");
  if (!type || *type == "default") return;
  if (*type != "linear" && *type != "llama3") {
    f.Error(
        "rope_scaling type " + Quoted(*type) + " is not supported",
        std::string(kLlamaComputes) + "; training with plain RoPE would validate another model");
    return;
  }
  r.type = *type;
  r.factor = rf.Number("factor", true).value_or(r.factor);
  if (r.factor < 1) rf.Error("'rope_scaling.factor' must be at least 1");
  if (r.type == "llama3") {
    r.low_freq_factor = rf.Number("low_freq_factor", true).value_or(r.low_freq_factor);
    r.high_freq_factor = rf.Number("high_freq_factor", true).value_or(r.high_freq_factor);
    r.original_max_position_embeddings =
        rf.Integer("original_max_position_embeddings", true, 1, int64_t{1} << 24)
            .value_or(r.original_max_position_embeddings);
  }
  (void)object;
}

// Fields that change what the model computes but have no place in ModelConfig: accepted only
// at the value the validator's Llama computes.
void RefuseUncomputed(HubFields& f, const ModelConfig& m) {
  if (auto act = f.String("hidden_act"); act && *act != "silu") {
    f.Error("hidden_act " + Quoted(*act) + " is not supported", kLlamaComputes);
  }
  for (const char* bias : {"attention_bias", "mlp_bias"}) {
    if (f.Bool(bias).value_or(false)) f.Error(f.Name(bias) + " is true", kLlamaComputes);
  }
  if (auto dropout = f.Number("attention_dropout", false); dropout && *dropout != 0) {
    f.Error("attention_dropout " + NumberText(*dropout) + " is not supported",
            "the validator's Llama has no attention dropout");
  }
  if (auto head_dim = f.Integer("head_dim", false, 1, 1 << 16);
      head_dim && m.num_heads && *head_dim != m.head_dim()) {
    f.Error("head_dim " + std::to_string(*head_dim) +
                " is not hidden_size / num_attention_heads (" + std::to_string(m.head_dim()) + ")",
            kLlamaComputes);
  }
}

}  // namespace

std::string NumberText(double value) {
  // Whole numbers as integers (500000, not 5e+05), as people write rope_theta.
  if (std::abs(value) < 1e15 && value == std::floor(value)) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, end) : "nan";
}

HubModelConfig ReadHubModelConfig(const std::string& text, const std::string& display) {
  // config.json comes from the Hub: parsed within json_limits.h's bounds like all outside JSON.
  const json object = ParseJsonText(text, display);
  if (!object.is_object()) {
    throw InputError(Diagnostic{display, {}, "config.json must be a JSON object", {}});
  }
  Diagnostics diags;
  HubFields f(object, display, "", diags);
  HubModelConfig hub;
  ModelConfig& m = hub.model;
  m.architecture = "llama";
  ReadModelType(f, object);
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  m.hidden_size = f.Integer("hidden_size", true, 1, kMaxDim).value_or(0);
  m.num_layers = f.Integer("num_hidden_layers", true, 1, 4096).value_or(0);
  m.num_heads = f.Integer("num_attention_heads", true, 1, 4096).value_or(0);
  m.num_kv_heads = f.Integer("num_key_value_heads", false, 1, 4096).value_or(m.num_heads);
  m.intermediate_size = f.Integer("intermediate_size", true, 1, kMaxDim * 4).value_or(0);
  m.vocab_size = f.Integer("vocab_size", true, 2, int64_t{1} << 24).value_or(0);
  m.tie_embeddings = f.Bool("tie_word_embeddings").value_or(false);
  m.rope_theta = f.Number("rope_theta", false).value_or(10000.0);
  m.norm_eps = f.Number("rms_norm_eps", false).value_or(1e-6);  // LlamaConfig's default
  m.dropout = 0.0;
  hub.max_position_embeddings =
      f.Integer("max_position_embeddings", false, 1, int64_t{1} << 24).value_or(2048);
  ReadRopeScaling(f, object, m.rope_scaling);
  RefuseUncomputed(f, m);
  if (!diags.empty()) throw InputError(diags);
  return hub;
}

namespace {

// One model field as the training config and config.json name it, and its value as text.
struct ComparedField {
  const char* yaml_key;
  const char* hub_key;
  std::function<std::string(const ModelConfig&)> text;
};

std::string RopeScalingText(const RopeScaling& r) {
  if (r.type.empty()) return "none";
  std::string text = r.type + " factor " + NumberText(r.factor);
  if (r.type == "llama3") {
    text += ", low_freq_factor " + NumberText(r.low_freq_factor) + ", high_freq_factor " +
            NumberText(r.high_freq_factor) + ", original_max_position_embeddings " +
            std::to_string(r.original_max_position_embeddings);
  }
  return text;
}

const std::vector<ComparedField>& ComparedFields() {
  static const std::vector<ComparedField> fields = {
      {"hidden_size", "hidden_size", [](auto& m) { return std::to_string(m.hidden_size); }},
      {"num_layers", "num_hidden_layers", [](auto& m) { return std::to_string(m.num_layers); }},
      {"num_heads", "num_attention_heads", [](auto& m) { return std::to_string(m.num_heads); }},
      {"num_kv_heads", "num_key_value_heads",
       [](auto& m) { return std::to_string(m.num_kv_heads); }},
      {"intermediate_size", "intermediate_size",
       [](auto& m) { return std::to_string(m.intermediate_size); }},
      {"vocab_size", "vocab_size", [](auto& m) { return std::to_string(m.vocab_size); }},
      {"tie_embeddings", "tie_word_embeddings",
       [](auto& m) { return std::string(m.tie_embeddings ? "true" : "false"); }},
      {"rope_theta", "rope_theta", [](auto& m) { return NumberText(m.rope_theta); }},
      {"rope_scaling", "rope_scaling", [](auto& m) { return RopeScalingText(m.rope_scaling); }},
      {"norm_eps", "rms_norm_eps", [](auto& m) { return NumberText(m.norm_eps); }},
  };
  return fields;
}

}  // namespace

std::vector<Diagnostic> ModelConfigMismatches(const ModelConfig& hub,
                                              const std::string& hub_display,
                                              const ModelConfig& trained,
                                              const std::string& config_text,
                                              const std::string& config_path) {
  const YAML::Node model = YAML::Load(config_text)["model"];
  std::vector<Diagnostic> out;
  for (const ComparedField& field : ComparedFields()) {
    const std::string want = field.text(hub), have = field.text(trained);
    if (want == have) continue;
    const YAML::Node node = model[field.yaml_key];
    const bool stated = node.IsDefined();
    out.push_back(Diagnostic{
        config_path, PosOf(stated ? node.Mark() : model.Mark()),
        "model." + std::string(field.yaml_key) + " is " + have + (stated ? "" : " (the default)") +
            " but " + hub_display + " has " + field.hub_key + " " + want,
        "train the model the config.json describes: set model." + std::string(field.yaml_key) +
            (field.yaml_key == std::string("rope_scaling") ? " as config.json states it"
                                                           : ": " + want)});
  }
  return out;
}

}  // namespace trainlock
