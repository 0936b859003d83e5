// `trainlock image generate`: the Containerfile, requirements.txt and image.json of a lock's
// target, from the templates in images/ (compiled in): Containerfile.in for cuda and rocm,
// cpu.Containerfile.in for cpu. Everything comes from the lock and the options, so the same
// inputs give byte-identical files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "compat/catalog.h"
#include "project/project.h"

namespace trainlock {

struct ImageOptions {
  std::string target;              // "cpu" | "cuda" | "rocm"
  int64_t source_date_epoch = -1;  // seconds; required (sets created and the apt snapshot)
  std::string source;              // org.opencontainers.image.source ("" allowed)
  std::string revision;            // org.opencontainers.image.revision ("" allowed)
  std::string image_ref;           // the name the image will be pushed as ("" allowed)
  // cpu: the trainlock-validate binary the image copies (its SHA-256 is recorded in a label
  // and image.json); "" = the one beside this trainlock. Ignored with build_validator.
  std::filesystem::path validator;
  // cpu: compile the validator in a builder stage from trainlock-src/ instead (slow; the GPU
  // targets always do).
  bool build_validator = false;
  const Catalog* catalog = nullptr;  // for the custom ops' architectures; null = built in
};

// The validator binary a cpu image copies when none is named: trainlock-validate beside the
// running trainlock, else on PATH; "" when there is none.
std::filesystem::path DefaultValidatorBinary();

// File name -> contents: "Containerfile", "requirements.txt", "image.json". Throws InputError
// naming the lock for a missing target, an unpinned base, a torch version without a build tag
// (+cu130, +rocm6.3) on a GPU target, a Python closure the lock has not resolved (with the
// command that resolves it), a custom op with neither pinned sources nor a pinned library, or
// no SOURCE_DATE_EPOCH.
std::map<std::string, std::string> GenerateImage(const Project& project,
                                                 const ImageOptions& options);

// Replaces every @KEY@ of `text` with values[KEY]; throws std::invalid_argument naming the
// first placeholder without a value.
std::string FillTemplate(const std::string& text, const std::map<std::string, std::string>& values);

}  // namespace trainlock
