// The reference decoder: a Llama-family transformer built from the training config
// (RMSNorm, rotary embeddings, grouped-query attention, SwiGLU MLP, tied or untied
// embeddings). Parameter names match Hugging Face's LlamaForCausalLM, so HF safetensors
// checkpoints load by name.
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <memory>

#include "run/run_config.h"

namespace trainlock::validate {

// A bias-free linear layer (weight [out, in], as torch.nn.Linear). Unlike LibTorch's
// Linear it allocates its weight uninitialised on the given device: building a 1B-parameter
// model on the CPU with default initialisation and copying it over cost seconds per process.
class ProjectionImpl : public torch::nn::Module {
 public:
  ProjectionImpl(int64_t in, int64_t out, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x) { return torch::linear(x, weight); }
  torch::Tensor weight;
};
TORCH_MODULE(Projection);

// Token embeddings (weight [vocab, hidden]), allocated uninitialised like Projection.
class TokenEmbeddingImpl : public torch::nn::Module {
 public:
  TokenEmbeddingImpl(int64_t vocab, int64_t hidden, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& tokens) { return torch::embedding(weight, tokens); }
  torch::Tensor weight;
};
TORCH_MODULE(TokenEmbedding);

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const ModelConfig& c, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
  Projection q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};

 private:
  int64_t heads_, kv_heads_, head_dim_;
};
TORCH_MODULE(Attention);

class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(const ModelConfig& c, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x);
  Projection gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(Mlp);

class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const ModelConfig& c, const torch::TensorOptions& options);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
  Attention self_attn{nullptr};
  Mlp mlp{nullptr};
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};

 private:
  double dropout_;
};
TORCH_MODULE(DecoderLayer);

// The "model." prefix of HF names: embeddings, layers and the final norm.
class LlamaBodyImpl : public torch::nn::Module {
 public:
  LlamaBodyImpl(const ModelConfig& c, const torch::TensorOptions& options);
  TokenEmbedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RMSNorm norm{nullptr};
};
TORCH_MODULE(LlamaBody);

class LlamaImpl : public torch::nn::Module {
 public:
  // Parameters are allocated on `device`; `init` = false leaves them uninitialised, for a
  // caller that seeds the generators and calls InitWeights() (or loads weights) itself.
  explicit LlamaImpl(const ModelConfig& c, torch::Device device = torch::kCPU, bool init = true);
  // Logits [batch, seq, vocab] for tokens [batch, seq].
  torch::Tensor forward(const torch::Tensor& tokens);
  // Mean next-token cross-entropy of `tokens` against `targets`, in fp32. `logits_dtype`, when
  // given, receives the dtype the logits were computed in (the activations' dtype under
  // autocast), so that the report states what ran rather than what the config asked for.
  torch::Tensor Loss(const torch::Tensor& tokens, const torch::Tensor& targets,
                     at::ScalarType* logits_dtype = nullptr);
  // Deterministic initialisation from the global generator: N(0, 0.02) for matrices, 1 for norms.
  void InitWeights();
  // Activation checkpointing (training.activation_checkpointing): when on, a training forward
  // with grad keeps only each decoder layer's input and recomputes the layer's activations in
  // backward, replaying the RNG streams (dropout) and autocast it ran under, so the gradients
  // equal those of a run that stored them. `replay_rng` = false only for the negative control
  // that proves the bitwise test can fail.
  void SetActivationCheckpointing(bool on, bool replay_rng = true);
  // Decoder layers recomputed in backward so far: the recompute increments it, so a report
  // can state that recomputation ran rather than that the config asked for it.
  int64_t recomputed_layers() const { return recomputed_->load(); }
  const ModelConfig& config() const { return config_; }

  LlamaBody model{nullptr};
  Projection lm_head{nullptr};  // null when embeddings are tied

 private:
  std::pair<torch::Tensor, torch::Tensor> Rotary(int64_t seq_len, const torch::Device& device,
                                                 at::ScalarType dtype);
  ModelConfig config_;
  bool checkpointing_ = false, replay_rng_ = true;
  std::shared_ptr<std::atomic<int64_t>> recomputed_ = std::make_shared<std::atomic<int64_t>>(0);
};
TORCH_MODULE(Llama);

}  // namespace trainlock::validate
