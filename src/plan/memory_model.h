// An estimate of a training step's device memory from the config alone: parameters,
// gradients, AdamW moments, activations and logits. It does not replace the validator's
// measurement; `plan` scales the measured activations by it for each fix, and uses it in place
// of a measurement after an out-of-memory (plan.h decides and ranks the remedies).
#pragma once

#include <string>

#include "project/train_config.h"

namespace trainlock {

struct MemoryEstimate {
  double parameters = 0;       // count
  double weights_bytes = 0;    // fp32 master weights: 4 bytes/param
  double grads_bytes = 0;      // fp32 gradients: 4 bytes/param
  double optimizer_bytes = 0;  // AdamW exp_avg + exp_avg_sq: 8 bytes/param
  double activation_bytes = 0;
  double logits_bytes = 0;
  double total_bytes() const {
    return weights_bytes + grads_bytes + optimizer_bytes + activation_bytes + logits_bytes;
  }
};

struct MemoryOptions {
  int64_t micro_batch = 0;  // 0: the config's
  bool activation_checkpointing = false;
  int64_t shard_ranks = 1;  // FSDP: weights, grads and moments divided over this many GPUs
};

// Activations per token and layer are taken as 2 bytes x (10 h + 3 i) under bf16/fp16
// autocast (4 bytes x under fp32) plus the fp32 residual stream (4 h); with activation
// checkpointing only the layer inputs (4 h) are kept plus one layer's worth. Logits cost
// V x (2 + 4 + 4 + 2) bytes per token (low-precision logits, fp32 upcast, its gradient, the
// logits' gradient), V x (4 + 4) in fp32.
MemoryEstimate EstimateTrainingMemory(const TrainConfig& config, const MemoryOptions& options = {});

// "77.6 GiB"; below 0.05 GiB in MiB or KiB ("3.4 MiB"), so that a small size never reads 0.0.
std::string GiB(double bytes);

}  // namespace trainlock
