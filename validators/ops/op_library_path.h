// Where a custom-op library of the lock is loaded from, by the ops worker and by the node's
// checks alike: an absolute path as it is; a relative one under the image's project directory
// (image/in_image_paths.h) inside an image built from this lock, else under the project.
#pragma once

#include <filesystem>

#include "project/project.h"

namespace trainlock::validate {

std::filesystem::path CustomOpLibraryPath(const Project& project, const CustomOpLibrary& lib);

}  // namespace trainlock::validate
