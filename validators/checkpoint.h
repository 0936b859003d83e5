// Training checkpoints: a directory per step holding the parameters and optimizer moments as
// safetensors and a manifest.json with every file's SHA-256 and size, the step, the lock and
// config hashes, the torch version and the non-tensor state (RNG, scheduler, loss scaler,
// data loader), plus manifest.json.sha256 so the manifest itself is verified. Written
// atomically and verified completely before anything is loaded.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <vector>

#include "safetensors.h"

namespace trainlock::validate {

inline constexpr const char* kCheckpointFormat = "trainlock.checkpoint/v1";

// A checkpoint that cannot be trusted; what() names the file and the mismatch.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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
};

// Writes ROOT/step-<8 digits> atomically: files go to a hidden temporary directory, each is
// fsynced, the manifest is written last, the directory is renamed into place and ROOT is
// fsynced. Older complete checkpoints beyond `keep_last` and stale temporaries are removed.
CheckpointIo SaveCheckpoint(const std::filesystem::path& root, const CheckpointContents& contents,
                            int64_t keep_last);

// Verifies every file the manifest lists (present, size, SHA-256) and only then loads them.
// Throws CheckpointError naming the file and the mismatch.
CheckpointContents LoadCheckpoint(const std::filesystem::path& dir, CheckpointIo* io = nullptr);

// The newest complete checkpoint under ROOT (a step-* directory with a manifest), if any.
std::optional<std::filesystem::path> LatestCheckpoint(const std::filesystem::path& root);

}  // namespace trainlock::validate
