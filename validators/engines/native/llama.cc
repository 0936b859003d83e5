// The reference Llama decoder; see llama.h. Shapes follow Hugging Face's modeling_llama:
// rotary embeddings with rotate_half, kv heads shared for grouped-query attention,
// RMSNorm computed in fp32.
#include "engines/native/llama.h"

#include <cmath>
#include <optional>

#include <ATen/autocast_mode.h>

#include "run/rope_frequencies.h"
#include "support/torch_compat.h"

namespace trainlock::validate {

namespace F = torch::nn::functional;

torch::Tensor CausalAttention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v) {
  const int64_t group = q.size(1) / k.size(1);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
  // With no mask, the flash kernel takes the grouped heads itself (a mask would send it to
  // the math kernel: transformers' use_gqa_in_sdpa makes the same choice).
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true, std::nullopt,
                                          /*enable_gqa=*/group > 1);
#else
  const torch::Tensor keys = group > 1 ? k.repeat_interleave(group, 1) : k;
  const torch::Tensor values = group > 1 ? v.repeat_interleave(group, 1) : v;
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, keys, values, {}, 0.0, /*is_causal=*/true);
#else
  const int64_t seq = q.size(-2);
  auto scores =
      torch::matmul(q, keys.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  auto mask = torch::ones({seq, seq}, torch::TensorOptions().dtype(torch::kBool).device(q.device()))
                  .triu(1);
  scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
  auto probs = torch::softmax(scores.to(torch::kFloat32), -1).to(q.scalar_type());
  return torch::matmul(probs, values);
#endif
#endif
}

void SetCudaAutocast(bool enabled, at::ScalarType dtype) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  at::autocast::set_autocast_enabled(at::kCUDA, enabled);
  at::autocast::set_autocast_dtype(at::kCUDA, dtype);
#else
  at::autocast::set_enabled(enabled);
  at::autocast::set_autocast_gpu_dtype(dtype);
#endif
  if (!enabled) at::autocast::clear_cache();
}

bool CudaAutocastEnabled() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::autocast::is_autocast_enabled(at::kCUDA);
#else
  return at::autocast::is_enabled();
#endif
}

at::ScalarType CudaAutocastDtype() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::autocast::get_autocast_dtype(at::kCUDA);
#else
  return at::autocast::get_autocast_gpu_dtype();
#endif
}

bool FusedAdamWStep(const std::vector<torch::Tensor>& params,
                    const std::vector<torch::Tensor>& grads,
                    const std::vector<torch::Tensor>& exp_avgs,
                    const std::vector<torch::Tensor>& exp_avg_sqs, double step, double lr,
                    double beta1, double beta2, double weight_decay, double eps) {
#if TORCH_VERSION_MAJOR >= 2
  if (params.empty() || !params.front().is_cuda()) return false;
  // The kernel reads each parameter's step count; one tensor serves them all.
  const torch::Tensor count = torch::full(
      {}, step, torch::TensorOptions().dtype(torch::kFloat32).device(params.front().device()));
  const std::vector<torch::Tensor> steps(params.size(), count);
  at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, lr, beta1, beta2, weight_decay,
                    eps, /*amsgrad=*/false, /*maximize=*/false);
  return true;
#else
  (void)params, (void)grads, (void)exp_avgs, (void)exp_avg_sqs, (void)step, (void)lr;
  (void)beta1, (void)beta2, (void)weight_decay, (void)eps;
  return false;
#endif
}

ProjectionImpl::ProjectionImpl(int64_t in, int64_t out, const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({out, in}, options));
}

TokenEmbeddingImpl::TokenEmbeddingImpl(int64_t vocab, int64_t hidden,
                                       const torch::TensorOptions& options) {
  weight = register_parameter("weight", torch::empty({vocab, hidden}, options));
}

// [..., d] -> [-x2, x1] of its two halves.
static torch::Tensor RotateHalf(const torch::Tensor& x) {
  auto halves = x.chunk(2, -1);
  return torch::cat({-halves[1], halves[0]}, -1);
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps, const torch::TensorOptions& options) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}, options));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  auto xf = x.to(torch::kFloat32);
  auto normed = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  return weight * normed.to(x.scalar_type());
}

