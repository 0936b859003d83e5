// Verifying a committed checkpoint; see checkpoint_verify.h. Every file is opened below the
// step directory's descriptor, one component at a time, without following a link: the
// directory is the engine's, written by a process the coordinator does not trust.
#include "coordinator/checkpoint_verify.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "base/file_stream.h"  // Deadline
#include "base/json_file.h"
#include "base/safe_paths.h"
#include "base/scoped_fd.h"
#include "base/sha256.h"
#include "engines/native/checkpoint_manifest.h"
#include "support/parallel.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

// Why the checkpoint does not verify, as the native reader says it (a CheckpointError naming
// the file and the mismatch): what() becomes the result's problem, "PATH: WHY".
[[noreturn]] void Refuse(const fs::path& path, const std::string& why) {
  throw CheckpointError(path.string() + ": " + why);
}

std::string ErrnoText(int error) {
  return std::strerror(error);
}

// The most a native manifest's hash file holds: one line of a hash and a file name.
constexpr uint64_t kMaxManifestHashBytes = 4096;
// How much of a file one read takes while it is hashed.
constexpr size_t kHashChunkBytes = size_t{4} << 20;

// One file a commit record lists.
struct ListedFile {
  std::string path;  // relative to the step directory, components separated by '/'
  uint64_t size = 0;
  std::string sha256;  // lower-case hex: block_sha256 (Python engines), the file's (native)
};

// A commit record as read: its step, the files it lists in its order, and the record's own
// files, which it does not list.
struct Record {
  int64_t step = -1;
  std::vector<ListedFile> files;
  std::set<std::string> own;
  bool blockwise = false;  // each sha256 is a block_sha256
};

