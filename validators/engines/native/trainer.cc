// The training step and its state; see trainer.h. AdamW is written out (as
// torch.optim.AdamW's single-tensor path computes it) so its state is explicit tensors that
// a checkpoint can hold and a test can compare bit for bit.
#include "engines/native/trainer.h"

#include <sys/resource.h>

#include <chrono>
#include <cmath>

#include "base/failure.h"
#include "support/torch_compat.h"

#if defined(TRAINLOCK_WITH_CUDA)
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif

namespace trainlock::validate {
namespace {

constexpr double kGrowthFactor = 2.0, kBackoffFactor = 0.5;
constexpr int64_t kGrowthInterval = 2000;

std::string ToHex(const torch::Tensor& bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  torch::Tensor c = bytes.contiguous();
  const uint8_t* p = c.data_ptr<uint8_t>();
  std::string out;
  out.reserve(static_cast<size_t>(c.numel()) * 2);
  for (int64_t i = 0; i < c.numel(); ++i) {
    out.push_back(kHex[p[i] >> 4]);
    out.push_back(kHex[p[i] & 0xf]);
  }
  return out;
}

torch::Tensor FromHex(const std::string& hex) {
  if (hex.size() % 2) throw Failure("RNG state: odd-length hex", kExitVerdict);
  torch::Tensor t = torch::empty({static_cast<int64_t>(hex.size() / 2)}, torch::kUInt8);
  uint8_t* p = t.data_ptr<uint8_t>();
  auto nibble = [](char c) -> uint8_t {
    if (c >= '0' && c <= '9') return static_cast<uint8_t>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<uint8_t>(c - 'a' + 10);
    throw Failure("RNG state: not hex", kExitVerdict);
  };
  for (size_t i = 0; i < hex.size() / 2; ++i) {
    p[i] = static_cast<uint8_t>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  }
  return t;
}

int64_t PeakRssBytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace

std::string TensorFingerprint(const torch::Tensor& t) {
  torch::NoGradGuard no_grad;
  torch::Tensor flat = t.detach().contiguous().view({-1});
  at::ScalarType as = flat.element_size() == 8   ? torch::kLong
                      : flat.element_size() == 4 ? torch::kInt
                      : flat.element_size() == 2 ? torch::kShort
                                                 : torch::kByte;
  torch::Tensor bits = flat.view(as).to(torch::kLong);
  torch::Tensor position = torch::arange(bits.numel(), bits.options());
  // Odd multipliers keep every position's weight invertible mod 2^64.
  const int64_t offset = 0x7F4A7C15, multiplier = 0x9E3779B1, base = 0x632BE5AB;
  torch::Tensor weighted = (bits + offset) * (position * multiplier + base);
  const int64_t sum = weighted.sum().item().toLong();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(sum));
  return buf;
}

bool IsOutOfMemory(const std::exception& e) {
#if TORCH_VERSION_MAJOR >= 2
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) return true;
#endif
  std::string what = e.what();
  return what.find("out of memory") != std::string::npos ||
         what.find("Out of memory") != std::string::npos;
}

Trainer::Trainer(const TrainConfig& config, const TrainerOptions& options,
                 std::unique_ptr<TokenSource> data)
    : config_(config), options_(options), data_(std::move(data)) {
  const TrainingConfig& t = config_.training;
  const bool cuda = options_.device.is_cuda();
  autocast_ = cuda && t.precision != "fp32";
  autocast_dtype_ = t.precision == "bf16" ? at::kBFloat16 : at::kHalf;
  scaling_ = cuda && t.precision == "fp16";
  int64_t eval_windows = std::max<int64_t>(1, options_.eval_batches) * t.micro_batch;
  loader_ = std::make_unique<WindowLoader>(*data_, t.seq_len, t.micro_batch, options_.seed,
                                           t.shuffle, eval_windows);
  model_ = Llama(config_.model, options_.device, /*init=*/false);
  torch::manual_seed(options_.seed);  // seeds every device's generator too
  model_->InitWeights();
  model_->train();
  model_->SetActivationCheckpointing(t.activation_checkpointing, options_.recompute_replays_rng);
  for (auto& item : model_->named_parameters()) {
    params_.emplace_back(item.key(), item.value());
    exp_avg_.push_back(torch::zeros_like(item.value()));
    exp_avg_sq_.push_back(torch::zeros_like(item.value()));
  }
}

torch::Tensor Trainer::ToDevice(const std::vector<int64_t>& values, int64_t rows,
                                int64_t cols) const {
  return torch::from_blob(const_cast<int64_t*>(values.data()), {rows, cols}, torch::kLong)
      .to(options_.device);
}

