// comm.allreduce and comm.ddp over c10d; see collectives.h.
#include "comm/collectives.h"

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
// The process groups' headers need their libraries' headers; LibTorch holds the code.
#if __has_include(<gloo/algorithm.h>)
#define TRAINLOCK_HAVE_GLOO 1
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(TRAINLOCK_WITH_CUDA) && __has_include(<nccl.h>)
#define TRAINLOCK_HAVE_NCCL 1
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL 1
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/version.h>
#ifdef TRAINLOCK_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif
#include <unistd.h>

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <thread>

#include "comm/rank_store_native.h"
#include "report/check_metrics.h"
#include "report/pass_rules.h"

namespace trainlock::validate {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;
using StorePtr = c10::intrusive_ptr<c10d::Store>;
// torch 2.x splits process groups into backends; in 1.13 the Gloo and NCCL groups are
// ProcessGroups themselves. Both have allreduce(tensors) -> Work.
#if TORCH_VERSION_MAJOR >= 2
using GroupBase = c10d::Backend;
#else
using GroupBase = c10d::ProcessGroup;
#endif

// A failure of the distributed run as a whole, with the sentence both checks report.
struct CommFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// After a collective threw: which ranks are gone. Survivors mark themselves, wait a moment for
// the others to do the same, and name whoever did not.
std::string LostRanks(RankStore& store, const std::string& phase) {
  try {
    store.Publish("alive-" + phase, "1");
    std::string missing =
        store.Missing("alive-" + phase, RankStore::Clock::now() + std::chrono::seconds(3));
    return missing.empty() ? "" : missing + " lost during " + phase;
  } catch (const std::exception&) {
    return "rank 0 lost during " + phase + " (its rendezvous store is gone)";
  }
}

c10::intrusive_ptr<GroupBase> MakeGroup(const StorePtr& store, const CommOptions& o,
                                        const torch::Device& device) {
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("pg", store);
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(o.collective_timeout);
  if (device.is_cuda()) {
#ifdef TRAINLOCK_HAVE_NCCL
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, o.rank.rank, o.rank.world_size,
                                                       options);
#else
    throw CommFailure("this validator was built without NCCL: no CUDA collectives");
#endif
  }
#ifdef TRAINLOCK_HAVE_GLOO
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
  if (iface && *iface) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(iface));
  } else if (o.rank.master_addr == "127.0.0.1" || o.rank.master_addr == "localhost") {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else {
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  return c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, o.rank.rank, o.rank.world_size,
                                                     options);
#else
  throw CommFailure("this validator was built without Gloo: no CPU collectives");
#endif
}

// Waits for this rank's device: a rank on cuda:1 must not wait on cuda:0 (the current device),
// or it times nothing and may exit with its collectives still in flight.
void Synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

// The round trip that follows measures this device's memory: give back what the collectives'
// tensors left in the caching allocator.
void ReleaseCachedMemory(const torch::Device& device) {
#ifdef TRAINLOCK_WITH_CUDA
  if (device.is_cuda()) {
    Synchronize(device);
    c10::cuda::CUDACachingAllocator::emptyCache();
  }
#else
  (void)device;
#endif
}

void AllReduce(GroupBase& group, torch::Tensor& t, const CommOptions& o) {
  std::vector<torch::Tensor> tensors{t};
  auto work = group.allreduce(tensors);
  if (t.is_cuda()) {
    // NCCL: wait() orders the current stream after the collective without blocking the host,
    // as torch.distributed does; a wait with a timeout would poll on the host after every
    // call and measure the polling (20x slower at 1 MiB). Hangs are bounded by the process
    // group's own timeout (the NCCL watchdog), set to the collective timeout.
    work->wait();
  } else {
    work->wait(std::chrono::duration_cast<std::chrono::milliseconds>(o.collective_timeout));
  }
}

void MaybeDie(const CommOptions& o, const char* where) {
  if (o.fault_kill_rank == o.rank.rank) {
    std::fprintf(stderr, "trainlock-validate: fault injection: rank %d exits in %s\n", o.rank.rank,
                 where);
    std::fflush(stderr);
    ::_exit(1);
  }
}

