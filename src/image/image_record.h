// What an image built by trainlock says about its own build: /etc/trainlock/image.json, written
// by `trainlock image generate` into the build context and baked in. The validator checks it
// against the lock it runs with before the report may name an image digest (the digest itself
// cannot be inside the image it identifies: it comes from the engine or from the job that
// pinned the image).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "image/in_image_paths.h"

namespace trainlock {

inline constexpr const char* kImageRecordSchema = "trainlock.image/v1";

struct ImageRecord {
  std::string target;  // cpu | cuda | rocm
  std::string lock_sha256;
  std::string config_sha256;
  int64_t source_date_epoch = 0;
  std::string base;              // the digest-pinned base
  std::string validator_sha256;  // the validator copied in; "" when the image compiles it
  std::string ref;               // the name it was generated to be pushed as ("" unknown)

  nlohmann::json ToJson() const;
  // Throws InputError naming `display` when the document is not an image record.
  static ImageRecord FromJson(const nlohmann::json& j, const std::string& display);
};

// Reads an image record file (InputError for an unreadable or malformed one).
ImageRecord ReadImageRecord(const std::filesystem::path& file);

}  // namespace trainlock
