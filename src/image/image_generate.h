// `trainlock image generate`: the Containerfile and requirements.txt of a lock's target,
// from the templates in images/ (compiled in). Everything comes from the lock and the
// options, so the same inputs give byte-identical files.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "project/project.h"

namespace trainlock {

struct ImageOptions {
  std::string target;              // "cuda" | "rocm"
  int64_t source_date_epoch = -1;  // seconds; required (sets created and the apt snapshot)
  std::string source;              // org.opencontainers.image.source ("" allowed)
  std::string revision;            // org.opencontainers.image.revision ("" allowed)
  std::string image_ref;           // the name the image will be pushed as ("" allowed)
};

// File name -> contents. Throws InputError naming the lock for a missing target, an unpinned
// base, a torch version without a local build tag (+cu130, +rocm6.3) or no SOURCE_DATE_EPOCH.
std::map<std::string, std::string> GenerateImage(const Project& project,
                                                 const ImageOptions& options);

// Replaces every @KEY@ of `text` with values[KEY]; throws std::invalid_argument naming the
// first placeholder without a value.
std::string FillTemplate(const std::string& text, const std::map<std::string, std::string>& values);

}  // namespace trainlock
