// Training-memory arithmetic; see memory_model.h.
#include "plan/memory_model.h"

#include <cmath>
#include <cstdio>

namespace trainlock {

std::string GiB(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

MemoryEstimate EstimateTrainingMemory(const TrainConfig& config, const MemoryOptions& options) {
  const ModelConfig& m = config.model;
  const TrainingConfig& t = config.training;
  const double h = static_cast<double>(m.hidden_size), i = static_cast<double>(m.intermediate_size);
  const double layers = static_cast<double>(m.num_layers);
  const double tokens =
      static_cast<double>(options.micro_batch ? options.micro_batch : t.micro_batch) *
      static_cast<double>(t.seq_len);
  const double element = t.precision == "fp32" ? 4.0 : 2.0;
  const double ranks = static_cast<double>(std::max<int64_t>(1, options.shard_ranks));
  MemoryEstimate e;
  e.parameters = static_cast<double>(m.ParameterCount());
  e.weights_bytes = 4.0 * e.parameters / ranks;
  e.grads_bytes = 4.0 * e.parameters / ranks;
  e.optimizer_bytes = 8.0 * e.parameters / ranks;
  const double per_layer = element * (10.0 * h + 3.0 * i) + 4.0 * h;
  const bool checkpointing = options.activation_checkpointing || t.activation_checkpointing;
  e.activation_bytes =
      checkpointing ? tokens * (layers * 4.0 * h + per_layer) : tokens * layers * per_layer;
  e.logits_bytes = tokens * static_cast<double>(m.vocab_size) * (element == 2.0 ? 12.0 : 8.0);
  return e;
}

std::vector<std::string> OutOfMemoryRemedies(const TrainConfig& config, double device_bytes,
                                             const Catalog& catalog) {
  std::vector<std::string> remedies;
  const MemoryEstimate base = EstimateTrainingMemory(config);
  const double states = base.weights_bytes + base.grads_bytes + base.optimizer_bytes;
  if (!config.training.activation_checkpointing) {
    MemoryEstimate ckpt = EstimateTrainingMemory(config, {0, true, 1});
    remedies.push_back("activation checkpointing: activations " + GiB(base.activation_bytes) +
                       " -> " + GiB(ckpt.activation_bytes) + ", step total " +
                       GiB(base.total_bytes()) + " -> " + GiB(ckpt.total_bytes()) +
                       (ckpt.total_bytes() <= device_bytes ? " (fits)" : ""));
  }
  for (int64_t mb = config.training.micro_batch / 2; mb >= 1; mb /= 2) {
    MemoryEstimate smaller = EstimateTrainingMemory(config, {mb, false, 1});
    bool fits = smaller.total_bytes() <= device_bytes;
    if (fits || mb == 1) {
      remedies.push_back(
          "micro_batch " + std::to_string(mb) + " with grad_accum " +
          std::to_string(config.training.grad_accum * config.training.micro_batch / mb) +
          " (same global batch): activations + logits " +
          GiB(base.activation_bytes + base.logits_bytes) + " -> " +
          GiB(smaller.activation_bytes + smaller.logits_bytes) + ", step total " +
          GiB(smaller.total_bytes()) + (fits ? " (fits)" : " (still too large)"));
      break;
    }
  }
  for (int64_t ranks = 2; ranks <= 64; ranks *= 2) {
    MemoryEstimate sharded = EstimateTrainingMemory(config, {0, false, ranks});
    if (sharded.total_bytes() <= device_bytes || ranks == 64) {
      remedies.push_back("FSDP over " + std::to_string(ranks) + " GPUs: weights + grads + AdamW " +
                         GiB(states) + " (16 bytes x " +
                         std::to_string(static_cast<int64_t>(base.parameters)) + " params) -> " +
                         GiB(states / static_cast<double>(ranks)) + " per GPU, step total " +
                         GiB(sharded.total_bytes()) + " per GPU");
      break;
    }
  }
  std::string larger;
  for (const GpuModel& gpu : catalog.gpus()) {
    if (gpu.memory_gb * 1e9 >= base.total_bytes() * 1.1)
      larger += (larger.empty() ? "" : ", ") + gpu.name;
  }
  remedies.push_back(larger.empty() ? "no single catalog accelerator holds " +
                                          GiB(base.total_bytes()) + "; shard (FSDP) instead"
                                    : "a larger accelerator: " + larger + " (needs about " +
                                          GiB(base.total_bytes()) + " with 10% headroom)");
  return remedies;
}

}  // namespace trainlock
