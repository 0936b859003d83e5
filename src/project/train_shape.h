// The training shape a report carries (train.step's "shape" metrics): enough of the training
// config for `trainlock plan` to redo the memory arithmetic without the project directory.
#pragma once

#include <nlohmann/json.hpp>

#include "project/train_config.h"

namespace trainlock {

// {"parameters", "seq_len", "micro_batch", "grad_accum", "precision",
//  "activation_checkpointing", "parallelism", "hidden_size", "num_layers", "num_heads",
//  "num_kv_heads", "intermediate_size", "vocab_size", "tie_embeddings"}.
nlohmann::json TrainShapeJson(const TrainConfig& config);

// The inverse of TrainShapeJson; throws InputError naming `where` and the field when one is
// missing or has the wrong type.
TrainConfig TrainConfigFromShape(const nlohmann::json& shape, const std::string& where);

}  // namespace trainlock
