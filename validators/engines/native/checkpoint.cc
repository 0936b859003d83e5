// Atomic, verified checkpoints; see checkpoint.h.
#include "engines/native/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <chrono>
#include <cstdio>
#include <fstream>

#include "base/elapsed.h"
#include "base/failure.h"
#include "base/file_io.h"
#include "base/safe_paths.h"
#include "base/scoped_fd.h"
#include "base/sha256.h"
#include "support/engine_events.h"
#include "support/parallel.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

constexpr const char* kManifest = kManifestFile;
constexpr const char* kManifestHash = kManifestHashFile;

struct Shard {
  std::string role;  // kModelRole or kOptimizerRole
  std::string file;
  std::vector<NamedTensor> tensors;
};

std::string StepName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return buf;
}

void FsyncDir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    if (fd >= 0) ::close(fd);
    throw Failure(dir.string() + ": cannot fsync directory", kExitEnvironment);
  }
  ::close(fd);
}

bool IsStepDir(const fs::directory_entry& e) {
  std::string name = e.path().filename().string();
  // A link named step-* is not a step: it could point the restore outside the checkpoint root.
  return !e.is_symlink() && e.is_directory() && name.rfind("step-", 0) == 0 &&
         fs::exists(e.path() / kManifestHash);
}

void Prune(const fs::path& root, int64_t keep_last, const fs::path& keep) {
  std::vector<fs::path> complete;
  for (const auto& e : fs::directory_iterator(root)) {
    std::string name = e.path().filename().string();
    if (name.rfind(".step-", 0) == 0 && e.path() != keep) {
      fs::remove_all(e.path());  // a temporary left by a writer that died mid-save
    } else if (IsStepDir(e)) {
      complete.push_back(e.path());
    }
  }
  std::sort(complete.begin(), complete.end());
  for (size_t i = 0; i + static_cast<size_t>(keep_last) < complete.size(); ++i) {
    fs::remove_all(complete[i]);
  }
}

// Files of one role: tensors in name order, cut into shards of about kShardBytes (a tensor
// larger than that gets a shard of its own). One file keeps the plain name ROLE.safetensors;
// more are named as Hugging Face names shards, ROLE-00001-of-00003.safetensors.
std::vector<Shard> PlanShards(const std::string& role, const std::vector<NamedTensor>& tensors,
                              uint64_t shard_bytes) {
  std::vector<const NamedTensor*> sorted;
  for (const NamedTensor& t : tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(),
            [](const NamedTensor* a, const NamedTensor* b) { return a->name < b->name; });
  std::vector<Shard> shards;
  uint64_t in_current = 0;
  for (const NamedTensor* t : sorted) {
    const auto bytes = static_cast<uint64_t>(t->tensor.numel()) * t->tensor.element_size();
    if (shards.empty() || (in_current > 0 && in_current + bytes > shard_bytes)) {
      shards.push_back({role, "", {}});
      in_current = 0;
    }
    shards.back().tensors.push_back(*t);
    in_current += bytes;
  }
  if (shards.empty()) shards.push_back({role, "", {}});
  for (size_t i = 0; i < shards.size(); ++i) {
    char name[96];
    if (shards.size() == 1) {
      std::snprintf(name, sizeof name, "%s.safetensors", role.c_str());
    } else {
      std::snprintf(name, sizeof name, "%s-%05zu-of-%05zu.safetensors", role.c_str(), i + 1,
                    shards.size());
    }
    shards[i].file = name;
  }
  return shards;
}

}  // namespace

CheckpointIo SaveCheckpoint(const fs::path& root, const CheckpointContents& contents,
                            int64_t keep_last, uint64_t shard_bytes,
                            const SavePointHook& at_point) {
  auto point = [&](const char* name) {
    if (at_point) at_point(name);
  };
  auto start = std::chrono::steady_clock::now();
  fs::create_directories(root);
  const std::string name = StepName(contents.step);
  // A fresh directory of a random name: never one another writer (or a planted link) holds.
  const fs::path tmp = CreateUniqueDirectory(root, "." + name + ".tmp-");
  const fs::path final_dir = root / name;
  point(kBeforeFiles);

  std::vector<Shard> shards = PlanShards(kModelRole, contents.model, shard_bytes);
  for (Shard& s : PlanShards(kOptimizerRole, contents.optimizer, shard_bytes))
    shards.push_back(std::move(s));
  // Shards are independent files: copy to the host, write, hash and fsync them in parallel.
  std::vector<WrittenFile> written(shards.size());
  ParallelFor(shards.size(), IoThreads(), [&](size_t i) {
    std::function<void()> part_written;
    if (i == 0) part_written = [&] { point(kMidFile); };
    written[i] = WriteSafetensors(tmp / shards[i].file, shards[i].tensors, {}, true, part_written);
  });
  point(kAfterFiles);

  nlohmann::json manifest = {{"format", kCheckpointFormat},
                             {"step", contents.step},
                             {"files", nlohmann::json::array()},
                             {"state", contents.state}};
  CheckpointIo io;
  for (size_t i = 0; i < shards.size(); ++i) {
    manifest["files"].push_back({{"path", shards[i].file},
                                 {"role", shards[i].role},
                                 {"sha256", written[i].sha256},
                                 {"size", written[i].bytes}});
    io.bytes += written[i].bytes;
  }
  io.files = shards.size();
  std::string text = manifest.dump(2) + "\n";
  WriteFileAtomically(tmp / kManifest, text);  // fsyncs the file and tmp/
  point(kAfterMetadata);
  WriteFileAtomically(tmp / kManifestHash, Sha256Hex(text) + "  " + kManifest + "\n");
  io.bytes += text.size() + 65;
  if (fs::exists(final_dir)) fs::remove_all(final_dir);  // a re-save of the same step
  fs::rename(tmp, final_dir);
  FsyncDir(root);
  point(kAfterCommit);
  Prune(root, keep_last, final_dir);
  io.dir = final_dir;
  io.seconds = SecondsSince(start);
  return io;
}

