// The image engines trainlock drives (buildah, podman, docker): which one to use, and the
// command line every call starts with (buildah and podman with storage of their own when
// asked: vfs, which works unprivileged, or overlay, which is much faster where the kernel
// lets this user mount it).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace trainlock {

// `wanted` when given (Failure: exit 2 for an unknown name, 3 when it is not installed), else
// the first of buildah, podman, docker on PATH (exit 3 when none is).
std::string PickEngine(const std::string& wanted);

// buildah/podman storage of trainlock's own; an empty root is the engine's default storage.
struct EngineStorage {
  std::filesystem::path root;
  std::string driver = "vfs";  // vfs | overlay
};

// Failure (exit 2) for a driver other than vfs and overlay.
void CheckStorageDriver(const std::string& driver);

// {engine} plus --root/--runroot/--storage-driver under `storage.root` for buildah and podman
// when it is given.
std::vector<std::string> EngineCommand(const std::string& engine, const EngineStorage& storage);

}  // namespace trainlock
