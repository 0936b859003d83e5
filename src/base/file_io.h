// Reading user files whole, with failures reported as diagnostics (exit code 2): only regular
// files, opened without blocking and read up to a cap, so that a FIFO, a device or an endless
// /proc file planted in place of an input is refused at once instead of hanging the command.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace trainlock {

// Files larger than this are refused rather than read: no manifest, lock or config is this big.
inline constexpr uintmax_t kMaxInputFileBytes = 64u << 20;

// Reads `file`; throws InputError("display: error: cannot read: ...") when it is missing,
// unreadable or a directory, "display: error: not a regular file" for a FIFO, a socket or a
// device, and refuses one larger than kMaxInputFileBytes (also when the size is only found
// while reading).
std::string ReadInputFile(const std::filesystem::path& file, const std::string& display);

// Writes `data` to `file` atomically: a temporary file beside it (a random name, created with
// O_EXCL, never through a symlink), fsync, rename, fsync of the directory. Throws
// std::runtime_error naming the file on failure; the old file stays intact.
void WriteFileAtomically(const std::filesystem::path& file, std::string_view data);

}  // namespace trainlock
