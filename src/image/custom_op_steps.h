// The Containerfile steps that put a lock's custom-op libraries into an image, at the path the
// lock names (relative ones under /etc/trainlock/): a library with pinned sources
// ([[custom-ops]] source) is built in the builder stage with CMake for the target's
// architectures; a prebuilt one (its sha256 pinned) is copied from the build context.
// `trainlock image build` stages both under custom-ops/<index>/ after checking them against
// the lock.
#pragma once

#include <string>
#include <vector>

#include "project/lockfile.h"

namespace trainlock {

// Where library `lib` lives inside the image.
std::string CustomOpImagePath(const CustomOpLibrary& lib);

struct CustomOpSteps {
  std::string build;  // RUN steps for the builder stage ("" when no library has sources)
  std::string copy;   // COPY steps for the final stage
};

// `target` is cpu, cuda or rocm; `archs` the target's architectures (empty for cpu). Throws
// InputError naming `lock_path` for a library with neither pinned sources nor a pinned hash.
CustomOpSteps CustomOpStepsFor(const Lockfile& lock, const std::string& lock_path,
                               const std::string& target, const std::vector<std::string>& archs);

}  // namespace trainlock
