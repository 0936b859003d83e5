// Resolving Hugging Face Hub revisions: a branch or tag to its commit, and every wanted
// file's size and SHA-256 (from the Hub's LFS metadata, else by a verified download).
// Endpoints used, relative to HF_ENDPOINT (default https://huggingface.co):
//   GET /api/models/{repo}/revision/{revision}?blobs=true     (datasets: /api/datasets/...)
//       -> {"sha": commit, "siblings": [{"rfilename", "size", "lfs": {"sha256", "size"}}]}
//   GET /{repo}/resolve/{commit}/{path}                        (datasets: /datasets/{repo}/...)
//       -> the file's bytes (followed through redirects)
// HF_TOKEN, when set, is sent as a bearer token and never printed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/failure.h"
#include "project/lockfile.h"

namespace trainlock {

// Both calls below throw a Failure (failure.h): exit 3 when the Hub could not answer
// (unreachable, 401, 404, truncated), 1 for a file whose bytes do not match what the Hub or
// the lock says (size or hash, or more bytes than pinned).

struct HubOptions {
  std::string endpoint;  // "" = HF_ENDPOINT, else https://huggingface.co
  std::string token;     // "" = HF_TOKEN
  long timeout_s = 60;
  int attempts = 4;
  // When set, a file kept in git (read whole to hash it) that the Hub declares larger is
  // refused before it is downloaded (InputError, exit 2); one with no declared size is read
  // up to it. `init` sets it; `lock` reads what the Hub declares.
  std::optional<uint64_t> max_git_file_bytes;
};

struct HubRevision {
  std::string commit;             // 40 hex
  std::vector<PinnedFile> files;  // the wanted files, in the order asked for
};

// Why `revision` is not a Hub revision (a branch, tag or commit: letters, digits and . _ - /,
// no "..", no empty or dot-led component, at most 255 characters), or "" when it is one. A
// revision goes into URLs: '?', '#', '%', spaces and ".." would change which resource they name.
std::string HubRevisionProblem(std::string_view revision);

// Why `repo` is not ORG/NAME (or NAME) as the Hub spells repositories, or "".
std::string HubRepoProblem(std::string_view repo);

// `kind` is "model" or "dataset"; `files` the paths to pin (all of the revision's files when
// empty).
HubRevision ResolveHubRevision(const std::string& kind, const std::string& repo,
                               const std::string& revision, const std::vector<std::string>& files,
                               const HubOptions& options = {});

// Downloads one file of a pinned commit into the directory `dir_fd` as `dest`'s file name and
// checks its size and SHA-256. It is written to NAME.partial (created exclusively, never
// through a symlink: InputError for one planted there), stops at the pinned size, and is
// renamed into place only when it matches; nothing stays behind otherwise. `dest` names the
// file in messages.
void DownloadHubFile(const std::string& kind, const std::string& repo, const std::string& commit,
                     const PinnedFile& file, int dir_fd, const std::filesystem::path& dest,
                     const HubOptions& options = {});

}  // namespace trainlock