double Trainer::LearningRate() const {
  const OptimizerConfig& o = config_.training.optimizer;
  const SchedulerConfig& s = config_.training.scheduler;
  if (s.warmup_steps > 0 && step_ < s.warmup_steps) {
    return o.lr * static_cast<double>(step_ + 1) / static_cast<double>(s.warmup_steps);
  }
  if (s.name == "constant") return o.lr;
  double span = static_cast<double>(std::max<int64_t>(1, s.total_steps - s.warmup_steps));
  double progress = std::min(1.0, static_cast<double>(step_ - s.warmup_steps) / span);
  return s.min_lr + 0.5 * (o.lr - s.min_lr) * (1.0 + std::cos(M_PI * progress));
}

double Trainer::ForwardBackward() {
  const int64_t accum = config_.training.grad_accum;
  std::vector<torch::Tensor> losses;
  for (int64_t micro = 0; micro < accum; ++micro) {
    Batch batch = loader_->Next();
    torch::Tensor inputs = ToDevice(batch.inputs, batch.rows, batch.cols);
    torch::Tensor targets = ToDevice(batch.targets, batch.rows, batch.cols);
    if (autocast_) SetCudaAutocast(true, autocast_dtype_);
    torch::Tensor loss = model_->Loss(inputs, targets, &logits_dtype_);
    if (autocast_) SetCudaAutocast(false, autocast_dtype_);
    losses.push_back(loss.detach());
    torch::Tensor scaled = loss / static_cast<double>(accum);
    if (scaling_) scaled = scaled * loss_scale_;
    scaled.backward();
  }
  // Read the losses once, after all the work is queued: no device sync between micro-batches.
  double total = 0;
  for (const torch::Tensor& l : losses) total += l.item<double>();
  return total / static_cast<double>(accum);
}

// Total-norm gradient clipping with multi-tensor kernels and no host sync, as
// torch.nn.utils.clip_grad_norm_ does in Python.
static void ClipGradNorm(const std::vector<torch::Tensor>& params, double max_norm) {
  std::vector<torch::Tensor> grads;
  for (const torch::Tensor& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return;
  std::vector<torch::Tensor> norms = at::_foreach_norm(grads, 2);
  torch::Tensor total =
      torch::linalg_vector_norm(torch::stack(norms), 2, c10::nullopt, false, c10::nullopt);
  torch::Tensor coef = torch::clamp_max(max_norm / (total + 1e-6), 1.0);
#if TORCH_VERSION_MAJOR >= 2
  at::_foreach_mul_(grads, coef);  // the Tensor-scalar overload exists from 2.1
#else
  for (torch::Tensor& g : grads) g.mul_(coef);
#endif
}

bool Trainer::ApplyOptimizer() {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> params;
  for (auto& [name, p] : params_) params.push_back(p);
  if (scaling_) {
    // Unscale, and skip the step (halving the scale) when any gradient overflowed.
    bool found_inf = false;
    for (auto& p : params) {
      if (!p.grad().defined()) continue;
      p.grad().mul_(1.0 / loss_scale_);
      found_inf = found_inf || !torch::isfinite(p.grad()).all().item<bool>();
    }
    if (found_inf) {
      loss_scale_ *= kBackoffFactor;
      growth_tracker_ = 0;
      return false;
    }
    if (++growth_tracker_ == kGrowthInterval) {
      loss_scale_ *= kGrowthFactor;
      growth_tracker_ = 0;
    }
  }
  if (config_.training.grad_clip > 0) ClipGradNorm(params, config_.training.grad_clip);
  const OptimizerConfig& o = config_.training.optimizer;
  const double lr = LearningRate();
  const double t = static_cast<double>(step_ + 1);
  const double bias1 = 1.0 - std::pow(o.beta1, t);
  const double bias2_sqrt = std::sqrt(1.0 - std::pow(o.beta2, t));
  std::vector<torch::Tensor> p, g, m, v;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].grad().defined()) continue;
    p.push_back(params[i]);
    g.push_back(params[i].grad());
    m.push_back(exp_avg_[i]);
    v.push_back(exp_avg_sq_[i]);
  }
  // The fused kernel where torch has one (CUDA), as a run that asks torch.optim.AdamW for
  // fused=True gets; else multi-tensor (foreach) kernels, torch.optim.AdamW's GPU default.
  if (FusedAdamWStep(p, g, m, v, t, lr, o.beta1, o.beta2, o.weight_decay, o.eps)) return true;
  at::_foreach_mul_(p, 1.0 - lr * o.weight_decay);
  at::_foreach_mul_(m, o.beta1);
  at::_foreach_add_(m, g, 1.0 - o.beta1);
  at::_foreach_mul_(v, o.beta2);
  at::_foreach_addcmul_(v, g, g, 1.0 - o.beta2);
  std::vector<torch::Tensor> denom = at::_foreach_sqrt(v);
  at::_foreach_div_(denom, bias2_sqrt);
  at::_foreach_add_(denom, o.eps);
  at::_foreach_addcdiv_(p, m, denom, -lr / bias1);
  return true;
}

