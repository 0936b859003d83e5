// The reference decoder: a Llama-family transformer built from the training config
// (RMSNorm, rotary embeddings, grouped-query attention, SwiGLU MLP, tied or untied
// embeddings). Parameter names match Hugging Face's LlamaForCausalLM, so HF safetensors
// checkpoints load by name.
#pragma once

#include <torch/torch.h>

#include "train_config.h"

namespace trainlock::validate {

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const ModelConfig& c);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};

 private:
  int64_t heads_, kv_heads_, head_dim_;
};
TORCH_MODULE(Attention);

class MlpImpl : public torch::nn::Module {
 public:
  explicit MlpImpl(const ModelConfig& c);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
};
TORCH_MODULE(Mlp);

class DecoderLayerImpl : public torch::nn::Module {
 public:
  explicit DecoderLayerImpl(const ModelConfig& c);
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
  explicit LlamaBodyImpl(const ModelConfig& c);
  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RMSNorm norm{nullptr};
};
TORCH_MODULE(LlamaBody);

class LlamaImpl : public torch::nn::Module {
 public:
  // `init` = false leaves LibTorch's default initialisation, for a caller that moves the
  // model to its device first and calls InitWeights() there (fast on a GPU).
  explicit LlamaImpl(const ModelConfig& c, bool init = true);
  // Logits [batch, seq, vocab] for tokens [batch, seq].
  torch::Tensor forward(const torch::Tensor& tokens);
  // Mean next-token cross-entropy of `tokens` against `targets`, in fp32.
  torch::Tensor Loss(const torch::Tensor& tokens, const torch::Tensor& targets);
  // Deterministic initialisation from the global generator: N(0, 0.02) for matrices, 1 for norms.
  void InitWeights();
  const ModelConfig& config() const { return config_; }

  LlamaBody model{nullptr};
  torch::nn::Linear lm_head{nullptr};  // null when embeddings are tied

 private:
  std::pair<torch::Tensor, torch::Tensor> Rotary(int64_t seq_len, const torch::Device& device,
                                                 at::ScalarType dtype);
  ModelConfig config_;
};
TORCH_MODULE(Llama);

}  // namespace trainlock::validate
