// The catalog files compiled into the binary; generated from lockfiles/compat by CMake
// (cmake/EmbedFiles.cmake).
#pragma once

#include <span>
#include <string_view>

namespace trainlock {

struct EmbeddedFile {
  std::string_view name;
  std::string_view contents;
};

std::span<const EmbeddedFile> EmbeddedCatalogFiles();

}  // namespace trainlock
