// Project-relative paths: every path a manifest or lock names must stay inside the project.
#pragma once

#include <string>
#include <string_view>

namespace trainlock {

// Why `path` is not an acceptable project-relative path ("" when it is): absolute paths, '..'
// components, backslashes and control characters are refused.
std::string RelativePathProblem(std::string_view path);

}  // namespace trainlock
