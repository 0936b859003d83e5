// Project-relative paths: every path a manifest or lock names must stay inside the project.
#pragma once

#include <string>
#include <string_view>

namespace trainlock {

// Why `path` is not an acceptable project-relative path ("" when it is): absolute paths, '..'
// components, backslashes and control characters are refused.
std::string RelativePathProblem(std::string_view path);

// Why `path`, which an image build copies (the training config, a custom op's library and its
// sources), cannot be written into a Containerfile's COPY and RUN lines ("" when it can): only
// letters, digits and ". _ + - /", so that neither the Containerfile's own variable expansion
// nor a shell sees anything in it but a name.
std::string ImagePathProblem(std::string_view path);

}  // namespace trainlock
