// See scratch_dir.h.
#include "base/scratch_dir.h"

#include <stdlib.h>

namespace trainlock {

namespace fs = std::filesystem;

ScratchDir::ScratchDir(const std::string& prefix) {
  std::error_code ec;
  const fs::path base = fs::temp_directory_path(ec);
  std::string templ = ((ec ? fs::path("/tmp") : base) / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(templ.data())) path_ = templ;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!path_.empty()) fs::remove_all(path_, ec);
}

}  // namespace trainlock
