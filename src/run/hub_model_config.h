// A model's shape as its Hugging Face `config.json` states it, read into trainlock's
// ModelConfig, and the fields where a training config disagrees with it.
//
// Every field of config.json that changes what a Llama computes is carried over or refused,
// never ignored: the validator's Llama (validators/engines/native/llama.cc) is RMSNorm, SwiGLU
// (silu), no biases, head_dim = hidden_size / num_attention_heads, RoPE with rope_theta and, of the
// `rope_scaling` types, none, "default", "linear" and "llama3" (rope_frequencies.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/diagnostic.h"
#include "run/run_config.h"

namespace trainlock {

struct HubModelConfig {
  ModelConfig model;
  int64_t max_position_embeddings = 2048;  // transformers' LlamaConfig default
};

// Parses config.json text; `display` names it in messages. Throws InputError listing every
// field that is missing, of the wrong type or asks for something the validator's Llama does not
// compute (another model_type, rope_scaling type, activation, biases, head_dim).
HubModelConfig ReadHubModelConfig(const std::string& text, const std::string& display);

// The training config's model fields that disagree with `hub` (config.json, named by
// `hub_display`): one diagnostic per field, at the field's line and column in the training
// config (at `model:` for a field it leaves to its default). `trained` is what
// LoadTrainConfig read from `config_text`.
std::vector<Diagnostic> ModelConfigMismatches(const ModelConfig& hub,
                                              const std::string& hub_display,
                                              const ModelConfig& trained,
                                              const std::string& config_text,
                                              const std::string& config_path);

// The shortest text that reads back as `value` (500000, 1e-05), for configs and messages.
std::string NumberText(double value);

}  // namespace trainlock
