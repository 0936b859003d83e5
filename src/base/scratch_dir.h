// A fresh private temporary directory (mkdtemp under TMPDIR), removed with everything in it when
// the object goes: for files that are only read (a wheel's metadata) or that must not land in a
// project before its last refusal (a Hub file `init` checks first).
#pragma once

#include <filesystem>
#include <string>

namespace trainlock {

class ScratchDir {
 public:
  // `prefix` names the directory ("trainlock-wheels"); path() is empty when none could be
  // made (the caller decides whether it needed one).
  explicit ScratchDir(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace trainlock
