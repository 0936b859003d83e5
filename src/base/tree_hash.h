// The SHA-256 of a directory tree, for pinning a custom op's sources in the lock: what an
// image build compiles must be what the lock was made from. It covers every regular file and
// symbolic link under the root (relative path, whether it is executable, contents or link
// target), in sorted order; entries whose name starts with '.' (.git, editor files) and the
// rest of the file system are left out, and so are timestamps and owners.
#pragma once

#include <filesystem>
#include <string>

namespace trainlock {

// Throws std::runtime_error naming the path when the tree cannot be read or holds something
// other than directories, regular files and symbolic links.
std::string TreeSha256(const std::filesystem::path& root);

}  // namespace trainlock