struct SizeResult {
  int64_t bytes;
  int iterations;
  double seconds;  // per all-reduce
  double algbw_gbps;
  double busbw_gbps;
};

// The exact expected sum of the rank pattern: element i of rank r holds (r + 1) + i mod 7.
bool SumIsExact(const torch::Tensor& reduced, int world) {
  auto i = torch::arange(reduced.numel(), torch::TensorOptions().dtype(torch::kInt64));
  auto expected = (i.remainder(7) * world + world * (world + 1) / 2).to(torch::kFloat32);
  return torch::equal(reduced.to(torch::kCPU), expected);
}

CheckResult AllReduceCheck(GroupBase& group, const CommOptions& o, const torch::Device& device) {
  const auto start = Clock::now();
  const int world = o.rank.world_size;
  std::vector<AllreduceSize> table;
  bool exact = true;
  double peak_busbw = 0;
  for (int64_t bytes = int64_t{1} << 20; bytes <= o.max_bytes; bytes *= 2) {
    const int64_t n = bytes / 4;
    auto opts = torch::TensorOptions().dtype(torch::kFloat32).device(device);
    auto t =
        (torch::arange(n, opts.dtype(torch::kInt64)).remainder(7) + (o.rank.rank + 1)).to(opts);
    if (bytes == (int64_t{1} << 21)) MaybeDie(o, "all-reduce");
    if (o.fault_corrupt_rank == o.rank.rank) t[0].add_(1);
    AllReduce(group, t, o);
    Synchronize(device);
    exact = exact && SumIsExact(t, world);
    // Timing on zeros: repeated sums of the pattern would overflow.
    auto z = torch::zeros({n}, opts);
    AllReduce(group, z, o);  // warm-up
    const int iterations =
        static_cast<int>(std::clamp<int64_t>((int64_t{256} << 20) / bytes, 3, 20));
    Synchronize(device);
    const auto t0 = Clock::now();
    for (int k = 0; k < iterations; ++k) AllReduce(group, z, o);
    Synchronize(device);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count() / iterations;
    SizeResult r{bytes, iterations, seconds, bytes / seconds / 1e9,
                 BusBandwidth(static_cast<double>(bytes), seconds, world)};
    peak_busbw = std::max(peak_busbw, r.busbw_gbps);
    table.push_back({static_cast<int64_t>(r.bytes), static_cast<int64_t>(r.iterations),
                     r.seconds * 1e6, r.algbw_gbps, r.busbw_gbps});
  }
  const double duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  AllreduceMetrics m;
  m.world_size = world;
  m.backend = device.is_cuda() ? "nccl" : "gloo";
  m.dtype = "float32";
  m.sums_exact = exact;
  m.sizes = table;
  m.peak_busbw_gbps = peak_busbw;
  m.busbw_formula = "algbw x 2(n-1)/n (nccl-tests)";
  std::ostringstream s;
  s.precision(3);
  s << world << " ranks over " << (device.is_cuda() ? "NCCL" : "Gloo") << ": sums "
    << (exact ? "exact" : "WRONG") << " from 1 MiB to " << (o.max_bytes >> 20)
    << " MiB, peak busbw " << peak_busbw << " GB/s";
  if (o.busbw_threshold_gbps > 0) {
    m.threshold_gbps = o.busbw_threshold_gbps;
    m.threshold_source = o.threshold_source;
    s << " (threshold " << o.busbw_threshold_gbps << " for " << world << " x " << o.accelerator
      << ")";
  } else {
    s << " (no bandwidth threshold for " << (o.accelerator.empty() ? "CPU" : o.accelerator)
      << " at " << world << " ranks)";
  }
  CheckResult c = Judged("comm.allreduce", ToJson(m), s.str());  // wrong sums, slow bus: the rule
  c.duration_s = duration_s;
  return c;
}

// A tiny fp32 MLP: the check is about gradient averaging across ranks, not the project's model.
struct DdpProbeModel : torch::nn::Module {
  DdpProbeModel() {
    a = register_module("a", torch::nn::Linear(64, 256));
    b = register_module("b", torch::nn::Linear(256, 64));
  }
  torch::Tensor forward(const torch::Tensor& x) { return b(torch::gelu(a(x))); }
  torch::nn::Linear a{nullptr}, b{nullptr};
};

