// Loading a Hugging Face model directory (config.json and *.safetensors, single or sharded
// with model.safetensors.index.json) into the reference decoder, refusing any disagreement
// in shape, dtype or name with a message that names the file and the tensor.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "llama.h"

namespace trainlock::validate {

class ModelLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LoadedWeights {
  std::vector<std::string> files;  // the safetensors files read
  int64_t tensors = 0;
  std::string dtypes;  // e.g. "BF16"
};

LoadedWeights LoadHfWeights(Llama& model, const std::filesystem::path& dir);

}  // namespace trainlock::validate
