// Reading a file the project pins (model weights, dataset shards) once, in chunks, at disk
// speed: only regular files (a FIFO, a device or a /proc file is refused without blocking), and
// never past a deadline. Each chunk goes to the caller (to hash it, to scan it).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "base/scoped_fd.h"

namespace trainlock {

// Why a file could not be streamed: not a regular file, unreadable, or past the deadline.
// what() is "PATH: WHY".
class StreamError : public std::runtime_error {
 public:
  StreamError(const std::filesystem::path& path, std::string why)
      : std::runtime_error(path.string() + ": " + why), why_(std::move(why)) {}
  const std::string& why() const { return why_; }

 private:
  std::string why_;
};

using Deadline = std::chrono::steady_clock::time_point;

// `path` (links followed) opened for reading, refused by type before anything can block: the
// open is O_NONBLOCK (a FIFO with no writer would block a plain one, as would some devices) and
// anything fstat does not call a regular file is refused at once, so nothing later (a read of
// /dev/zero, a dlopen reopening a FIFO through /proc/self/fd) waits on it. Throws StreamError
// ("path: cannot open: ...", "path: not a regular file").
ScopedFd OpenRegularFile(const std::filesystem::path& path);

// Reads `path` from start to end, handing each chunk to `chunk`; returns the bytes read.
// Throws StreamError ("path: not a regular file", "path: read error: ...", "path: not read
// within the time limit") and whatever `chunk` throws.
uint64_t StreamRegularFile(const std::filesystem::path& path,
                           const std::function<void(std::string_view)>& chunk,
                           Deadline deadline = Deadline::max());

// The same for a regular file the caller opened (without following a symlink, say); `path`
// names it in errors. A descriptor of anything else is refused before the first read.
uint64_t StreamDescriptor(int fd, const std::filesystem::path& path,
                          const std::function<void(std::string_view)>& chunk,
                          Deadline deadline = Deadline::max());

}  // namespace trainlock
