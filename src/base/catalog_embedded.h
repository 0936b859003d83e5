// Files compiled into the binary by CMake (cmake/EmbedFiles.cmake): the catalog from
// lockfiles/compat and the image templates from images/.
#pragma once

#include <span>
#include <string_view>

namespace trainlock {

struct EmbeddedFile {
  std::string_view name;
  std::string_view contents;
};

std::span<const EmbeddedFile> EmbeddedCatalogFiles();

// images/*.Containerfile.in, for `trainlock image generate`.
std::span<const EmbeddedFile> EmbeddedImageTemplates();

}  // namespace trainlock
