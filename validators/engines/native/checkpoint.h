// Training checkpoints: a directory per step holding the parameters and optimizer moments as
// safetensors and a manifest.json with every file's SHA-256 and size, the step, the lock and
// config hashes, the torch version and the non-tensor state (RNG, scheduler, loss scaler,
// data loader), plus manifest.json.sha256 so the manifest itself is verified. Written
// atomically and verified completely before anything is loaded.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "engines/native/checkpoint_manifest.h"
#include "engines/native/safetensors.h"

namespace trainlock::validate {

// Shard size for checkpoint files: small enough that a 1B model's state (15 GB) spreads over
// every I/O thread, large enough that the file count stays modest.
inline constexpr uint64_t kDefaultShardBytes = uint64_t{512} << 20;

struct CheckpointContents {
  int64_t step = 0;
  std::vector<NamedTensor> model;                   // parameters, by Hugging Face name
  std::vector<NamedTensor> optimizer;               // "<param>.exp_avg" and "<param>.exp_avg_sq"
  nlohmann::json state = nlohmann::json::object();  // everything that is not a tensor
};

struct CheckpointIo {
  std::filesystem::path dir;
  uint64_t bytes = 0;
  double seconds = 0;
  size_t files = 0;  // tensor files written or verified (shards), besides the manifest
};

// Writes ROOT/step-<8 digits> atomically: the model and optimizer tensors are cut into
// shards of about `shard_bytes` (model.safetensors, or model-00001-of-0000N.safetensors when
// there are several; the same for optimizer), written, hashed and fsynced in parallel into a
// hidden temporary directory; the manifest is written last, the directory is renamed into
// place and ROOT is fsynced. Older complete checkpoints beyond `keep_last` and stale
// temporaries are removed.
//
// `at_point`, when set, is called at each point of the save (support/engine_events.h,
// TRAINLOCK_SAVE_POINTS): before-files once the temporary directory exists, mid-file with part
// of the first shard written, after-files, after-metadata (manifest.json written; its hash, the
// commit record, not yet), after-commit (manifest.sha256 written, the directory renamed into
// place and ROOT fsynced; older checkpoints not yet pruned). A save held there
// (--hold-save-at) never returns.
using SavePointHook = std::function<void(const char* point)>;
CheckpointIo SaveCheckpoint(const std::filesystem::path& root, const CheckpointContents& contents,
                            int64_t keep_last, uint64_t shard_bytes = kDefaultShardBytes,
                            const SavePointHook& at_point = nullptr);

// The torn saves under ROOT, in name order: temporaries of a save that never committed
// (.step-<N>.tmp-*) and step directories without a manifest hash. A restore passes over them.
std::vector<std::filesystem::path> UncommittedCheckpoints(const std::filesystem::path& root);

// Verifies every file the manifest lists (present, size, SHA-256) while reading it, in
// parallel, and returns the tensors only when all of them verify. Throws CheckpointError
// naming the file and the mismatch (the first bad file in manifest order).
CheckpointContents LoadCheckpoint(const std::filesystem::path& dir, CheckpointIo* io = nullptr);

// The newest complete checkpoint under ROOT (a step-* directory with a manifest), if any.
std::optional<std::filesystem::path> LatestCheckpoint(const std::filesystem::path& root);

}  // namespace trainlock::validate
