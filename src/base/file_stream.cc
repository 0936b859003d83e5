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

// Opens without blocking (a FIFO with no writer would block a plain open) and refuses anything
// that is not a regular file before the first read.
int OpenRegular(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw StreamError(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw StreamError(path, "not a regular file");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace

uint64_t StreamRegularFile(const std::filesystem::path& path,
                           const std::function<void(std::string_view)>& chunk, Deadline deadline) {
  ScopedFd fd(OpenRegular(path));
  return StreamDescriptor(fd.get(), path, chunk, deadline);
}

uint64_t StreamDescriptor(int fd, const std::filesystem::path& path,
                          const std::function<void(std::string_view)>& chunk, Deadline deadline) {
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
