// The report's `image`, measured rather than declared. Outside an image built by trainlock
// (no /etc/trainlock/image.json) the report names no image, whatever the environment says.
// Inside one, the image's record, lock and config are checked against the project being
// validated (and the running validator against the one the record names) before anything is
// trusted: then the job that pinned the image by digest may name it through
// TRAINLOCK_IMAGE_REF / TRAINLOCK_IMAGE_DIGEST (digest_source "environment": a claim, believed
// only because the image's own files are then verified against its record, image_python.h), or the
// host-side `trainlock validate
// --image` binds the digest its engine resolved after the run ("engine"). Relative custom-op
// libraries then resolve to the ones built into the image.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "project/project.h"

namespace trainlock::validate {

struct ImageBinding {
  bool in_image = false;  // an image record was found and agrees with the project
  std::optional<std::pair<std::string, std::string>> image;  // ref, digest
  std::string digest_source;                                 // "environment" when image is set
};

// `etc_dir` is where an image keeps its lock and record (kProjectInImage, image/in_image_paths.h);
// `self` the running validator binary. Throws InputError (exit 2) naming both sides when the
// image's lock, config or validator is not the project's (or the record disagrees with the image's
// own lock), and for a malformed TRAINLOCK_IMAGE_DIGEST.
ImageBinding BindImage(const std::filesystem::path& etc_dir, const Project& project,
                       const std::filesystem::path& self, const char* env_ref,
                       const char* env_digest);

}  // namespace trainlock::validate
