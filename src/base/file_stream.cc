// Streaming a pinned file; see file_stream.h.
#include "base/file_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/scoped_fd.h"

namespace trainlock {
namespace {

void RequireRegular(int fd, const std::filesystem::path& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw StreamError(path, std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw StreamError(path, "not a regular file");
}

}  // namespace

ScopedFd OpenRegularFile(const std::filesystem::path& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) throw StreamError(path, std::string("cannot open: ") + std::strerror(errno));
  RequireRegular(fd.get(), path);
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  return fd;
}

uint64_t StreamRegularFile(const std::filesystem::path& path,
                           const std::function<void(std::string_view)>& chunk, Deadline deadline) {
  ScopedFd fd = OpenRegularFile(path);
  return StreamDescriptor(fd.get(), path, chunk, deadline);
}

uint64_t StreamDescriptor(int fd, const std::filesystem::path& path,
                          const std::function<void(std::string_view)>& chunk, Deadline deadline) {
  RequireRegular(fd, path);
  std::vector<char> buffer(size_t{4} << 20);
  uint64_t total = 0;
  while (true) {
    if (std::chrono::steady_clock::now() > deadline)
      throw StreamError(path, "not read within the time limit (--timeout)");
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw StreamError(path, std::string("read error: ") + std::strerror(errno));
    if (n == 0) return total;
    chunk(std::string_view(buffer.data(), static_cast<size_t>(n)));
    total += static_cast<uint64_t>(n);
  }
}

}  // namespace trainlock
