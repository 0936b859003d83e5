// A checkpoint's manifest.json read without trusting it (and without LibTorch, so that the
// fuzz build exercises it): {"format", "step", "files": [{"path", "role", "sha256", "size"}],
// "state": {...}}. A checkpoint directory is only as trustworthy as the disk it sits on, and
// the manifest's own SHA-256 beside it can be rewritten along with it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace trainlock::validate {

// v2 shards the tensors and gives each file a role; v1 (one model.safetensors and one
// optimizer.safetensors, no roles) is still read.
inline constexpr const char* kCheckpointFormat = "trainlock.checkpoint/v2";
inline constexpr const char* kCheckpointFormatV1 = "trainlock.checkpoint/v1";

// A checkpoint directory's manifest, and the file beside it holding the manifest's SHA-256 as
// `sha256sum` writes it (`HASH  manifest.json`), so that a damaged manifest is refused too and
// `sha256sum -c manifest.json.sha256` in the directory checks it with a standard tool.
inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kManifestHashFile = "manifest.json.sha256";
// A manifest larger than this is not one the validator wrote (its state is a few kilobytes).
inline constexpr uint64_t kMaxManifestBytes = uint64_t{64} << 20;

// The two roles of a checkpoint's tensor files.
inline constexpr const char* kModelRole = "model";
inline constexpr const char* kOptimizerRole = "optimizer";

// A checkpoint that cannot be trusted; what() names the file and the mismatch.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One tensor file the manifest lists.
struct CheckpointFile {
  std::string path;  // a plain file name inside the checkpoint directory
  std::string role;  // "model" or "optimizer"
  std::string sha256;
  uint64_t size = 0;
};

struct CheckpointManifest {
  int64_t step = 0;
  std::vector<CheckpointFile> files;                // in manifest order
  nlohmann::json state = nlohmann::json::object();  // everything that is not a tensor
};

// Parses manifest.json's text (`where` names it in errors). Refuses, with CheckpointError:
// JSON beyond base/json_limits.h's limits, an unknown format, a step that is not a
// non-negative integer, state that is not an object, and a file entry whose path is not a
// plain file name, is listed twice, has no known role (an entry without one, as in v1, takes the
// name's stem), a sha256 that is not 64 lower-case hex or a size that is not a non-negative
// integer; and a manifest without both model and optimizer files.
CheckpointManifest ParseCheckpointManifest(std::string_view text, const std::string& where);

// The hash manifest.json.sha256's text states for manifest.json: exactly one line `HASH
// manifest.json` (sha256sum's text form), `HASH *manifest.json` (its binary form) or a bare
// `HASH` (checkpoints written before the file name was added). A line naming another file is
// refused, and so is a second line: the hash would not be the manifest's, and `sha256sum -c`
// would check that other file instead. Throws CheckpointError naming `where`.
std::string ManifestHashOf(std::string_view hash_text, const std::string& where);

}  // namespace trainlock::validate
