// The training config (configs/*.yaml): model shape and training recipe, schema-validated.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainlock {

// How RoPE's frequencies are stretched for contexts longer than the model was first trained
// on, as Hugging Face's `rope_scaling` states it. The validator's Llama computes exactly these
// (rope_frequencies.h); any other scaling is refused when the config is read.
struct RopeScaling {
  std::string type;  // "" (none) | "linear" | "llama3"
  double factor = 1.0;
  // llama3 only: the band between these wavelengths is interpolated.
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;

  bool operator==(const RopeScaling&) const = default;
};

struct ModelConfig {
  std::string architecture;  // "llama"
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
  bool tie_embeddings = false;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  double norm_eps = 1e-5;
  double dropout = 0.0;

  int64_t head_dim() const { return num_heads ? hidden_size / num_heads : 0; }
  // Parameter count of the Llama decoder this describes (embeddings included).
  int64_t ParameterCount() const;
};

struct OptimizerConfig {
  std::string name = "adamw";
  double lr = 3e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

struct SchedulerConfig {
  std::string name = "cosine";  // "cosine" | "constant"
  int64_t warmup_steps = 0;
  int64_t total_steps = 1000;
  double min_lr = 0.0;
};

struct TrainingConfig {
  int64_t seq_len = 0;
  int64_t micro_batch = 0;
  int64_t grad_accum = 1;
  std::string precision = "fp32";  // fp32 | bf16 | fp16
  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  double grad_clip = 0.0;  // 0 = off
  bool activation_checkpointing = false;
  std::string parallelism = "ddp";  // ddp | fsdp
  bool shuffle = false;             // shuffle the order of data windows
  // Whether the long run trains with deterministic kernels (slower on GPUs). train.step is
  // measured in this mode; the bitwise round trip is always deterministic.
  bool deterministic = false;
};

struct TrainConfig {
  ModelConfig model;
  TrainingConfig training;
};

// Parses and validates YAML text; throws InputError with every problem found, each as
// "path:line:column: error: ...".
TrainConfig LoadTrainConfig(std::string_view text, const std::string& path);

}  // namespace trainlock
