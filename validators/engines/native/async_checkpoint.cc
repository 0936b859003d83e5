// The asynchronous checkpoint save; see async_checkpoint.h.
#include "engines/native/async_checkpoint.h"

#include "base/elapsed.h"
#include "base/failure.h"
#include "engines/native/host_staging.h"

#include <torch/cuda.h>

#include <utility>

namespace trainlock::validate {
namespace {

using Clock = std::chrono::steady_clock;

// Every tensor of a checkpoint, model first, in the order Start stages them.
std::vector<const torch::Tensor*> TensorsOf(const CheckpointContents& c) {
  std::vector<const torch::Tensor*> all;
  for (const NamedTensor& t : c.model) all.push_back(&t.tensor);
  for (const NamedTensor& t : c.optimizer) all.push_back(&t.tensor);
  return all;
}

// Whether `buffers` can take `tensors` one for one (same shapes and dtypes).
bool Matches(const std::vector<torch::Tensor>& buffers,
             const std::vector<const torch::Tensor*>& tensors) {
  if (buffers.size() != tensors.size()) return false;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].sizes() != tensors[i]->sizes() ||
        buffers[i].scalar_type() != tensors[i]->scalar_type())
      return false;
  }
  return true;
}

int64_t BytesOf(const std::vector<torch::Tensor>& buffers) {
  int64_t bytes = 0;
  for (const torch::Tensor& b : buffers) bytes += static_cast<int64_t>(b.nbytes());
  return bytes;
}

}  // namespace

AsyncCheckpointer::~AsyncCheckpointer() {
  try {
    if (writer_.valid()) writer_.wait();
    if (staging_alloc_.valid()) staging_alloc_.wait();
  } catch (...) {
    // A destructor reports nothing; Wait() is where failures surface.
  }
}

std::vector<torch::Tensor> AsyncCheckpointer::AllocateLike(const CheckpointContents& like) const {
  std::vector<torch::Tensor> shapes;
  bool on_cuda = false;
  for (const torch::Tensor* t : TensorsOf(like)) {
    shapes.push_back(*t);
    on_cuda = on_cuda || t->is_cuda();
  }
  // Pinned host memory lets the copy from the GPU run at the link's speed.
  return AllocateHostStaging(shapes, on_cuda);
}

void AsyncCheckpointer::Prepare(const CheckpointContents& like) {
  std::vector<torch::Tensor> shapes;  // metadata only: the allocation needs no live state
  for (const torch::Tensor* t : TensorsOf(like)) shapes.push_back(*t);
  CheckpointContents shaped;
  for (size_t i = 0; i < shapes.size(); ++i) shaped.model.push_back({"", shapes[i]});
  staging_alloc_ = std::async(std::launch::async, [this, shaped] {
    const auto start = Clock::now();
    std::vector<torch::Tensor> buffers = AllocateLike(shaped);
    times_.staging_alloc_s = SecondsSince(start);
    return buffers;
  });
}

std::vector<torch::Tensor> AsyncCheckpointer::TakeStaging(const CheckpointContents& contents) {
  const std::vector<const torch::Tensor*> tensors = TensorsOf(contents);
  times_.new_staging_bytes = 0;
  times_.staging_wait_s = 0;
  if (staging_alloc_.valid()) {
    const auto start = Clock::now();
    staging_ = staging_alloc_.get();
    times_.staging_wait_s = SecondsSince(start);
    times_.new_staging_bytes = BytesOf(staging_);  // Prepare's, made for this first save
  }
  if (!Matches(staging_, tensors)) {
    const auto start = Clock::now();
    staging_ = AllocateLike(contents);
    times_.staging_alloc_s = times_.staging_wait_s = SecondsSince(start);
    times_.new_staging_bytes = BytesOf(staging_);
  }
  return staging_;
}

void AsyncCheckpointer::Start(const std::filesystem::path& root, const CheckpointContents& contents,
                              int64_t keep_last) {
  if (writer_.valid())
    throw Failure("internal: a checkpoint write is still in flight", kExitEnvironment);
  started_ = Clock::now();
  std::vector<torch::Tensor> buffers = TakeStaging(contents);
  const std::vector<const torch::Tensor*> tensors = TensorsOf(contents);
  bool on_cuda = false;
  for (size_t i = 0; i < tensors.size(); ++i) {
    buffers[i].copy_(*tensors[i], /*non_blocking=*/true);
    on_cuda = on_cuda || tensors[i]->is_cuda();
  }
  if (on_cuda) torch::cuda::synchronize();  // the copies ran on the current stream
  CheckpointContents staged;
  staged.step = contents.step;
  staged.state = contents.state;
  size_t i = 0;
  for (const NamedTensor& t : contents.model) staged.model.push_back({t.name, buffers[i++]});
  for (const NamedTensor& t : contents.optimizer)
    staged.optimizer.push_back({t.name, buffers[i++]});
  times_.blocking_s = SecondsSince(started_);
  const auto started = started_;
  writer_ =
      std::async(std::launch::async, [root, staged = std::move(staged), keep_last, started, this] {
        CheckpointIo io = SaveCheckpoint(root, staged, keep_last);
        times_.durable_s = SecondsSince(started);
        return io;
      });
}

bool AsyncCheckpointer::Finished() const {
  return writer_.valid() && writer_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

CheckpointIo AsyncCheckpointer::Wait() {
  return writer_.get();
}

}  // namespace trainlock::validate
