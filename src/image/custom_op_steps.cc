// Custom-op Containerfile steps; see custom_op_steps.h.
#include "image/custom_op_steps.h"
#include "base/strings.h"

#include <filesystem>

#include "base/diagnostic.h"
#include "image/in_image_paths.h"

namespace trainlock {
namespace {

// The architectures as CMake options: the sample op library's names (examples/ops) and the
// standard CMake ones, so a project's own CMake can read either.
std::string ArchOptions(const std::string& target, const std::vector<std::string>& archs) {
  const std::string list = JoinStrings(archs, ";");
  if (target == "cuda") {
    return " \\\n        -DTRAINLOCK_OPS_CUDA_ARCHS=\"" + list + "\" -DTRAINLOCK_OPS_CUDA_PTX=\"" +
           (archs.empty() ? "" : archs.back()) + "\" -DCMAKE_CUDA_ARCHITECTURES=\"" + list + "\"";
  }
  if (target == "rocm") {
    return " \\\n        -DTRAINLOCK_OPS_HIP_ARCHS=\"" + list + "\" -DCMAKE_HIP_ARCHITECTURES=\"" +
           list + "\"";
  }
  return "";
}

}  // namespace

std::string CustomOpImagePath(const CustomOpLibrary& lib) {
  return std::filesystem::path(lib.library).is_absolute()
             ? lib.library
             : std::string(kProjectInImage) + "/" + lib.library;
}

CustomOpSteps CustomOpStepsFor(const Lockfile& lock, const std::string& lock_path,
                               const std::string& target, const std::vector<std::string>& archs) {
  CustomOpSteps steps;
  for (size_t i = 0; i < lock.custom_ops.size(); ++i) {
    const CustomOpLibrary& lib = lock.custom_ops[i];
    const std::string dir = "custom-ops/" + std::to_string(i);
    const std::string file = std::filesystem::path(lib.library).filename().string();
    const std::string dest = CustomOpImagePath(lib);
    if (!lib.source.empty()) {
      steps.build += "# " + lib.library + " from its pinned sources (" + lib.source + ", sha256 " +
                     lib.source_sha256.substr(0, 12) + "...).\n";
      steps.build += "COPY " + dir + "/ /src/" + dir + "/\n";
      // The library's name and path are single-quoted in the shell (and were checked against
      // project_path.h's ImagePathProblem when the lock was read).
      steps.build += "RUN cmake -S /src/" + dir + " -B /build/" + dir +
                     " -G Ninja -DCMAKE_BUILD_TYPE=Release \\\n"
                     "        -DCMAKE_PREFIX_PATH=\"$(python3 -c 'import torch; "
                     "print(torch.utils.cmake_prefix_path)' 2>/dev/null)\"" +
                     ArchOptions(target, archs) + " && \\\n    cmake --build /build/" + dir +
                     " && \\\n    built=\"$(find /build/" + dir + " -name " +
                     SingleQuotedForShell(file) +
                     " -type f -print -quit)\" && \\\n    { [ -n \"$built\" ] || { echo " +
                     SingleQuotedForShell(dir + " built no " + file) +
                     " >&2; exit 1; }; } && \\\n    install -D -m 0755 \"$built\" " +
                     SingleQuotedForShell("/out" + dest) + "\n";
    } else if (!lib.sha256.empty()) {
      steps.copy += "# " + lib.library + ", the prebuilt library the lock pins (sha256 " +
                    lib.sha256.substr(0, 12) + "...).\nCOPY " + dir + "/" + file + " " + dest +
                    "\n";
    } else {
      throw InputError(Diagnostic{
          lock_path, lock.Pos("custom-ops"),
          "custom op library " + lib.library + " has neither pinned sources nor a pinned file",
          "name its CMake project in [[custom-ops]] source = \"...\", or build the library "
          "into the project before `trainlock lock` so that the lock pins its sha256"});
    }
  }
  if (!steps.build.empty()) steps.copy = "COPY --from=builder /out/ /\n" + steps.copy;
  return steps;
}

}  // namespace trainlock
