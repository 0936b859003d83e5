// The run one round trip trains (`trainlock.engine-spec/1`, docs/validate.md "The engine
// protocol"), as values and as the JSON file every engine process reads: the coordinator
// resolves it once from the lock and the training config, and no engine, the native worker
// included, reads the project itself. A checkpoint carries the spec it was trained from, so a
// process with nothing but the checkpoint rebuilds the same run (the portable role).
//
// Read without trusting it: a spec file sits in a work directory and a checkpoint's copy on
// whatever disk holds it. Every member is checked for type and range (run_config.h's ranges,
// the training config's own), and a problem names the member ("spec.training.optimizer.lr").
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "run/run_config.h"

namespace trainlock {

inline constexpr const char* kEngineSpecSchema = "trainlock.engine-spec/1";
inline constexpr uint64_t kMaxEngineSpecBytes = uint64_t{16} << 20;
// The most windows a data stream may hold (its shuffled order is 8 bytes a window): far more
// than any validation run trains on, far less than a crafted length could make it allocate.
inline constexpr uint64_t kMaxDataWindows = uint64_t{1} << 26;
inline constexpr int64_t kMaxEvalBatches = int64_t{1} << 20;

// A pinned file as an engine reads it: an absolute path, the lock's name for it (for a
// model's files, relative to the model's directory) and the lock's sha256 and size, which
// the reading process verifies on the bytes it reads.
struct SpecFile {
  std::string path;
  std::string name;
  std::string sha256;
  int64_t size = 0;
};

struct SpecData {
  std::string kind = "synthetic";  // "synthetic" | "shards"
  uint64_t seed = 0;               // synthetic: the token stream's seed
  uint64_t length = 0;             // synthetic: tokens in the stream
  std::vector<SpecFile> files;     // shards, in order
  int bytes_per_token = 0;         // shards: 2 or 4
};

struct EngineSpec {
  std::string engine;  // the trainer ("native", "ddp", ...)
  std::string lock_sha256;
  std::string config_sha256;  // the training config's bytes the coordinator read
  uint64_t seed = 0;
  int64_t eval_batches = 1;
  TrainConfig config;
  // The pinned weights and their files (each `name` relative to model_dir, `path` where that
  // name resolves, a symlink inside the project followed); empty: seeded initialisation.
  std::vector<SpecFile> model_files;
  std::string model_dir;  // absolute; "" when model_files is empty
  SpecData data;
};

// The spec file's form.
nlohmann::json EngineSpecJson(const EngineSpec& spec);

// The spec `spec` states; throws InputError naming `display` and the first member that is
// missing, mistyped or out of range.
EngineSpec ReadEngineSpec(const nlohmann::json& spec, const std::string& display);

// A spec file's bytes (`what`: "engine spec", "ops spec"), read as the process that uses it
// reads them: a regular file of at most kMaxEngineSpecBytes (the caller hashes them before
// trusting them; validators/support/pinned_files.h's ReadCoordinatorSpec does both). Throws
// InputError naming the file and `what`.
std::string ReadSpecFile(const std::filesystem::path& file, const std::string& what);
// ReadEngineSpec over a spec file's text, parsed with the JSON limits (base/json_file.h).
EngineSpec ParseEngineSpec(std::string_view text, const std::string& display);

}  // namespace trainlock
