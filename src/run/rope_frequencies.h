// RoPE's inverse frequencies for a model config: plain (rope_theta), or stretched by the
// `rope_scaling` Hugging Face's Llama applies (linear, llama3). Torch-free so that the
// arithmetic is tested without LibTorch; the validator's Llama builds its rotary table from it.
#pragma once

#include <vector>

#include "run/run_config.h"

namespace trainlock {

// One inverse frequency per pair of the head dimension (head_dim / 2 values), as
// transformers' _compute_default_rope_parameters, _compute_linear_scaling_rope_parameters and
// _compute_llama3_parameters compute them.
std::vector<double> RopeInverseFrequencies(const ModelConfig& config);

}  // namespace trainlock