torch::Tensor FlatGrads(DdpProbeModel& m) {
  std::vector<torch::Tensor> grads;
  for (auto& p : m.parameters()) grads.push_back(p.grad().reshape({-1}));
  return torch::cat(grads);
}

torch::Tensor LocalGrads(DdpProbeModel& m, const torch::Tensor& x, const torch::Tensor& y) {
  m.zero_grad();
  torch::mse_loss(m.forward(x), y).backward();
  return FlatGrads(m);
}

CheckResult DdpCheck(GroupBase& group, const StorePtr& store, const CommOptions& o,
                     const torch::Device& device) {
  const auto start = Clock::now();
  const int world = o.rank.world_size, rank = o.rank.rank;
  constexpr int64_t kBatch = 16;
  constexpr double kRtol = 1e-5, kAtol = 1e-6;
  torch::manual_seed(20261130);
  auto x = torch::randn({world * kBatch, 64}).to(device);
  auto y = torch::randn({world * kBatch, 64}).to(device);
  torch::manual_seed(7);
  DdpProbeModel model;
  model.to(device);
  // Reference: one process over the union of every rank's batch (mean loss over all of it).
  torch::Tensor reference = LocalGrads(model, x, y).clone();
  // Data parallel: this rank's slice, gradients summed across ranks and divided by the count.
  auto local_x = x.narrow(0, rank * kBatch, kBatch), local_y = y.narrow(0, rank * kBatch, kBatch);
  torch::Tensor averaged = LocalGrads(model, local_x, local_y).clone();
  MaybeDie(o, "the DDP gradient all-reduce");
  if (o.fault_corrupt_rank == rank) averaged.add_(0.01);
  AllReduce(group, averaged, o);
  averaged.div_(world);
  Synchronize(device);
  const double max_abs = (averaged - reference).abs().max().item<double>();
  const bool close = torch::allclose(averaged, reference, kRtol, kAtol);
  // Step time per rank: forward, backward, gradient all-reduce, SGD update.
  torch::optim::SGD sgd(model.parameters(), torch::optim::SGDOptions(1e-3));
  constexpr int kSteps = 10;
  std::vector<double> times;
  for (int step = 0; step < kSteps; ++step) {
    Synchronize(device);
    const auto t0 = Clock::now();
    torch::Tensor g = LocalGrads(model, local_x, local_y);
    AllReduce(group, g, o);
    int64_t offset = 0;
    for (auto& p : model.parameters()) {
      p.mutable_grad().copy_(g.narrow(0, offset, p.numel()).view_as(p) / world);
      offset += p.numel();
    }
    sgd.step();
    Synchronize(device);
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  store->set(RankStoreKey("ddp-step", rank), StoreValue(std::to_string(median)));
  DdpMetrics m;
  m.world_size = world;
  m.batch_per_rank = kBatch;
  m.model = "fp32 MLP 64-256-64, MSE loss";
  m.max_abs_grad_diff = max_abs;
  m.rtol = kRtol;
  m.atol = kAtol;
  m.gradients_equal_within_tolerance = close;
  m.median_step_s = median;
  std::ostringstream s;
  s.precision(3);
  s << "averaged gradients of " << world << " ranks " << (close ? "equal" : "DIFFER FROM")
    << " the single-process gradients over the union batch (max abs diff " << max_abs << ", rtol "
    << kRtol << ")";
  if (rank == 0) {
    Json per_rank = Json::array();
    std::vector<double> medians;
    for (int r = 0; r < world; ++r) {
      store->wait({RankStoreKey("ddp-step", r)},
                  std::chrono::duration_cast<std::chrono::milliseconds>(o.collective_timeout));
      double t = std::stod(StoreText(store->get(RankStoreKey("ddp-step", r))));
      medians.push_back(t);
      DdpMetrics row;  // one rank's median step, under comm.ddp's names
      row.rank = r;
      row.median_step_s = t;
      per_rank.push_back(ToJson(row));
    }
    double spread = 1.0;
    const int straggler = StragglerRank(medians, o.straggler_margin, &spread);
    m.step_s_per_rank = per_rank;
    m.spread = spread;
    m.straggler_margin = o.straggler_margin;
    s << "; slowest rank's step " << std::fixed << std::setprecision(2) << spread << "x the median"
      << std::defaultfloat << std::setprecision(3);
    if (straggler >= 0) {
      m.straggler_rank = straggler;
      s << ": rank " << straggler << " is a straggler";
      if (!device.is_cuda()) s << " (CPU processes share cores: timing is not a node finding)";
    }
  }
  m.device = device.is_cuda() ? "cuda" : "cpu";
  CheckResult c = Judged("comm.ddp", ToJson(m), s.str());  // wrong gradients, a straggler: the rule
  c.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  return c;
}

}  // namespace

