// See mapped_file.h.
#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/failure.h"

namespace trainlock {

MappedFile::MappedFile(const std::filesystem::path& file, const MapLimits& limits) {
  const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (limits.follow_symlink ? 0 : O_NOFOLLOW);
  int fd = ::open(file.c_str(), flags);
  if (fd < 0 && errno == ELOOP)
    throw Failure(file.string() + ": a symlink; not followed", kExitBadInput);
  if (fd < 0)
    throw Failure(file.string() + ": cannot read: " + std::strerror(errno), kExitEnvironment);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) > limits.max_bytes) {
    ::close(fd);
    throw Failure(file.string() + (S_ISREG(st.st_mode) ? std::string(": ") + limits.too_large
                                                       : std::string(": not a regular file")),
                  kExitBadInput);
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data_ == MAP_FAILED) data_ = nullptr;
  }
  ::close(fd);
  if (size_ > 0 && !data_) throw Failure(file.string() + ": cannot map", kExitEnvironment);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace trainlock
