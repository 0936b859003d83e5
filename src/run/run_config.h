// The run's shape and recipe as plain values: the model (a Llama decoder's dimensions, RoPE)
// and the training (batching, precision, optimizer, schedule, parallelism, kernel mode). The
// training config (project/train_config.h) reads them from YAML, the engine spec
// (run/engine_spec.h) carries them to every engine process, and a checkpoint carries that spec.
#pragma once

#include <cstdint>
#include <string>
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

// The ranges every reader of a run's shape accepts (the training config's YAML, the engine
// spec's JSON, the spec a checkpoint carries), written once so that no reader takes what
// another refuses.
struct IntRange {
  int64_t min;
  int64_t max;
};
struct NumberRange {
  double min;
  double max;
};
namespace shape_range {
inline constexpr IntRange kHiddenSize{1, int64_t{1} << 20};
inline constexpr IntRange kHeads{1, 4096};  // num_layers, num_heads and num_kv_heads alike
inline constexpr IntRange kIntermediateSize{1, int64_t{1} << 22};
inline constexpr IntRange kVocabSize{2, int64_t{1} << 24};
inline constexpr NumberRange kRopeTheta{1.0, 1e9};
inline constexpr NumberRange kRopeFactor{1.0, 1e6};
inline constexpr NumberRange kRopeFreqFactor{1e-6, 1e6};
inline constexpr IntRange kRopeOriginalMax{1, int64_t{1} << 24};
inline constexpr NumberRange kNormEps{1e-12, 1e-1};
inline constexpr NumberRange kDropout{0.0, 0.9};
inline constexpr IntRange kBatch{1, int64_t{1} << 20};  // seq_len and micro_batch alike
inline constexpr IntRange kGradAccum{1, 1 << 16};
inline constexpr NumberRange kLr{0.0, 10.0};  // and above 0: a rate of 0 never trains
inline constexpr NumberRange kEps{0.0, 1.0};
inline constexpr NumberRange kWeightDecay{0.0, 10.0};
inline constexpr IntRange kWarmupSteps{0, int64_t{1} << 40};
inline constexpr IntRange kTotalSteps{1, int64_t{1} << 40};
inline constexpr NumberRange kMinLr{0.0, 10.0};
inline constexpr NumberRange kGradClip{0.0, 1e6};
}  // namespace shape_range

// A rule over several of the model's fields that `model` breaks: `field` is the one a reader
// points at ("num_heads", "num_kv_heads", "rope_scaling").
struct ShapeProblem {
  std::string field;
  std::string message;
  std::string hint;
};
std::vector<ShapeProblem> ModelShapeProblems(const ModelConfig& model);

}  // namespace trainlock