// The step directory, opened without following a link (the root itself is the caller's).
ScopedFd OpenStepDir(const fs::path& root, const fs::path& dir) {
  ScopedFd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd.valid()) Refuse(root, "cannot open the checkpoint root: " + ErrnoText(errno));
  const std::string name = dir.filename().string();
  ScopedFd fd(
      ::openat(root_fd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.valid()) return fd;
  const int error = errno;
  if (error == ENOENT) Refuse(dir, "missing: no such directory under the checkpoint root");
  struct stat st {};
  if (::fstatat(root_fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
    Refuse(dir, "a symbolic link; a checkpoint is a directory of regular files");
  if (error == ENOTDIR) Refuse(dir, "not a directory");
  Refuse(dir, "cannot open: " + ErrnoText(error));
}

// DIR/NAME, a file of the commit record itself: a regular file (no link followed, no FIFO
// waited on) of at most `max` bytes.
std::string ReadRecordFile(int dir_fd, const fs::path& dir, const char* name, uint64_t max) {
  const fs::path path = dir / name;
  ScopedFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT)
      Refuse(path, "missing: without its commit record the step directory was never committed");
    if (errno == ELOOP) Refuse(path, "a symbolic link; refused");
    Refuse(path, "cannot open: " + ErrnoText(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) Refuse(path, "not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max) {
    Refuse(path, std::to_string(st.st_size) + " bytes, over the limit of " + std::to_string(max));
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) Refuse(path, "cannot read it whole");
    done += static_cast<size_t>(n);
  }
  return text;
}

// Whether `path`, from a commit record, names a file inside the step directory: relative, and
// each '/'-separated component a plain file name (not empty, ".", "..", no control byte).
bool IsPathInside(std::string_view path) {
  if (path.empty() || path.size() > 4096) return false;
  for (size_t start = 0;;) {
    const size_t slash = path.find('/', start);
    const std::string_view part =
        path.substr(start, slash == std::string_view::npos ? slash : slash - start);
    if (!IsPlainFileName(part)) return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

// One {path, block_sha256, size} entry of the Python engines' commit marker.
ListedFile MarkerEntry(const nlohmann::json& entry, const fs::path& where) {
  const auto member = [&](const char* key) {
    return entry.is_object() && entry.contains(key) ? entry.at(key) : nlohmann::json();
  };
  const nlohmann::json path = member("path"), sha = member("block_sha256"), size = member("size");
  if (!path.is_string() || !IsPathInside(path.get<std::string>()) || path == kCommitMarker) {
    Refuse(where, "a file entry's path " + Quoted(path.is_string() ? path.get<std::string>() : "") +
                      " is not a relative path inside the step directory");
  }
  const std::string shown = Quoted(path.get<std::string>());
  if (!sha.is_string() || !IsSha256Hex(sha.get<std::string>()))
    Refuse(where, "the block_sha256 of " + shown + " is not 64 lower-case hex characters");
  if (!size.is_number_unsigned())
    Refuse(where, "the size of " + shown + " is not a non-negative integer");
  return {path.get<std::string>(), size.get<uint64_t>(), sha.get<std::string>()};
}

// The Python engines' trainlock-commit.json: {step, files: [{path, block_sha256, size}]}.
Record ReadMarker(int dir_fd, const fs::path& dir) {
  const fs::path where = dir / kCommitMarker;
  std::string problem;
  const std::optional<nlohmann::json> doc =
      TryParseJsonText(ReadRecordFile(dir_fd, dir, kCommitMarker, kMaxCommitMarkerBytes), &problem);
  if (!doc) Refuse(where, "not JSON: " + problem);
  if (!doc->is_object()) Refuse(where, "not a commit record (an object of step and files)");
  const auto step = doc->find("step");
  const auto files = doc->find("files");
  if (step == doc->end() || !step->is_number_unsigned() ||
      step->get<uint64_t>() > uint64_t{INT64_MAX})
    Refuse(where, "its step is not a step number");
  if (files == doc->end() || !files->is_array()) Refuse(where, "its files are not a list");
  if (files->size() > kMaxCheckpointEntries) {
    Refuse(where, "lists " + std::to_string(files->size()) + " files, over the limit of " +
                      std::to_string(kMaxCheckpointEntries));
  }
  Record r;
  r.step = step->get<int64_t>();
  r.own = {kCommitMarker};
  r.blockwise = true;
  std::set<std::string> seen;
  for (const nlohmann::json& entry : *files) {
    r.files.push_back(MarkerEntry(entry, where));
    if (!seen.insert(r.files.back().path).second)
      Refuse(where, "lists " + Quoted(r.files.back().path) + " twice");
  }
  return r;
}

// The native engine's manifest.json, verified against manifest.json.sha256 and parsed by the
// native reader itself.
Record ReadNativeManifest(int dir_fd, const fs::path& dir) {
  const std::string text = ReadRecordFile(dir_fd, dir, kManifestFile, kMaxManifestBytes);
  const std::string hash_text =
      ReadRecordFile(dir_fd, dir, kManifestHashFile, kMaxManifestHashBytes);
  Record r;
  r.own = {kManifestFile, kManifestHashFile};
  if (Sha256Hex(text) != ManifestHashOf(hash_text, (dir / kManifestHashFile).string())) {
    Refuse(dir / kManifestFile,
           std::string("its SHA-256 is not the one ") + kManifestHashFile + " states");
  }
  const CheckpointManifest manifest = ParseCheckpointManifest(text, (dir / kManifestFile).string());
  r.step = manifest.step;
  for (const CheckpointFile& f : manifest.files) r.files.push_back({f.path, f.size, f.sha256});
  return r;
}

// Every regular file below the directory `fd` (shown as `dir`), as a path relative to the
// step directory (`prefix` is fd's own). Refuses a link, anything else that is neither a
// regular file nor a directory, a name that is not a plain file name, and a tree beyond
// kMaxCheckpointEntries entries or kMaxCheckpointDepth levels.
void ListFiles(int fd, const fs::path& dir, const std::string& prefix, int depth,
               std::set<std::string>* found, size_t* entries) {
  if (depth > kMaxCheckpointDepth)
    Refuse(dir, "nested deeper than " + std::to_string(kMaxCheckpointDepth) + " directories");
  const int listed_fd = ::dup(fd);  // fdopendir owns the descriptor it is given
  DIR* opened = listed_fd < 0 ? nullptr : ::fdopendir(listed_fd);
  if (!opened) {
    const int error = errno;
    if (listed_fd >= 0) ::close(listed_fd);
    Refuse(dir, "cannot list: " + ErrnoText(error));
  }
  const std::unique_ptr<DIR, int (*)(DIR*)> closer(opened, ::closedir);
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(opened)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (++*entries > kMaxCheckpointEntries)
      Refuse(dir, "holds more than " + std::to_string(kMaxCheckpointEntries) + " entries");
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());  // the first problem is the same on every run
  for (const std::string& name : names) {
    if (!IsPlainFileName(name)) Refuse(dir, "holds " + Quoted(name) + ", not a plain file name");
    const fs::path path = dir / name;
    struct stat st {};
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      Refuse(path, "cannot stat: " + ErrnoText(errno));
    if (S_ISLNK(st.st_mode)) Refuse(path, "a symbolic link; a checkpoint holds regular files only");
    if (S_ISREG(st.st_mode)) {
      found->insert(prefix + name);
      continue;
    }
    if (!S_ISDIR(st.st_mode)) Refuse(path, "neither a regular file nor a directory");
    ScopedFd sub(::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub.valid()) Refuse(path, "cannot open: " + ErrnoText(errno));
    ListFiles(sub.get(), path, prefix + name + "/", depth + 1, found, entries);
  }
}

// Every file the record lists is in the directory, and every file in it is listed (or is the
// record's own).
void CompareListing(const Record& r, const std::set<std::string>& found, const fs::path& dir,
                    const std::string& record) {
  std::set<std::string> listed = r.own;
  for (const ListedFile& f : r.files) {
    if (!found.count(f.path)) Refuse(dir / f.path, "missing (" + record + " lists it)");
    listed.insert(f.path);
  }
  for (const std::string& path : found) {
    if (!listed.count(path)) {
      Refuse(dir / path, "not in " + record +
                             ": a committed checkpoint holds only the files its commit record "
                             "lists");
    }
  }
}

// DIR/REL opened for reading, no link followed at any of its components.
ScopedFd OpenListed(int dir_fd, const fs::path& dir, const std::string& rel) {
  ScopedFd parent;
  int at = dir_fd;
  size_t start = 0;
  for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', start)) {
    const std::string part = rel.substr(start, slash - start);
    ScopedFd next(::openat(at, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid()) Refuse(dir / rel, "cannot open its directory: " + ErrnoText(errno));
    parent = std::move(next);
    at = parent.get();
    start = slash + 1;
  }
  ScopedFd fd(
      ::openat(at, rel.substr(start).c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) Refuse(dir / rel, "cannot open: " + ErrnoText(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) Refuse(dir / rel, "not a regular file");
  return fd;
}

// A part of one listed file that one thread hashes: a 64 MiB block (Python engines) or the
// whole file (native).
struct HashRange {
  size_t file = 0;
  uint64_t offset = 0, length = 0;
};

// Lower-case hex SHA-256 of `range` of the open file `fd` (`path` names it), read before
// `deadline`.
std::string HashOf(int fd, const HashRange& range, const fs::path& path, Deadline deadline) {
  Sha256 hash;
  std::vector<char> chunk(static_cast<size_t>(std::min<uint64_t>(kHashChunkBytes, range.length)));
  for (uint64_t done = 0; done < range.length;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk.size(), range.length - done));
    const ssize_t n = ::pread(fd, chunk.data(), want, static_cast<off_t>(range.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) Refuse(path, "cannot read: " + ErrnoText(errno));
    if (n == 0) Refuse(path, "became shorter while it was hashed");
    if (std::chrono::steady_clock::now() > deadline)
      Refuse(path, "not hashed within the time limit (--timeout)");
    hash.Update(chunk.data(), static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
  }
  return hash.HexDigest();
}

// The 32 bytes a lower-case hex SHA-256 spells.
std::string DigestBytes(const std::string& hex) {
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return bytes;
}

// Every listed file's size, then its hash, on up to `threads` threads: the first file in
// record order that differs from the record is refused.
void HashFiles(int dir_fd, const fs::path& dir, const Record& r, const std::string& record,
               size_t threads, Deadline deadline) {
  std::vector<HashRange> ranges;
  for (size_t i = 0; i < r.files.size(); ++i) {
    const ListedFile& f = r.files[i];
    struct stat st {};
    ScopedFd fd = OpenListed(dir_fd, dir, f.path);
    if (::fstat(fd.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) != f.size) {
      Refuse(dir / f.path,
             std::to_string(st.st_size) + " bytes, " + record + " says " + std::to_string(f.size));
    }
    if (!r.blockwise) ranges.push_back({i, 0, f.size});
    for (uint64_t at = 0; r.blockwise && at < f.size; at += kCommitBlockBytes)
      ranges.push_back({i, at, std::min(kCommitBlockBytes, f.size - at)});
  }
  std::vector<std::string> digests(ranges.size());
  ParallelFor(ranges.size(), threads, [&](size_t k) {
    const fs::path path = dir / r.files[ranges[k].file].path;
    const ScopedFd fd = OpenListed(dir_fd, dir, r.files[ranges[k].file].path);
    digests[k] = HashOf(fd.get(), ranges[k], path, deadline);
  });
  size_t k = 0;
  for (size_t i = 0; i < r.files.size(); ++i) {
    std::string got;
    if (r.blockwise) {
      Sha256 blocks;  // of the blocks' digests, in order
      for (; k < ranges.size() && ranges[k].file == i; ++k) blocks.Update(DigestBytes(digests[k]));
      got = blocks.HexDigest();
    } else {
      got = digests[k++];
    }
    const ListedFile& f = r.files[i];
    if (got != f.sha256) {
      Refuse(dir / f.path, std::string(r.blockwise ? "block sha256 " : "sha256 ") +
                               got.substr(0, 16) + "..., " + record + " says " +
                               f.sha256.substr(0, 16) + "...: changed after its commit");
    }
  }
}

}  // namespace

std::string CheckpointStepName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08lld", static_cast<long long>(step));
  return name;
}

VerifiedCheckpoint VerifyCheckpoint(const fs::path& root, int64_t step, CommitRecord record,
                                    size_t threads, Deadline deadline) {
  const auto start = std::chrono::steady_clock::now();
  VerifiedCheckpoint out;
  out.dir = root / CheckpointStepName(step);
  out.step = step;
  out.record = record == CommitRecord::kPythonMarker ? kCommitMarker : kManifestFile;
  try {
    const ScopedFd dir = OpenStepDir(root, out.dir);
    const Record r = record == CommitRecord::kPythonMarker ? ReadMarker(dir.get(), out.dir)
                                                           : ReadNativeManifest(dir.get(), out.dir);
    if (r.step != step) {
      Refuse(out.dir / out.record,
             "says step " + std::to_string(r.step) + ", not " + std::to_string(step));
    }
    std::set<std::string> found;
    size_t entries = 0;
    ListFiles(dir.get(), out.dir, "", 0, &found, &entries);
    CompareListing(r, found, out.dir, out.record);
    HashFiles(dir.get(), out.dir, r, out.record, std::max<size_t>(threads, 1), deadline);
    out.files = static_cast<int64_t>(r.files.size());
    for (const ListedFile& f : r.files) out.bytes += f.size;
  } catch (const CheckpointError& problem) {
    out.problem = problem.what();
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace trainlock::validate