AttentionImpl::AttentionImpl(const ModelConfig& c, const torch::TensorOptions& o)
    : heads_(c.num_heads), kv_heads_(c.num_kv_heads), head_dim_(c.head_dim()) {
  q_proj = register_module("q_proj", Projection(c.hidden_size, heads_ * head_dim_, o));
  k_proj = register_module("k_proj", Projection(c.hidden_size, kv_heads_ * head_dim_, o));
  v_proj = register_module("v_proj", Projection(c.hidden_size, kv_heads_ * head_dim_, o));
  o_proj = register_module("o_proj", Projection(heads_ * head_dim_, c.hidden_size, o));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                     const torch::Tensor& sin) {
  const int64_t batch = x.size(0), seq = x.size(1);
  auto q = q_proj(x).view({batch, seq, heads_, head_dim_}).transpose(1, 2);
  auto k = k_proj(x).view({batch, seq, kv_heads_, head_dim_}).transpose(1, 2);
  auto v = v_proj(x).view({batch, seq, kv_heads_, head_dim_}).transpose(1, 2);
  q = q * cos + RotateHalf(q) * sin;
  k = k * cos + RotateHalf(k) * sin;
  auto out = CausalAttention(q, k, v);  // shares each kv head with its group of q heads
  return o_proj(out.transpose(1, 2).reshape({batch, seq, heads_ * head_dim_}));
}

MlpImpl::MlpImpl(const ModelConfig& c, const torch::TensorOptions& o) {
  gate_proj = register_module("gate_proj", Projection(c.hidden_size, c.intermediate_size, o));
  up_proj = register_module("up_proj", Projection(c.hidden_size, c.intermediate_size, o));
  down_proj = register_module("down_proj", Projection(c.intermediate_size, c.hidden_size, o));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  return down_proj(torch::silu(gate_proj(x)) * up_proj(x));
}

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& c, const torch::TensorOptions& o)
    : dropout_(c.dropout) {
  self_attn = register_module("self_attn", Attention(c, o));
  mlp = register_module("mlp", Mlp(c, o));
  input_layernorm = register_module("input_layernorm", RMSNorm(c.hidden_size, c.norm_eps, o));
  post_attention_layernorm =
      register_module("post_attention_layernorm", RMSNorm(c.hidden_size, c.norm_eps, o));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                        const torch::Tensor& sin) {
  auto attended = self_attn(input_layernorm(x), cos, sin);
  auto h = x + F::dropout(attended, F::DropoutFuncOptions().p(dropout_).training(is_training()));
  auto mlp_out = mlp(post_attention_layernorm(h));
  return h + F::dropout(mlp_out, F::DropoutFuncOptions().p(dropout_).training(is_training()));
}

namespace {

// The default generators a layer's forward draws from (dropout): the CPU's, and the device's
// when the layer runs on one. What torch.utils.checkpoint's preserve_rng_state saves.
struct RngStreams {
  torch::Tensor cpu;
  std::optional<at::Generator> device_generator;
  torch::Tensor device;
};

RngStreams CaptureRng(const torch::Device& device) {
  RngStreams s;
  s.cpu = at::detail::getDefaultCPUGenerator().get_state();
  if (!device.is_cpu()) {
    s.device_generator = at::globalContext().defaultGenerator(device);
    s.device = s.device_generator->get_state();
  }
  return s;
}

void RestoreRng(const RngStreams& s) {
  at::Generator cpu = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    cpu.set_state(s.cpu);
  }
  if (s.device_generator) {
    at::Generator generator = *s.device_generator;
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(s.device);
  }
}

// What the backward needs to recompute one layer: the layer, the RNG streams and the autocast
// state its forward ran under, and the model's recompute counter.
struct RecomputeState : torch::CustomClassHolder {
  std::shared_ptr<DecoderLayerImpl> layer;
  RngStreams rng;
  bool replay_rng = true;
  bool autocast = false;
  at::ScalarType autocast_dtype = at::kFloat;
  std::shared_ptr<std::atomic<int64_t>> recomputed;
};

// One decoder layer whose activations are not kept: forward runs the layer without grad and
// saves its inputs; backward runs it again with grad (same RNG draws, same autocast) and
// backpropagates through that recomputation. The layer's parameters are inputs so that their
// gradients leave through this node like any other.
struct CheckpointedLayer : torch::autograd::Function<CheckpointedLayer> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx,
                               c10::intrusive_ptr<RecomputeState> state, const torch::Tensor& x,
                               const torch::Tensor& cos, const torch::Tensor& sin,
                               at::TensorList params) {
    (void)params;  // the layer holds them; passed only so that they get gradients
    state->rng = CaptureRng(x.device());
    state->autocast = CudaAutocastEnabled();
    state->autocast_dtype = CudaAutocastDtype();
    ctx->save_for_backward({x, cos, sin});
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    torch::NoGradGuard no_grad;
    // A weight cast under no_grad would enter autocast's cache without history and could be
    // served to the recompute, which then would not reach the weight.
    const bool cache = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    torch::Tensor out = state->layer->forward(x, cos, sin);
    at::autocast::set_autocast_cache_enabled(cache);
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto holder = ctx->saved_data["state"].toCapsule();
    auto* state = static_cast<RecomputeState*>(holder.get());
    const auto saved = ctx->get_saved_variables();
    torch::Tensor x = saved[0].detach().requires_grad_(true);
    torch::Tensor out;
    {
      // The backward's own RNG position is put back afterwards: the recompute's draws are a
      // replay, not new ones, so the next step draws what it would have without checkpointing.
      const RngStreams now = CaptureRng(x.device());
      if (state->replay_rng) RestoreRng(state->rng);
      const bool autocast = CudaAutocastEnabled();
      const at::ScalarType autocast_dtype = CudaAutocastDtype();
      if (state->autocast) SetCudaAutocast(true, state->autocast_dtype);
      torch::AutoGradMode grad(true);
      out = state->layer->forward(x, saved[1], saved[2]);
      if (state->autocast) SetCudaAutocast(autocast, autocast_dtype);
      RestoreRng(now);
    }
    std::vector<torch::Tensor> inputs = {x};
    for (const torch::Tensor& p : state->layer->parameters()) inputs.push_back(p);
    std::vector<torch::Tensor> computed = torch::autograd::grad({out}, inputs, {grads[0]});
    state->recomputed->fetch_add(1);
    // One gradient per forward argument: none for the state, cos and sin.
    torch::autograd::variable_list result = {torch::Tensor(), computed[0], torch::Tensor(),
                                             torch::Tensor()};
    result.insert(result.end(), computed.begin() + 1, computed.end());
    return result;
  }
};

}  // namespace

