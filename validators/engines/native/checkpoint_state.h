// What a checkpoint's state says the run was (manifest.json's "state": the training config as
// YAML, the seed, the evaluation batches and the data description), read without trusting it
// and without LibTorch, so that the fuzz build exercises it. The state is written by the
// validator, but a checkpoint directory is only as trustworthy as the disk it sits on: every
// member is checked for type and range before the worker builds anything from it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "project/train_config.h"

namespace trainlock::validate {

// The most windows a data-loader may hold (its shuffled order is 8 bytes a window): far more
// than any validation run trains on, far less than a state's length could make it allocate.
inline constexpr uint64_t kMaxDataWindows = uint64_t{1} << 26;

struct CheckpointRunState {
  std::string config_yaml;
  TrainConfig config;
  uint64_t seed = 0;
  int64_t eval_batches = 1;
  nlohmann::json data;  // {"kind": "synthetic", "seed", "length"} or {"kind": "shards", ...}
};

// Why a state's data description cannot be one the validator wrote, or "": a token width
// other than 2 or 4 bytes (a zero would divide by zero), a synthetic length of more windows
// than kMaxDataWindows (a huge one would be allocated), files or hashes that are not strings.
std::string CheckpointDataProblem(const nlohmann::json& data, int64_t seq_len,
                                  int64_t eval_batches);

// The run `state` describes. Throws CheckpointError naming `manifest_path` and the member when
// one is missing, mistyped or out of range (the config as `check` would refuse it included);
// never a JSON library exception.
CheckpointRunState ReadCheckpointRunState(const nlohmann::json& state,
                                          const std::string& manifest_path);

}  // namespace trainlock::validate
