// What differs between two images held as OCI layout directories, said the way a person looks
// for it: first the fields of the images' configuration (image.json: env, entrypoint, labels,
// created, history, rootfs), then, layer by layer, the files whose bytes, kind, mode, owner or
// modification time differ, and those only one side has. `image build --check` prints it when
// a rebuild does not give the digest the lock records (image_build.cc).
//
// Both directories may come from a registry, so they are read as untrusted: index.json, the
// manifest and the config through the JSON limits (json_file.h) and kMaxLayoutJsonBytes each,
// blobs only as regular files named by a well-formed sha256 digest inside blobs/sha256 (no
// symlink followed), layers through layer_listing.h's bounded reader within a budget shared by
// the comparison. Memory stays bounded whatever the images hold: the configurations are
// compared side by side (never flattened whole), at most kMaxConfigLeaves leaves, and the lines
// past the cut are counted, not kept; two layer listings at a time, each capped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "image/layer_listing.h"

namespace trainlock {

inline constexpr uint64_t kMaxLayoutJsonBytes = uint64_t{4} << 20;  // index, manifest, config
inline constexpr size_t kMaxConfigLeaves = 1'000'000;               // both configs together
// All the layers one comparison reads, uncompressed, both sides together: at about 3.5 s per
// GiB (gunzip and SHA-256), a bound of about four minutes on the reading.
inline constexpr uint64_t kMaxComparedLayerBytes = uint64_t{64} << 30;

// The bounds of one comparison.
struct DifferenceLimits {
  size_t max_lines = 40;
  uint64_t layer_bytes = kMaxLayerBytes;  // one layer, uncompressed
  uint64_t all_layers_bytes = kMaxComparedLayerBytes;
};

// One image of an OCI layout: its configuration and its layer blobs, bottom first.
struct OciLayoutImage {
  nlohmann::json config;
  std::vector<std::filesystem::path> layers;
  std::vector<std::string> layer_digests;
};

// The single image of the layout at `dir` (its index.json's first manifest). Failure (exit 3)
// naming the file when something is missing, malformed or outside the layout.
OciLayoutImage ReadOciLayout(const std::filesystem::path& dir);

// "image.json <field>: <recorded> -> <rebuilt>" for each configuration field (a JSON path such
// as config.Env[2] or history[4].created_by) whose value differs or exists on one side only:
// the first `max_lines`, and in `*more` (when given) how many more there are. Failure (exit 3)
// past kMaxConfigLeaves leaves.
std::vector<std::string> DiffImageConfigs(const nlohmann::json& recorded,
                                          const nlohmann::json& rebuilt,
                                          size_t max_lines = SIZE_MAX, size_t* more = nullptr);

// "<path>: <what differs>" for each entry of two listings of the same layer: "content
// (sha256 X -> Y)", "mode 0644 -> 0755", "mtime A -> B", "owner 0:0 -> 1000:1000", "kind",
// "link target", "only in the recorded image", "only in the rebuild".
std::vector<std::string> DiffLayerListings(const LayerListing& recorded,
                                           const LayerListing& rebuilt);

// Everything above for two layouts, at most `limits.max_lines` lines (the last says how many
// more there were); layers whose digests agree are not read, and none once the cut is passed.
// Failure (exit 3) past a limit, naming it.
std::vector<std::string> DescribeImageDifference(const std::filesystem::path& recorded,
                                                 const std::filesystem::path& rebuilt,
                                                 const DifferenceLimits& limits);
inline std::vector<std::string> DescribeImageDifference(const std::filesystem::path& recorded,
                                                        const std::filesystem::path& rebuilt,
                                                        size_t max_lines) {
  return DescribeImageDifference(recorded, rebuilt, DifferenceLimits{max_lines});
}

}  // namespace trainlock