int StragglerRank(const std::vector<double>& medians, double margin, double* spread) {
  *spread = 1.0;
  if (medians.empty()) return -1;
  std::vector<double> sorted = medians;
  std::sort(sorted.begin(), sorted.end());
  const double mid = sorted[sorted.size() / 2];
  const auto slowest = std::max_element(medians.begin(), medians.end());
  if (mid > 0) *spread = *slowest / mid;
  return *spread > 1.0 + margin ? static_cast<int>(slowest - medians.begin()) : -1;
}

namespace {

CheckResult Failed(const std::string& id, const std::string& why, const CommOptions& o) {
  // The members comm.allreduce and comm.ddp share; nothing measured, so the rule fails it.
  AllreduceMetrics m;
  m.world_size = o.rank.world_size;
  m.rank = o.rank.rank;
  return Judged(id, ToJson(m), why,
                "check that every rank started, can reach " + o.rank.master_addr + ":" +
                    std::to_string(o.rank.master_port) +
                    ", and did not crash (see its stderr); a slow start needs a longer "
                    "--join-timeout");
}

}  // namespace

std::string CommDevice(const std::string& requested, int local_rank) {
  if (requested == "cpu" || !torch::cuda::is_available()) return "cpu";
  const int count = static_cast<int>(torch::cuda::device_count());
  return "cuda:" + std::to_string(local_rank % std::max(count, 1));
}

int VisibleAcceleratorCount() {
  return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

double BusBandwidth(double bytes, double seconds, int world_size) {
  if (seconds <= 0 || world_size < 1) return 0;
  return bytes / seconds / 1e9 * 2.0 * (world_size - 1) / world_size;
}

CommOutcome FailedCommChecks(const CommOptions& o, const std::string& why) {
  return {{Failed("comm.allreduce", why, o), Failed("comm.ddp", why, o)}};
}

CommOutcome RunCommChecks(const CommOptions& o, RankStore& rank_store) {
  CommOutcome out;
  const torch::Device device(o.device);
  const StorePtr store = NativeStore(rank_store);
  c10::intrusive_ptr<GroupBase> group;
  try {
    Synchronize(device);
    group = MakeGroup(store, o, device);
  } catch (const CommFailure& e) {  // this build has no backend for the device: says so itself
    return FailedCommChecks(o, e.what());
  } catch (const std::exception& e) {  // c10d's own errors: a store, a peer, the network
    return FailedCommChecks(o, std::string("cannot create the process group: ") + e.what());
  }
  for (const char* phase : {"all-reduce", "DDP"}) {
    try {
      out.checks.push_back(std::string(phase) == "all-reduce" ? AllReduceCheck(*group, o, device)
                                                              : DdpCheck(*group, store, o, device));
    } catch (const std::exception& e) {
      std::string lost = LostRanks(rank_store, phase);
      std::string first_line = e.what();
      first_line = first_line.substr(0, first_line.find('\n'));
      CheckResult c =
          Failed(std::string(phase) == "all-reduce" ? "comm.allreduce" : "comm.ddp",
                 lost.empty() ? std::string(phase) + " failed: " + first_line : lost, o);
      AllreduceMetrics error;  // comm.ddp's error member has the same name
      error.error = first_line;
      AddMetrics(&c.metrics, ToJson(error));
      out.checks.push_back(c);
      if (out.checks.size() == 1) {
        out.checks.push_back(Failed("comm.ddp", "not run: " + c.summary, o));
      }
      break;
    }
  }
  group.reset();
  ReleaseCachedMemory(device);
  return out;
}

}  // namespace trainlock::validate
