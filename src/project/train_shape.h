// The training shape a report carries (train.step's "shape" metrics): enough of the training
// config for `trainlock plan` to redo the memory arithmetic without the project directory.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

#include "project/train_config.h"

namespace trainlock {

// Calls visit(name, field) for every field of the training shape, `field` being a reference
// into `config` (TrainConfig or const TrainConfig) of type int64_t, std::string or bool. This
// is the one list of the shape's fields: writing, reading and plan's bounds all walk it, in
// this order.
template <typename Config, typename Visit>
void ForEachShapeField(Config& config, Visit&& visit) {
  auto& t = config.training;
  auto& m = config.model;
  visit("seq_len", t.seq_len);
  visit("micro_batch", t.micro_batch);
  visit("grad_accum", t.grad_accum);
  visit("precision", t.precision);
  visit("activation_checkpointing", t.activation_checkpointing);
  visit("parallelism", t.parallelism);
  visit("hidden_size", m.hidden_size);
  visit("num_layers", m.num_layers);
  visit("num_heads", m.num_heads);
  visit("num_kv_heads", m.num_kv_heads);
  visit("intermediate_size", m.intermediate_size);
  visit("vocab_size", m.vocab_size);
  visit("tie_embeddings", m.tie_embeddings);
}

// ForEachShapeField over the integer fields only: the sizes.
template <typename Config, typename Visit>
void ForEachShapeInteger(Config& config, Visit&& visit) {
  ForEachShapeField(config, [&](const char* name, auto& field) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(field)>, int64_t>) visit(name, field);
  });
}

// The shape's fields (ForEachShapeField) and "parameters", the model's parameter count.
nlohmann::json TrainShapeJson(const TrainConfig& config);

// The inverse of TrainShapeJson; throws InputError naming `where` and the field when one is
// missing or has the wrong type.
TrainConfig TrainConfigFromShape(const nlohmann::json& shape, const std::string& where);

}  // namespace trainlock