double Trainer::Step() {
  for (auto& [name, p] : params_) p.mutable_grad() = torch::Tensor();  // zero_grad(set_to_none)
  double loss = ForwardBackward();
  ApplyOptimizer();
  ++step_;
  return loss;
}

void Trainer::FlipLowestMantissaBit() {
  torch::NoGradGuard no_grad;
  torch::Tensor first = params_.front().second.view(-1).narrow(0, 0, 1);
  const auto bits = first.element_size() == 8   ? torch::kLong
                    : first.element_size() == 4 ? torch::kInt
                                                : torch::kShort;
  first.view(bits).bitwise_xor_(1);  // the same bytes, read as an integer: bit 0 is the mantissa's
}

void Trainer::ReleaseTrainingMemory() {
  for (auto& [name, p] : params_) p.mutable_grad() = torch::Tensor();
#if defined(TRAINLOCK_WITH_CUDA)
  if (options_.device.is_cuda()) {
    torch::cuda::synchronize(options_.device.index());
    c10::cuda::CUDACachingAllocator::emptyCache();
  }
#endif
}

DeviceMemory ReadDeviceMemory(const torch::Device& device) {
  DeviceMemory d;
#if defined(TRAINLOCK_WITH_CUDA)
  if (device.is_cuda()) {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    d.peak_allocated_bytes = stats.allocated_bytes[0].peak;  // [0]: StatType::AGGREGATE
    d.peak_reserved_bytes = stats.reserved_bytes[0].peak;
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      d.device_used_bytes = static_cast<int64_t>(total_bytes - free_bytes);
      d.device_total_bytes = static_cast<int64_t>(total_bytes);
    }
  }
#else
  (void)device;
#endif
  return d;
}

// A dtype in the config's words (fp32, bf16, fp16), so the observed shape compares with the
// config's `precision`; any other dtype by LibTorch's name.
std::string PrecisionName(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return "fp32";
    case at::kBFloat16:
      return "bf16";
    case at::kHalf:
      return "fp16";
    default:
      return c10::toString(type);
  }
}

double Trainer::MeasuredStep(StepMeasurement* m) {
  const bool cuda = options_.device.is_cuda();
  if (cuda) torch::cuda::synchronize();
#if defined(TRAINLOCK_WITH_CUDA)
  if (cuda) c10::cuda::CUDACachingAllocator::resetPeakStats(options_.device.index());
#endif
  auto start = std::chrono::steady_clock::now();
  const int64_t recomputed_before = model_->recomputed_layers();
  double loss = Step();
  if (cuda) torch::cuda::synchronize();
  DeviceMemory memory = ReadDeviceMemory(options_.device);
  m->peak_allocated_bytes = memory.peak_allocated_bytes;
  m->peak_reserved_bytes = memory.peak_reserved_bytes;
  m->device_used_bytes = memory.device_used_bytes;
  m->device_total_bytes = memory.device_total_bytes;
  m->step_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const TrainingConfig& t = config_.training;
  m->tokens = t.micro_batch * t.seq_len * t.grad_accum;
  m->tokens_per_s = static_cast<double>(m->tokens) / m->step_time_s;
  const ModelConfig& c = config_.model;
  // 6 N per token for the dense weights plus the causal attention score/value matmuls
  // (12 * layers * seq * hidden per token, halved by the causal mask), as PaLM counts MFU.
  // Matmul parameters: everything but the embedding lookup (a tied table still does the
  // output projection's matmul, so it counts once either way).
  double dense = 6.0 * static_cast<double>(c.ParameterCount() -
                                           (c.tie_embeddings ? 0 : c.vocab_size * c.hidden_size));
  double attention = 6.0 * static_cast<double>(c.num_layers * t.seq_len * c.hidden_size);
  m->flops = (dense + attention) * static_cast<double>(m->tokens);
  m->peak_rss_bytes = PeakRssBytes();
  m->param_dtype = PrecisionName(params_.front().second.scalar_type());
  m->activation_dtype = PrecisionName(logits_dtype_);
  m->activation_checkpointing = model_->recomputed_layers() > recomputed_before;
  return loss;
}