namespace {

// The bytes of DIR/NAME, a checkpoint's own small file: opened without following a symlink or
// blocking on a FIFO (O_NOFOLLOW | O_NONBLOCK), refused unless it is a regular file of at most
// kMaxManifestBytes. Every refusal is a CheckpointError naming the file.
std::string ReadCheckpointFile(const fs::path& dir, const char* name) {
  const fs::path path = dir / name;
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    throw CheckpointError(path.string() + (errno == ENOENT  ? ": missing"
                                           : errno == ELOOP ? ": is a symbolic link; refused"
                                                            : ": cannot open"));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw CheckpointError(path.string() + ": not a regular file; refused");
  if (static_cast<uint64_t>(st.st_size) > kMaxManifestBytes)
    throw CheckpointError(path.string() + ": " + std::to_string(st.st_size) +
                          " bytes, over the limit of " + std::to_string(kMaxManifestBytes));
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw CheckpointError(path.string() + ": cannot read");
    done += static_cast<size_t>(n);
  }
  return text;
}

std::string ReadManifestVerified(const fs::path& dir) {
  const fs::path manifest_path = dir / kManifest;
  const std::string text = ReadCheckpointFile(dir, kManifest);
  const std::string want =
      ManifestHashOf(ReadCheckpointFile(dir, kManifestHash), (dir / kManifestHash).string());
  if (Sha256Hex(text) != want) {
    throw CheckpointError(manifest_path.string() + ": sha256 " + Sha256Hex(text).substr(0, 16) +
                          "... does not match " + kManifestHash + " (" + want.substr(0, 16) +
                          "...)");
  }
  return text;
}

}  // namespace

CheckpointContents LoadCheckpoint(const fs::path& dir, CheckpointIo* io) {
  auto start = std::chrono::steady_clock::now();
  const fs::path manifest_path = dir / kManifest;
  const std::string text = ReadManifestVerified(dir);
  CheckpointManifest manifest = ParseCheckpointManifest(text, manifest_path.string());
  const std::vector<CheckpointFile>& files = manifest.files;
  // Sizes first (cheap, and a truncated shard is named before any hashing starts).
  uint64_t bytes = 0;
  for (const CheckpointFile& f : files) {
    const fs::path path = dir / f.path;
    std::error_code ec;
    uint64_t size = fs::file_size(path, ec);
    if (ec) throw CheckpointError(path.string() + ": missing (listed in manifest.json)");
    if (size != f.size) {
      throw CheckpointError(path.string() + ": size " + std::to_string(size) +
                            " bytes but manifest.json says " + std::to_string(f.size));
    }
    bytes += size;
  }
  // Read and hash every file in one pass, in parallel; nothing is returned unless all verify.
  std::vector<std::map<std::string, torch::Tensor>> read(files.size());
  try {
    ParallelFor(files.size(), IoThreads(), [&](size_t i) {
      read[i] = ReadVerifiedSafetensors(dir / files[i].path, files[i].sha256, kManifest);
    });
  } catch (const SafetensorsError& e) {
    throw CheckpointError(e.what());
  }
  CheckpointContents contents;
  contents.step = manifest.step;
  contents.state = std::move(manifest.state);
  for (size_t i = 0; i < files.size(); ++i) {
    auto& into = files[i].role == kModelRole ? contents.model : contents.optimizer;
    for (auto& [n, t] : read[i]) into.push_back({n, std::move(t)});
  }
  if (io) {
    io->dir = dir;
    io->bytes = bytes;
    io->files = files.size();
    io->seconds = SecondsSince(start);
  }
  return contents;
}

std::vector<fs::path> UncommittedCheckpoints(const fs::path& root) {
  std::vector<fs::path> torn;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return torn;
  for (const auto& e : fs::directory_iterator(root)) {
    const std::string name = e.path().filename().string();
    if (e.is_symlink() || !e.is_directory()) continue;
    const bool temporary = name.rfind(".step-", 0) == 0 && name.find(".tmp-") != std::string::npos;
    if (temporary || (name.rfind("step-", 0) == 0 && !IsStepDir(e))) torn.push_back(e.path());
  }
  std::sort(torn.begin(), torn.end());
  return torn;
}

std::optional<fs::path> LatestCheckpoint(const fs::path& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return std::nullopt;
  std::optional<fs::path> latest;
  for (const auto& e : fs::directory_iterator(root)) {
    if (IsStepDir(e) && (!latest || e.path() > *latest)) latest = e.path();
  }
  return latest;
}

}  // namespace trainlock::validate
