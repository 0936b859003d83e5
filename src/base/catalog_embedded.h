// Files compiled into the binary by CMake (cmake/EmbedFiles.cmake): the catalog from
// lockfiles/compat, the image templates from images/ and the Python engines.
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

// validators/engines/python's package, named by path ("trainlock_engine/__main__.py"), for
// project/round_trip_engines.h.
std::span<const EmbeddedFile> EmbeddedPythonEngineFiles();

}  // namespace trainlock
