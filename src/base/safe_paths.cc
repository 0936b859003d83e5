// Unpredictable names, exclusive creation and symlink-free walks; see safe_paths.h.
#include "base/safe_paths.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "base/diagnostic.h"
#include "base/failure.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

constexpr int kAttempts = 100;

// Six characters from the kernel's random source; if that fails, the clock and a counter
// still make the name differ from any other run's, and O_EXCL keeps it safe either way.
std::string RandomSuffix() {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char bytes[6];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    static std::atomic<uint64_t> counter{0};
    uint64_t x =
        static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
        (counter++ << 40) ^ static_cast<uint64_t>(::getpid());
    for (unsigned char& b : bytes) {
      b = static_cast<unsigned char>(x);
      x = x * 6364136223846793005ull + 1442695040888963407ull;
    }
  }
  std::string out;
  for (unsigned char b : bytes) out.push_back(kChars[b % (sizeof kChars - 1)]);
  return out;
}

[[noreturn]] void RefuseUnsafePath(const fs::path& path, const std::string& why) {
  throw InputError(Diagnostic{path.string(), {}, why, {}});
}

constexpr const char* kSymlink =
    "is a symbolic link; trainlock never writes through one here (remove it)";

// Why `name` in `dir_fd` could not be opened, for a message.
std::string OpenProblem(int dir_fd, const std::string& name, int error) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) return kSymlink;
    if (!S_ISDIR(st.st_mode)) return "not a directory";
  }
  return std::string("cannot open: ") + std::strerror(error);
}

}  // namespace

fs::path CreateUniqueDirectory(const fs::path& parent, std::string_view prefix) {
  std::error_code ec;
  fs::create_directories(parent, ec);
  for (int i = 0; i < kAttempts; ++i) {
    const fs::path dir = parent / (std::string(prefix) + RandomSuffix());
    if (::mkdir(dir.c_str(), 0700) == 0) return dir;
    if (errno != EEXIST)
      throw Failure(dir.string() + ": cannot create: " + std::strerror(errno), kExitEnvironment);
  }
  throw Failure(parent.string() + ": no unused name for a directory", kExitEnvironment);
}

UniqueFile CreateUniqueFile(const fs::path& dir, std::string_view prefix, mode_t mode) {
  for (int i = 0; i < kAttempts; ++i) {
    const fs::path path = dir / (std::string(prefix) + RandomSuffix());
    ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (fd.valid()) return {std::move(fd), path};
    if (errno != EEXIST)
      throw Failure(path.string() + ": create: " + std::strerror(errno), kExitEnvironment);
  }
  throw Failure(dir.string() + ": no unused name for a file", kExitEnvironment);
}

ScopedFd OpenDirectoryBelow(const fs::path& root, const fs::path& below, bool create) {
  std::error_code ec;
  if (create) fs::create_directories(root, ec);
  ScopedFd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) RefuseUnsafePath(root, std::string("cannot open: ") + std::strerror(errno));
  fs::path at = root;
  for (const fs::path& part : below) {
    const std::string name = part.string();
    if (name.empty() || name == ".") continue;
    at /= part;
    if (name == "..") RefuseUnsafePath(at, "leaves " + root.string());
    constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = ::openat(dir.get(), name.c_str(), kFlags);
    if (fd < 0 && errno == ENOENT && create) {
      if (::mkdirat(dir.get(), name.c_str(), 0755) != 0 && errno != EEXIST)
        RefuseUnsafePath(at, std::string("cannot create: ") + std::strerror(errno));
      fd = ::openat(dir.get(), name.c_str(), kFlags);
    }
    if (fd < 0) RefuseUnsafePath(at, OpenProblem(dir.get(), name, errno));
    dir = ScopedFd(fd);
  }
  return dir;
}

ScopedFd CreateFileAt(int dir_fd, const std::string& name, const fs::path& display, mode_t mode) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) RefuseUnsafePath(display, kSymlink);
    if (!S_ISREG(st.st_mode)) RefuseUnsafePath(display, "not a regular file (remove it)");
    ::unlinkat(dir_fd, name.c_str(), 0);  // a leftover of an interrupted run
  }
  ScopedFd fd(
      ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.valid()) RefuseUnsafePath(display, std::string("cannot create: ") + std::strerror(errno));
  return fd;
}

std::error_code RemoveTreeAt(int dir_fd, const std::string& name) {
  std::error_code first;
  const auto note = [&first](int error) {
    if (!first) first = std::error_code(error, std::generic_category());
  };
  // O_NOFOLLOW: a link (or a directory swapped for one since) is not entered; ENOTDIR and ELOOP
  // say it is something to unlink itself.
  const int fd =
      ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return first;
    if (errno != ENOTDIR && errno != ELOOP) {
      note(errno);
      return first;
    }
    if (::unlinkat(dir_fd, name.c_str(), 0) != 0 && errno != ENOENT) note(errno);
    return first;
  }
  DIR* listing = ::fdopendir(fd);  // owns fd from here
  if (listing == nullptr) {
    note(errno);
    ::close(fd);
    return first;
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string child = entry->d_name;
    if (child != "." && child != "..") names.push_back(child);
  }
  for (const std::string& child : names) {
    if (std::error_code e = RemoveTreeAt(::dirfd(listing), child); e && !first) first = e;
  }
  ::closedir(listing);
  if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) note(errno);
  return first;
}

ScopedFd OpenRegularFileAt(int dir_fd, const std::string& name, const fs::path& display,
                           int access) {
  ScopedFd fd(::openat(dir_fd, name.c_str(), access | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return fd;
    if (errno == ELOOP) RefuseUnsafePath(display, kSymlink);
    RefuseUnsafePath(display, std::string("cannot read: ") + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    RefuseUnsafePath(display, "not a regular file");
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  return fd;
}

bool IsPlainFileName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  for (unsigned char c : name) {
    if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

}  // namespace trainlock
