// Whole-file reads and atomic writes; see file_io.h.
#include "base/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "base/diagnostic.h"

namespace trainlock {

std::string ReadInputFile(const std::filesystem::path& file, const std::string& display) {
  std::error_code ec;
  auto fail = [&](std::string why) {
    throw InputError(Diagnostic{display, {}, std::move(why), {}});
  };
  auto status = std::filesystem::status(file, ec);
  if (ec || !std::filesystem::exists(status)) fail("cannot read: no such file");
  if (std::filesystem::is_directory(status)) fail("cannot read: is a directory");
  auto size = std::filesystem::file_size(file, ec);
  if (!ec && size > kMaxInputFileBytes) {
    fail("file is " + std::to_string(size) + " bytes; refusing inputs over " +
         std::to_string(kMaxInputFileBytes) + " bytes");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(std::string("cannot read: ") + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

static void FsyncPath(const std::filesystem::path& path, int flags) {
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) throw std::runtime_error(path.string() + ": open: " + std::strerror(errno));
  int rc = ::fsync(fd);
  int saved = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error(path.string() + ": fsync: " + std::strerror(saved));
}

void WriteFileAtomically(const std::filesystem::path& file, std::string_view data) {
  std::filesystem::path dir = file.parent_path().empty() ? "." : file.parent_path();
  std::filesystem::path tmp =
      dir / ("." + file.filename().string() + ".tmp." + std::to_string(::getpid()));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(tmp.string() + ": create: " + std::strerror(errno));
  size_t written = 0;
  while (written < data.size()) {
    ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error(tmp.string() + ": write: " + std::strerror(saved));
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int saved = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(tmp.string() + ": fsync: " + std::strerror(saved));
  }
  if (::rename(tmp.c_str(), file.c_str()) != 0) {
    int saved = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(file.string() + ": rename: " + std::strerror(saved));
  }
  FsyncPath(dir, O_RDONLY | O_DIRECTORY);
}

}  // namespace trainlock
