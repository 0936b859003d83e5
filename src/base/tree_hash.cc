// Directory tree hashing; see tree_hash.h.
#include "base/tree_hash.h"

#include <map>
#include <stdexcept>

#include "base/failure.h"
#include "base/sha256.h"

namespace trainlock {
namespace fs = std::filesystem;

std::string TreeSha256(const fs::path& root) {
  if (!fs::is_directory(root)) throw Failure(root.string() + ": not a directory", kExitBadInput);
  std::map<std::string, std::string> entries;  // relative path -> "kind digest"
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    const fs::path rel = fs::relative(it->path(), root);
    if (it->path().filename().string().front() == '.') {
      if (it->is_directory() && !it->is_symlink()) it.disable_recursion_pending();
      continue;
    }
    const fs::file_status status = it->symlink_status();
    if (fs::is_symlink(status)) {
      entries[rel.generic_string()] = "link " + Sha256Hex(fs::read_symlink(it->path()).string());
    } else if (fs::is_regular_file(status)) {
      const bool exec = (status.permissions() & fs::perms::owner_exec) != fs::perms::none;
      entries[rel.generic_string()] =
          std::string(exec ? "exec " : "file ") + Sha256FileHex(it->path());
    } else if (!fs::is_directory(status)) {
      throw Failure(it->path().string() + ": neither a file, a link nor a directory",
                    kExitBadInput);
    }
  }
  Sha256 tree;
  for (const auto& [path, entry] : entries) tree.Update(path + "\n" + entry + "\n");
  return tree.HexDigest();
}

}  // namespace trainlock
