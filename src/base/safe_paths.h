// Creating files and directories where someone else on the machine could otherwise redirect
// the write. trainlock runs as root, on shared storage and in containers where it is PID 1, so
// a name it would pick predictably ("x-<pid>") or a directory it would walk into can be
// prepared by another user: names here are random and created exclusively (never an existing
// file, never through a symlink), and walking below a chosen root follows no symlink.
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "base/scoped_fd.h"

namespace trainlock {

// Whether `name` is a single path component that stays inside the directory it names a
// file of and prints on one line: not empty, "." or "..", no '/', '\\' or control bytes. For
// names that come from files we do not trust (shard indexes, checkpoint manifests).
bool IsPlainFileName(std::string_view name);

// A new directory PARENT/PREFIX<6 random characters> (mode 0700), made with mkdir, which never
// reuses an existing name; PARENT is created first when missing. Throws std::runtime_error
// naming the directory when it cannot be made.
std::filesystem::path CreateUniqueDirectory(const std::filesystem::path& parent,
                                            std::string_view prefix);

struct UniqueFile {
  ScopedFd fd;  // open for writing
  std::filesystem::path path;
};

// A new file DIR/PREFIX<6 random characters> opened for writing, created with O_EXCL and
// O_NOFOLLOW, mode `mode` less the umask. Throws std::runtime_error naming it on failure.
UniqueFile CreateUniqueFile(const std::filesystem::path& dir, std::string_view prefix, mode_t mode);

// ROOT/BELOW opened as a directory, each component of BELOW opened with O_NOFOLLOW (and made
// when missing, if `create`): a symlink anywhere below ROOT is refused, never followed. ROOT
// itself is the caller's choice and may be anything. Throws InputError naming the component
// ("P: error: is a symbolic link; ...").
ScopedFd OpenDirectoryBelow(const std::filesystem::path& root, const std::filesystem::path& below,
                            bool create);

// `name` in the directory `dir_fd` created for writing with O_EXCL and O_NOFOLLOW. A regular
// file of that name (left by an interrupted run) is replaced; a symlink or anything else there
// is refused with InputError naming `display`.
ScopedFd CreateFileAt(int dir_fd, const std::string& name, const std::filesystem::path& display,
                      mode_t mode = 0644);

// Removes `name` in the directory `dir_fd` and, when it is a directory, everything below it,
// each step relative to a descriptor of the directory it is in and never through a symbolic
// link (a link anywhere is removed itself, never followed): a name swapped for a link while
// the removal runs changes nothing outside the tree. Goes on past what cannot be removed;
// returns the first error, empty when everything went (or nothing was there).
std::error_code RemoveTreeAt(int dir_fd, const std::string& name);

// `name` in `dir_fd` opened for reading (`access` O_RDWR: and writing) without following a
// symlink or blocking on a FIFO. An invalid ScopedFd when there is nothing of that name;
// InputError for a symlink or anything that is not a regular file.
ScopedFd OpenRegularFileAt(int dir_fd, const std::string& name,
                           const std::filesystem::path& display, int access = O_RDONLY);

}  // namespace trainlock
