// Loading a Hugging Face model directory (config.json and *.safetensors, single or sharded
// with model.safetensors.index.json) into the reference decoder, refusing any disagreement
// in shape, dtype or name with a message that names the file and the tensor.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "engines/native/llama.h"

namespace trainlock::validate {

// A model directory that does not fit the training config (a shape, dtype or name). RunWorker
// (worker/worker.cc) catches it by name: the worker's error kind "model".
class ModelLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LoadedWeights {
  std::vector<std::string> files;  // the safetensors files read
  int64_t tensors = 0;
  std::string dtypes;  // e.g. "BF16"
};

// The files of `dir` a load may read: the lock's pinned ones, each with the lock's sha256,
// which the load verifies on the bytes it reads (support/pinned_files.h; "" = no hash to
// compare). nullopt reads every file of the directory (a model directory given directly,
// without a lock) and verifies nothing.
using PinnedNames = std::optional<std::map<std::string, std::string>>;

// Loads config.json (checked against the model's config) and the weights; every pinned file
// read is hashed in the same pass and a mismatch with the lock throws ArtifactMismatch before
// its bytes are used. Only pinned files
// are read: a *.safetensors file the lock does not pin is ignored, and an index (itself
// pinned) naming a shard the lock does not pin is refused.
LoadedWeights LoadHfWeights(Llama& model, const std::filesystem::path& dir,
                            const PinnedNames& pinned = std::nullopt);

}  // namespace trainlock::validate
