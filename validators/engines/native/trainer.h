// One training process's state and step: the reference model, AdamW with a warmup + cosine
// schedule, gradient clipping and accumulation, optional dynamic loss scaling, the data
// loader and the RNG streams. Everything it holds can be captured into a checkpoint and
// restored from one, which is what the resume test exercises.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>

#include "engines/native/checkpoint.h"
#include "engines/native/llama.h"
#include "engines/native/token_data.h"
#include "run/run_config.h"

namespace trainlock::validate {

struct TrainerOptions {
  torch::Device device = torch::kCPU;
  uint64_t seed = 0;
  int64_t eval_batches = 1;
  nlohmann::json identity = nlohmann::json::object();  // lock/config hashes, torch version
  // false only for the negative control that proves the checkpointing test can fail: the
  // recompute then draws fresh dropout masks instead of replaying the forward's.
  bool recompute_replays_rng = true;
};

// What the validator measured around one representative step (docs/DESIGN.md, "Measuring memory").
struct StepMeasurement {
  double step_time_s = 0;
  double tokens_per_s = 0;
  int64_t tokens = 0;
  double flops = 0;  // model FLOPs of the step (6 * params * tokens + attention)
  // CUDA only (-1 elsewhere).
  int64_t peak_allocated_bytes = -1;
  int64_t peak_reserved_bytes = -1;
  int64_t device_used_bytes = -1;
  int64_t device_total_bytes = -1;
  int64_t peak_rss_bytes = -1;  // the process's peak resident set (all builds)
  // The shape the step ran at, observed: a parameter's dtype, the dtype the logits came out
  // in (autocast's), the processes its gradients were reduced across (the native trainer has
  // no process group: 1) and whether activations were recomputed (decoder layers recomputed
  // in the step's backward, counted by the recompute itself).
  std::string param_dtype;
  std::string activation_dtype;
  int64_t world_size = 1;
  bool activation_checkpointing = false;
};

// The caching allocator's peaks and the device's own view (cudaMemGetInfo); -1 off CUDA.
struct DeviceMemory {
  int64_t peak_allocated_bytes = -1;
  int64_t peak_reserved_bytes = -1;
  int64_t device_used_bytes = -1;
  int64_t device_total_bytes = -1;
};
DeviceMemory ReadDeviceMemory(const torch::Device& device);

// An exact, order-sensitive 64-bit fingerprint of a tensor's bytes, computed where the tensor
// lives: equal tensors always agree, and any changed bit changes it (barring a 2^-64
// coincidence). Integer sums are deterministic on every device, unlike float reductions.
std::string TensorFingerprint(const torch::Tensor& t);

// `type` in the config's words: "fp32", "bf16", "fp16" (else LibTorch's name).
std::string PrecisionName(at::ScalarType type);

// True when `e` is LibTorch's out-of-memory error (CUDA or host allocator).
bool IsOutOfMemory(const std::exception& e);

struct RestoreOptions {
  bool rng = true;   // false only for the negative control that proves the test can fail
  bool data = true;  // likewise for the data-loader position
};

class Trainer {
 public:
  Trainer(const TrainConfig& config, const TrainerOptions& options,
          std::unique_ptr<TokenSource> data);

  // One optimizer step over grad_accum micro-batches; returns the mean micro-batch loss.
  double Step();
  // Step() measured as docs/DESIGN.md prescribes: reset peak stats, zero grads, step, synchronize.
  double MeasuredStep(StepMeasurement* measurement);
  // Mean loss over the held-out batches, in eval mode, leaving every RNG stream untouched.
  double EvalLoss();

  CheckpointContents Capture();
  void Restore(const CheckpointContents& contents, const RestoreOptions& options = {});
  // Gives the device back what training alone needs (gradients, the caching allocator's free
  // blocks), keeping the state: after the last step of a process that only writes its state
  // next, so that the portable process can start beside it (docs/validate.md, "What runs", D).
  void ReleaseTrainingMemory();
  // The negative control of a node computing differently (--negative-control bitflip): the
  // lowest-order mantissa bit of the first parameter's first element, flipped in place.
  void FlipLowestMantissaBit();
  // Parameters and optimizer moments (on the CPU, or where they live), for bitwise
  // comparison between runs.
  std::vector<NamedTensor> FinalState(bool on_device = false);

  int64_t step() const { return step_; }
  Llama& model() { return model_; }
  const TokenSource& data() const { return *data_; }

 private:
  double LearningRate() const;
  double ForwardBackward();  // all micro-batches; returns the mean loss
  bool ApplyOptimizer();     // false when the loss scaler skipped the step
  torch::Tensor ToDevice(const std::vector<int64_t>& values, int64_t rows, int64_t cols) const;
  nlohmann::json RngState() const;
  void SetRngState(const nlohmann::json& state);

  TrainConfig config_;
  TrainerOptions options_;
  std::unique_ptr<TokenSource> data_;
  std::unique_ptr<WindowLoader> loader_;
  Llama model_{nullptr};
  std::vector<std::pair<std::string, torch::Tensor>> params_;
  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_;
  int64_t step_ = 0;
  at::ScalarType logits_dtype_ = at::kFloat;  // of the last forward pass, as observed
  bool autocast_ = false;
  at::ScalarType autocast_dtype_ = at::kFloat;
  // Dynamic loss scaling (fp16 only), as torch.cuda.amp.GradScaler does it.
  bool scaling_ = false;
  double loss_scale_ = 65536.0;
  int64_t growth_tracker_ = 0;
};

}  // namespace trainlock::validate
