// Training-memory arithmetic; see memory_model.h.
#include "plan/memory_model.h"

#include <cmath>
#include <cstdio>
#include <iterator>

namespace trainlock {

std::string GiB(double bytes) {
  // A small model's memory in GiB rounds to "0.0 GiB", which reads as nothing at all: below
  // 0.05 GiB the unit steps down until the number shows.
  static constexpr const char* kUnits[] = {"GiB", "MiB", "KiB"};
  double value = bytes / (1024.0 * 1024.0 * 1024.0);
  size_t unit = 0;
  while (value > 0 && value < 0.05 && unit + 1 < std::size(kUnits)) {
    value *= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", value, kUnits[unit]);
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

}  // namespace trainlock
