// What a project's `.trainlock/` directory holds, entry by entry, and freeing its container
// storage: `trainlock image storage DIR [--free]` (docs/images.md). Container storage is the
// big entry (the vfs driver keeps every layer as a full copy), and its files can belong to a
// user namespace's ids, so freeing goes through the engine that wrote them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "image/container_tool.h"

namespace trainlock {

struct StorageEntry {
  std::string name;         // cache, reports, containers, image-cpu, ...
  uintmax_t bytes = 0;      // allocated on disk, as du counts (st_blocks), hard links once
  uintmax_t files = 0;      // entries below it, directories included
  bool unreadable = false;  // some part could not be read: bytes is a lower bound
};

// The entries of `trainlock_dir` (DIR/.trainlock), largest first; empty when it does not
// exist. Symbolic links are counted as links, never followed.
std::vector<StorageEntry> TrainlockDirUsage(const std::filesystem::path& trainlock_dir);

// Frees the buildah/podman storage at `storage.root` (DIR/.trainlock/containers): every
// working container and image is removed through the engine (which owns files of a user
// namespace), then the directory, through a descriptor of its parent opened without following
// a link after the engine ran (InputError, exit 2, when the parent is a link by then). Returns what
// is left to say: "" when it is gone; why, with the command that removes the rest, when files
// remain. Failure (exit 3) when neither buildah nor podman can run here.
std::string FreeContainerStorage(const ContainerToolStorage& storage, bool verbose);

}  // namespace trainlock