LlamaBodyImpl::LlamaBodyImpl(const ModelConfig& c, const torch::TensorOptions& o) {
  embed_tokens = register_module("embed_tokens", TokenEmbedding(c.vocab_size, c.hidden_size, o));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_layers; ++i) layers->push_back(DecoderLayer(c, o));
  norm = register_module("norm", RMSNorm(c.hidden_size, c.norm_eps, o));
}

LlamaImpl::LlamaImpl(const ModelConfig& c, torch::Device device, bool init) : config_(c) {
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  model = register_module("model", LlamaBody(c, options));
  if (!c.tie_embeddings)
    lm_head = register_module("lm_head", Projection(c.hidden_size, c.vocab_size, options));
  if (init) InitWeights();
}

void LlamaImpl::InitWeights() {
  torch::NoGradGuard no_grad;
  for (auto& item : named_parameters()) {
    if (item.value().dim() >= 2) {
      item.value().normal_(0.0, 0.02);
    } else {
      item.value().fill_(1.0);
    }
  }
}

void LlamaImpl::SetActivationCheckpointing(bool on, bool replay_rng) {
  checkpointing_ = on;
  replay_rng_ = replay_rng;
}

std::pair<torch::Tensor, torch::Tensor> LlamaImpl::Rotary(int64_t seq_len,
                                                          const torch::Device& device,
                                                          at::ScalarType dtype) {
  const int64_t dim = config_.head_dim();
  auto options = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  // rope_theta and rope_scaling (linear, llama3) as transformers computes them: the config
  // loader refuses any scaling this does not implement.
  const std::vector<double> frequencies = RopeInverseFrequencies(config_);
  auto inv_freq =
      torch::tensor(frequencies, torch::TensorOptions().dtype(torch::kFloat64)).to(options);
  auto positions = torch::arange(seq_len, options);
  auto freqs = torch::outer(positions, inv_freq);
  auto emb = torch::cat({freqs, freqs}, -1);
  return {emb.cos().to(dtype).view({1, 1, seq_len, dim}),
          emb.sin().to(dtype).view({1, 1, seq_len, dim})};
}

torch::Tensor LlamaImpl::forward(const torch::Tensor& tokens) {
  auto h = model->embed_tokens(tokens);
  h = F::dropout(h, F::DropoutFuncOptions().p(config_.dropout).training(is_training()));
  auto [cos, sin] = Rotary(tokens.size(1), tokens.device(), h.scalar_type());
  const bool recompute = checkpointing_ && is_training() && torch::GradMode::is_enabled();
  for (const auto& layer : *model->layers) {
    if (!recompute) {
      h = layer->as<DecoderLayer>()->forward(h, cos, sin);
      continue;
    }
    auto state = c10::make_intrusive<RecomputeState>();
    state->layer = std::dynamic_pointer_cast<DecoderLayerImpl>(layer);
    state->replay_rng = replay_rng_;
    state->recomputed = recomputed_;
    const std::vector<torch::Tensor> params = state->layer->parameters();
    h = CheckpointedLayer::apply(state, h, cos, sin, at::TensorList(params));
  }
  h = model->norm(h);
  if (lm_head) return lm_head(h);
  return torch::matmul(h, model->embed_tokens->weight.t().to(h.scalar_type()));
}

torch::Tensor LlamaImpl::Loss(const torch::Tensor& tokens, const torch::Tensor& targets,
                              at::ScalarType* logits_dtype) {
  auto logits = forward(tokens);
  if (logits_dtype) *logits_dtype = logits.scalar_type();
  return torch::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}).to(torch::kFloat32),
                                   targets.reshape({-1}));
}

}  // namespace trainlock::validate
