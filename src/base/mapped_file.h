// A regular file mapped read-only, for readers of large binary files (GPU libraries, training
// states) that must not copy them. Hostile paths are normal: a FIFO or device is refused, never
// waited on; a symlink is refused when the caller asks (files in our own work directories).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

namespace trainlock {

struct MapLimits {
  uint64_t max_bytes = uint64_t{16} << 30;
  const char* too_large = "larger than the limit";  // the refusal's words after the size
  bool follow_symlink = true;
};

class MappedFile {
 public:
  // Throws Failure naming `file`: exit 3 when it cannot be opened or mapped, exit 2 when it is
  // not a regular file, is a symlink that `limits` refuses, or is over `limits.max_bytes`.
  MappedFile(const std::filesystem::path& file, const MapLimits& limits);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view view() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace trainlock
