// Host memory for checkpoint staging; see host_staging.h.
#include "engines/native/host_staging.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>

#if defined(TRAINLOCK_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace trainlock::validate {
namespace {

constexpr size_t kAlignment = 4096;  // each tensor starts on a page of its own

size_t AlignUp(size_t n) {
  return (n + kAlignment - 1) / kAlignment * kAlignment;
}

// An anonymous mapping, unmapped (and unregistered) when the last tensor in it goes.
struct HostBlock {
  void* base = MAP_FAILED;
  size_t bytes = 0;
  bool registered = false;
  ~HostBlock() {
#if defined(TRAINLOCK_WITH_CUDA)
    if (registered) cudaHostUnregister(base);
#endif
    if (base != MAP_FAILED) ::munmap(base, bytes);
  }
};

// Faults every page in, a slice per thread: the kernel zeroes pages in parallel, where one
// thread (or cudaHostRegister on untouched memory) would do it serially.
void MakeResident(char* base, size_t bytes) {
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 1, 8);
  const size_t slice = AlignUp((bytes + threads - 1) / threads);
  std::vector<std::thread> workers;
  for (size_t at = 0; at < bytes; at += slice) {
    workers.emplace_back(
        [base, at, n = std::min(slice, bytes - at)] { std::memset(base + at, 0, n); });
  }
  for (std::thread& t : workers) t.join();
}

std::vector<torch::Tensor> FromTorchAllocator(const std::vector<torch::Tensor>& like, bool pin) {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& t : like)
    out.push_back(
        torch::empty(t.sizes(), torch::TensorOptions().dtype(t.scalar_type()).pinned_memory(pin)));
  return out;
}

}  // namespace

std::vector<torch::Tensor> AllocateHostStaging(const std::vector<torch::Tensor>& like, bool pin) {
#if !defined(TRAINLOCK_WITH_CUDA)
  if (pin) return FromTorchAllocator(like, pin);
#endif
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const torch::Tensor& t : like) {
    offsets.push_back(total);
    total += AlignUp(static_cast<size_t>(t.numel()) * t.element_size());
  }
  if (total == 0) return FromTorchAllocator(like, false);
  auto block = std::make_shared<HostBlock>();
  block->bytes = total;
  block->base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (block->base == MAP_FAILED) return FromTorchAllocator(like, pin);
  ::madvise(block->base, total, MADV_HUGEPAGE);  // fewer pages to fault and to lock
  MakeResident(static_cast<char*>(block->base), total);
#if defined(TRAINLOCK_WITH_CUDA)
  if (pin) {
    if (cudaHostRegister(block->base, total, cudaHostRegisterDefault) != cudaSuccess) {
      cudaGetLastError();  // clear it: the caller's next CUDA call must not see it
      return FromTorchAllocator(like, pin);
    }
    block->registered = true;
  }
#endif
  std::vector<torch::Tensor> out;
  for (size_t i = 0; i < like.size(); ++i) {
    out.push_back(torch::from_blob(
        static_cast<char*>(block->base) + offsets[i], like[i].sizes(), [block](void*) {},
        torch::TensorOptions().dtype(like[i].scalar_type())));
  }
  return out;
}

}  // namespace trainlock::validate
