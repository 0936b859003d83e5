// Training shape <-> JSON; see train_shape.h.
#include "project/train_shape.h"

#include "base/diagnostic.h"

namespace trainlock {

nlohmann::json TrainShapeJson(const TrainConfig& config) {
  const ModelConfig& m = config.model;
  const TrainingConfig& t = config.training;
  return {
      {"parameters", m.ParameterCount()}, {"seq_len", t.seq_len},
      {"micro_batch", t.micro_batch},     {"grad_accum", t.grad_accum},
      {"precision", t.precision},         {"activation_checkpointing", t.activation_checkpointing},
      {"parallelism", t.parallelism},     {"hidden_size", m.hidden_size},
      {"num_layers", m.num_layers},       {"num_heads", m.num_heads},
      {"num_kv_heads", m.num_kv_heads},   {"intermediate_size", m.intermediate_size},
      {"vocab_size", m.vocab_size},       {"tie_embeddings", m.tie_embeddings}};
}

namespace {

template <typename T>
T Get(const nlohmann::json& shape, const char* key, const std::string& where) {
  if (!shape.is_object() || !shape.contains(key)) {
    throw InputError(
        Diagnostic{where, {}, std::string("the training shape has no \"") + key + "\"", ""});
  }
  try {
    return shape.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(Diagnostic{where,
                                {},
                                std::string("the training shape's \"") + key +
                                    "\" has the wrong type (" + shape.at(key).dump() + ")",
                                ""});
  }
}

}  // namespace

TrainConfig TrainConfigFromShape(const nlohmann::json& shape, const std::string& where) {
  TrainConfig config;
  ModelConfig& m = config.model;
  TrainingConfig& t = config.training;
  m.architecture = "llama";
  t.seq_len = Get<int64_t>(shape, "seq_len", where);
  t.micro_batch = Get<int64_t>(shape, "micro_batch", where);
  t.grad_accum = Get<int64_t>(shape, "grad_accum", where);
  t.precision = Get<std::string>(shape, "precision", where);
  t.activation_checkpointing = Get<bool>(shape, "activation_checkpointing", where);
  t.parallelism = Get<std::string>(shape, "parallelism", where);
  m.hidden_size = Get<int64_t>(shape, "hidden_size", where);
  m.num_layers = Get<int64_t>(shape, "num_layers", where);
  m.num_heads = Get<int64_t>(shape, "num_heads", where);
  m.num_kv_heads = Get<int64_t>(shape, "num_kv_heads", where);
  m.intermediate_size = Get<int64_t>(shape, "intermediate_size", where);
  m.vocab_size = Get<int64_t>(shape, "vocab_size", where);
  m.tie_embeddings = Get<bool>(shape, "tie_embeddings", where);
  return config;
}

}  // namespace trainlock
