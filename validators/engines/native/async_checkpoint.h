// Saving a checkpoint without holding training up for the write. Training is blocked only
// while the state is copied into staging buffers in host memory (pinned on CUDA, allocated in
// the background before the first save); the sharded write, the hashes, the fsyncs and the
// atomic rename (checkpoint.h's SaveCheckpoint, unchanged) run on a thread of their own while
// training goes on. A process killed during that write leaves no committed checkpoint, the
// same guarantee as a synchronous save: the directory is renamed into place only when every
// file is durable.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <optional>
#include <vector>

#include "engines/native/checkpoint.h"

namespace trainlock::validate {

struct AsyncSaveTimes {
  double blocking_s = 0;       // training held up: waiting for staging buffers + the copy
  double staging_wait_s = 0;   // of which: waiting for the buffers' allocation to finish
  double staging_alloc_s = 0;  // the allocation itself (in the background, once per process)
  double durable_s = 0;        // from the save's start to the committed rename
  // Staging memory this save allocated (pinned on CUDA): the whole state for a save that found
  // no buffers to reuse, 0 for one that copied into the buffers of an earlier save or Prepare.
  int64_t new_staging_bytes = 0;
};

class AsyncCheckpointer {
 public:
  AsyncCheckpointer() = default;
  ~AsyncCheckpointer();  // waits for a write still running
  AsyncCheckpointer(const AsyncCheckpointer&) = delete;
  AsyncCheckpointer& operator=(const AsyncCheckpointer&) = delete;

  // Starts allocating staging buffers shaped like `like`'s tensors, in the background (a
  // long run does this once, at its start).
  void Prepare(const CheckpointContents& like);

  // Copies `contents`' tensors into the staging buffers (the time training is blocked), then
  // writes them to ROOT/step-N on a background thread. Requires no write in flight.
  void Start(const std::filesystem::path& root, const CheckpointContents& contents,
             int64_t keep_last);

  bool in_flight() const { return writer_.valid(); }
  // True when the write in flight has finished (committed or failed); never blocks.
  bool Finished() const;
  // Waits for the write in flight; rethrows its failure (a CheckpointError or I/O error).
  CheckpointIo Wait();
  const AsyncSaveTimes& times() const { return times_; }

 private:
  std::vector<torch::Tensor> AllocateLike(const CheckpointContents& like) const;
  std::vector<torch::Tensor> TakeStaging(const CheckpointContents& contents);

  std::future<std::vector<torch::Tensor>> staging_alloc_;
  std::vector<torch::Tensor> staging_;
  std::future<CheckpointIo> writer_;
  std::chrono::steady_clock::time_point started_;
  AsyncSaveTimes times_;
};

}  // namespace trainlock::validate
