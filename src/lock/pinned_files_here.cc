// The lock's pinned project files on this machine; see pinned_files_here.h.
#include "lock/pinned_files_here.h"

#include <stdexcept>
#include <system_error>

#include "base/file_stream.h"
#include "base/sha256.h"
#include "base/tree_hash.h"
#include "project/artifact_paths.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

// Not even a dangling symbolic link is there: the file is absent, not unusable.
bool NothingAtPinnedPath(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  return status.type() == fs::file_type::not_found;
}

void ComparePinnedHash(const std::string& display, const std::string& have,
                       const std::string& locked, PinnedFilesHere& out) {
  if (have == locked) {
    ++out.checked;
    return;
  }
  out.changed.push_back(display + ": sha256 " + have.substr(0, 12) + "..., the lock pins " +
                        (locked.empty() ? std::string("none") : locked.substr(0, 12) + "..."));
}

void InspectArtifact(const fs::path& dir, const ArtifactSource& a, const char* kind,
                     PinnedFilesHere& out) {
  if (a.source != "local") return;  // the Hub's files live in the cache, pinned by commit
  for (const PinnedFile& f : a.files) {
    const fs::path named = ArtifactDir(dir, a, kind) / f.path;
    const std::string display = named.lexically_normal().string();
    if (NothingAtPinnedPath(named)) {
      out.absent.push_back(display);
      continue;
    }
    try {
      ComparePinnedHash(display, Sha256FileHex(ResolvePinnedFile(dir, a, kind, f.path)), f.sha256,
                        out);
    } catch (const ArtifactPathError& e) {
      out.unusable.push_back(display + ": " + e.why());
    } catch (const StreamError& e) {  // not a regular file, cannot be read
      out.unusable.push_back(display + ": " + e.why());
    } catch (const std::runtime_error& e) {
      out.unusable.push_back(e.what());
    }
  }
}

void InspectCustomOp(const fs::path& dir, const CustomOpLibrary& lib, PinnedFilesHere& out) {
  const bool tree = !lib.source.empty();
  if (!tree && (lib.sha256.empty() || fs::path(lib.library).is_absolute())) return;
  const fs::path path = dir / (tree ? lib.source : lib.library);
  const std::string display = path.lexically_normal().string();
  if (NothingAtPinnedPath(path)) {
    out.absent.push_back(display);
    return;
  }
  try {
    // Sources may live beside the project ('..'); a prebuilt library must be inside it.
    const fs::path real =
        tree ? path : ResolveWithinProject(dir, path, "a prebuilt custom-op library");
    ComparePinnedHash(display, tree ? TreeSha256(real) : Sha256FileHex(real),
                      tree ? lib.source_sha256 : lib.sha256, out);
  } catch (const ArtifactPathError& e) {
    out.unusable.push_back(display + ": " + e.why());
  } catch (const std::exception& e) {
    out.unusable.push_back(display + ": " + e.what());
  }
}

}  // namespace

PinnedFilesHere InspectPinnedFiles(const fs::path& project_dir, const Lockfile& lock) {
  PinnedFilesHere out;
  if (lock.model) InspectArtifact(project_dir, *lock.model, "model", out);
  if (lock.dataset) InspectArtifact(project_dir, *lock.dataset, "dataset", out);
  for (const CustomOpLibrary& lib : lock.custom_ops) InspectCustomOp(project_dir, lib, out);
  return out;
}

}  // namespace trainlock
