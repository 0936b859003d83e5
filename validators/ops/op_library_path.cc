// Custom-op library paths; see op_library_path.h.
#include "ops/op_library_path.h"

#include <exception>

#include "image/image_record.h"
#include "image/in_image_paths.h"

namespace trainlock::validate {
namespace fs = std::filesystem;

fs::path CustomOpLibraryPath(const Project& project, const CustomOpLibrary& lib) {
  if (fs::path(lib.library).is_absolute()) return lib.library;
  const fs::path record = kImageRecordInImage;
  std::error_code ec;
  if (fs::exists(record, ec)) {
    try {
      if (ReadImageRecord(record).lock_sha256 == project.lock->lock_build_sha256)
        return fs::path(kProjectInImage) / lib.library;
    } catch (const std::exception&) {
      // BindImage refuses a malformed record before any op is loaded.
    }
  }
  return project.dir / lib.library;
}

}  // namespace trainlock::validate