double Trainer::EvalLoss() {
  torch::NoGradGuard no_grad;
  nlohmann::json rng = RngState();
  model_->eval();
  double total = 0;
  for (int64_t i = 0; i < options_.eval_batches; ++i) {
    Batch batch = loader_->EvalBatch(i);
    if (autocast_) SetCudaAutocast(true, autocast_dtype_);
    torch::Tensor loss = model_->Loss(ToDevice(batch.inputs, batch.rows, batch.cols),
                                      ToDevice(batch.targets, batch.rows, batch.cols));
    if (autocast_) SetCudaAutocast(false, autocast_dtype_);
    total += loss.item<double>();
  }
  model_->train();
  SetRngState(rng);
  return total / static_cast<double>(std::max<int64_t>(1, options_.eval_batches));
}

nlohmann::json Trainer::RngState() const {
  nlohmann::json state = {{"cpu", ToHex(at::detail::getDefaultCPUGenerator().get_state())},
                          {"cuda", nlohmann::json::array()}};
  if (torch::cuda::is_available()) {
    for (int64_t i = 0; i < static_cast<int64_t>(torch::cuda::device_count()); ++i) {
      auto generator = at::globalContext().defaultGenerator(at::Device(at::kCUDA, i));
      state["cuda"].push_back(ToHex(generator.get_state()));
    }
  }
  return state;
}

void Trainer::SetRngState(const nlohmann::json& state) {
  at::Generator cpu = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    cpu.set_state(FromHex(state.at("cpu").get<std::string>()));
  }
  const auto& cuda = state.at("cuda");
  for (size_t i = 0; i < cuda.size(); ++i) {
    at::Generator generator =
        at::globalContext().defaultGenerator(at::Device(at::kCUDA, static_cast<int64_t>(i)));
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(FromHex(cuda[i].get<std::string>()));
  }
}

CheckpointContents Trainer::Capture() {
  CheckpointContents c;
  c.step = step_;
  for (size_t i = 0; i < params_.size(); ++i) {
    c.model.push_back({params_[i].first, params_[i].second});
    c.optimizer.push_back({params_[i].first + ".exp_avg", exp_avg_[i]});
    c.optimizer.push_back({params_[i].first + ".exp_avg_sq", exp_avg_sq_[i]});
  }
  c.state = options_.identity;
  c.state["rng"] = RngState();
  c.state["data_loader"] = loader_->State();
  c.state["scheduler"] = {
      {"name", config_.training.scheduler.name}, {"step", step_}, {"lr", LearningRate()}};
  c.state["optimizer"] = {{"name", "adamw"}, {"step", step_}};
  c.state["loss_scaler"] =
      scaling_ ? nlohmann::json{{"scale", loss_scale_}, {"growth_tracker", growth_tracker_}}
               : nlohmann::json(nullptr);
  return c;
}

void Trainer::Restore(const CheckpointContents& c, const RestoreOptions& options) {
  std::map<std::string, const torch::Tensor*> model, moments;
  for (const NamedTensor& t : c.model) model[t.name] = &t.tensor;
  for (const NamedTensor& t : c.optimizer) moments[t.name] = &t.tensor;
  auto take = [](std::map<std::string, const torch::Tensor*>& from, const std::string& name,
                 const torch::Tensor& into) {
    auto it = from.find(name);
    if (it == from.end()) throw CheckpointError("checkpoint lacks tensor '" + name + "'");
    if (it->second->sizes() != into.sizes() || it->second->scalar_type() != into.scalar_type()) {
      throw CheckpointError("checkpoint tensor '" + name +
                            "' has shape/dtype that differs from the model");
    }
    torch::NoGradGuard no_grad;
    into.copy_(*it->second);
  };
  for (size_t i = 0; i < params_.size(); ++i) {
    take(model, params_[i].first, params_[i].second);
    take(moments, params_[i].first + ".exp_avg", exp_avg_[i]);
    take(moments, params_[i].first + ".exp_avg_sq", exp_avg_sq_[i]);
  }
  step_ = c.step;
  if (c.state.contains("loss_scaler") && c.state["loss_scaler"].is_object()) {
    loss_scale_ = c.state["loss_scaler"].at("scale").get<double>();
    growth_tracker_ = c.state["loss_scaler"].at("growth_tracker").get<int64_t>();
  }
  if (options.data) loader_->Restore(c.state.at("data_loader"));
  if (options.rng) SetRngState(c.state.at("rng"));
}

std::vector<NamedTensor> Trainer::FinalState(bool on_device) {
  std::vector<NamedTensor> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::Device where = on_device ? options_.device : torch::Device(torch::kCPU);
    out.push_back({params_[i].first, params_[i].second.detach().to(where)});
    out.push_back({params_[i].first + ".exp_avg", exp_avg_[i].to(where)});
    out.push_back({params_[i].first + ".exp_avg_sq", exp_avg_sq_[i].to(where)});
  }
  return out;
}

}  // namespace trainlock::validate
