// Whole-file reads and atomic writes; see file_io.h.
#include "base/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "base/diagnostic.h"
#include "base/failure.h"
#include "base/safe_paths.h"
#include "base/scoped_fd.h"

namespace trainlock {

namespace {

[[noreturn]] void RefuseInputFile(const std::string& display, std::string why) {
  throw InputError(Diagnostic{display, {}, std::move(why), {}});
}

std::string CapText() {
  return "refusing inputs over " + std::to_string(kMaxInputFileBytes) + " bytes";
}

// Opens `file` for reading without blocking (a FIFO with no writer would block a plain open
// forever) and refuses anything but a regular file before the first read.
ScopedFd OpenRegularInput(const std::filesystem::path& file, const std::string& display) {
  ScopedFd fd(::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    RefuseInputFile(display, errno == ENOENT ? std::string("cannot read: no such file")
                                             : std::string("cannot read: ") + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    RefuseInputFile(display, std::string("cannot read: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) RefuseInputFile(display, "cannot read: is a directory");
  if (!S_ISREG(st.st_mode)) RefuseInputFile(display, "not a regular file");
  if (static_cast<uintmax_t>(st.st_size) > kMaxInputFileBytes)
    RefuseInputFile(display, "file is " + std::to_string(st.st_size) + " bytes; " + CapText());
  return fd;
}

}  // namespace

std::string ReadInputFile(const std::filesystem::path& file, const std::string& display) {
  ScopedFd fd = OpenRegularInput(file, display);
  // The cap holds while reading too: a /proc or /sys file says it has 0 bytes and may have any
  // number.
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) RefuseInputFile(display, std::string("cannot read: ") + std::strerror(errno));
    if (n == 0) return text;
    if (text.size() + static_cast<size_t>(n) > kMaxInputFileBytes)
      RefuseInputFile(display,
                      "more than " + std::to_string(kMaxInputFileBytes) + " bytes; " + CapText());
    text.append(buffer, static_cast<size_t>(n));
  }
}

static void FsyncPath(const std::filesystem::path& path, int flags) {
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) throw Failure(path.string() + ": open: " + std::strerror(errno), kExitEnvironment);
  int rc = ::fsync(fd);
  int saved = errno;
  ::close(fd);
  if (rc != 0) throw Failure(path.string() + ": fsync: " + std::strerror(saved), kExitEnvironment);
}

void WriteFileAtomically(const std::filesystem::path& file, std::string_view data) {
  std::filesystem::path dir = file.parent_path().empty() ? "." : file.parent_path();
  // A name nobody can predict, created exclusively: a symlink planted at a guessable temporary
  // name (".report.json.tmp.1" for a validator that is PID 1) cannot redirect the write.
  UniqueFile unique = CreateUniqueFile(dir, "." + file.filename().string() + ".tmp.", 0644);
  const std::filesystem::path tmp = unique.path;
  int fd = unique.fd.release();
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Failure(tmp.string() + ": write: " + std::strerror(saved), kExitEnvironment);
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int saved = errno;
    ::unlink(tmp.c_str());
    throw Failure(tmp.string() + ": fsync: " + std::strerror(saved), kExitEnvironment);
  }
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    int saved = errno;
    ::unlink(tmp.c_str());
    throw Failure(file.string() + ": rename: " + std::strerror(saved), kExitEnvironment);
  }
  FsyncPath(dir, O_RDONLY | O_DIRECTORY);
}

}  // namespace trainlock
