// data.model / data.dataset; see data_checks.h.
#include "checks/data_checks.h"

#include <chrono>
#include <cstring>
#include <filesystem>

#include "base/file_stream.h"
#include "base/sha256.h"
#include "project/artifact_paths.h"
#include "report/check_metrics.h"
#include "report/pass_rules.h"

namespace trainlock {
namespace fs = std::filesystem;

namespace {

// Finds the first token id >= vocab in a stream of little-endian tokens of `width` bytes,
// fed in chunks of any size (a token may straddle two chunks).
class TokenScanner {
 public:
  TokenScanner(int width, int64_t vocab) : width_(width), vocab_(vocab) {}

  void Feed(std::string_view chunk) {
    size_t at = 0;
    if (pending_size_ > 0) {  // the rest of a token begun in the last chunk
      while (pending_size_ < width_ && at < chunk.size()) pending_[pending_size_++] = chunk[at++];
      if (pending_size_ < width_) return;
      Token(pending_);
      pending_size_ = 0;
    }
    for (; at + static_cast<size_t>(width_) <= chunk.size(); at += static_cast<size_t>(width_))
      Token(chunk.data() + at);
    while (at < chunk.size()) pending_[pending_size_++] = chunk[at++];
  }

  bool ragged() const { return pending_size_ != 0; }  // the file ends inside a token
  uint64_t tokens() const { return tokens_; }
  uint64_t max_id() const { return max_id_; }
  std::optional<std::pair<uint64_t, uint64_t>> first_bad() const { return first_bad_; }

 private:
  void Token(const char* bytes) {
    uint64_t id = 0;
    for (int i = width_ - 1; i >= 0; --i) id = (id << 8) | static_cast<unsigned char>(bytes[i]);
    if (id > max_id_) max_id_ = id;
    if (!first_bad_ && id >= static_cast<uint64_t>(vocab_)) first_bad_ = {{tokens_, id}};
    ++tokens_;
  }

  int width_;
  int64_t vocab_;
  char pending_[4] = {};
  int pending_size_ = 0;
  uint64_t tokens_ = 0, max_id_ = 0;
  std::optional<std::pair<uint64_t, uint64_t>> first_bad_;  // position, id
};

struct FileProblem {
  std::string summary;  // "" when the file is the pinned one
  std::string remedy;
};

constexpr const char* kNotPinned =
    "the file is not the pinned revision: re-fetch it, or re-lock if the change is intended";

// Reads `path` once: its size and SHA-256 against the pin and, for token shards, every token
// id against the vocabulary. Adds its size to `total` when it is the pinned file.
FileProblem CheckPinnedFile(const fs::path& path, const PinnedFile& pinned,
                            std::optional<TokenScanner> scanner, Deadline deadline, uint64_t& total,
                            nlohmann::json& tokens) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    return {path.string() + ": missing", "run `trainlock fetch` to download the pinned files"};
  Sha256 sha;
  uint64_t size = 0;
  try {
    size = StreamRegularFile(
        path,
        [&](std::string_view chunk) {
          sha.Update(chunk);
          if (scanner) scanner->Feed(chunk);
        },
        deadline);
  } catch (const StreamError& e) {
    return {e.what(), "the pinned files must be regular files that can be read in time"};
  }
  if (size != pinned.size) {
    return {path.string() + ": size " + std::to_string(size) + " but the lock pins " +
                std::to_string(pinned.size),
            kNotPinned};
  }
  if (const std::string hex = sha.HexDigest(); hex != pinned.sha256) {
    return {path.string() + ": sha256 " + hex.substr(0, 16) + "... but the lock pins " +
                pinned.sha256.substr(0, 16) + "...",
            kNotPinned};
  }
  total += size;
  if (!scanner) return {};
  tokens[pinned.path] = ToJson(TokenShardMetrics{static_cast<int64_t>(scanner->tokens()),
                                                 static_cast<int64_t>(scanner->max_id())});
  if (scanner->ragged())
    return {path.string() + ": ends inside a token", "the shard is truncated or not of this dtype"};
  if (auto bad = scanner->first_bad()) {
    return {path.string() + ": token id " + std::to_string(bad->second) + " at position " +
                std::to_string(bad->first) + " is not below the config's vocab_size",
            "the shard was tokenized for another vocabulary: re-tokenize it or fix vocab_size"};
  }
  return {};
}

}  // namespace

CheckResult VerifyArtifact(const Project& project, const std::optional<ArtifactSource>& artifact,
                           const std::string& kind, Deadline deadline) {
  const std::string id = "data." + kind;
  if (!artifact || artifact->files.empty()) {
    return NotMeasured(
        id, CheckStatus::kSkip,
        kind == "model"
            ? "the lock pins no model files: seeded initialisation of the config's shape"
            : "the lock pins no dataset files: seeded synthetic token stream");
  }
  const auto start = std::chrono::steady_clock::now();
  const fs::path dir = ArtifactDir(project.dir, *artifact, kind);
  FileProblem first;  // the first file that is not as pinned
  int64_t verified = 0;
  const int width = artifact->token_dtype == "uint16"   ? 2
                    : artifact->token_dtype == "uint32" ? 4
                                                        : 0;
  const int64_t vocab = project.config.model.vocab_size;
  uint64_t total = 0;
  nlohmann::json tokens = nlohmann::json::object();
  for (const PinnedFile& f : artifact->files) {
    std::optional<TokenScanner> scanner;
    if (width > 0) scanner.emplace(width, vocab);
    FileProblem problem;
    try {
      problem = CheckPinnedFile(ResolvePinnedFile(project.dir, *artifact, kind, f.path), f, scanner,
                                deadline, total, tokens);
    } catch (const ArtifactPathError& e) {
      problem = {e.what(), "copy the files into the project instead of linking to them"};
    }
    if (problem.summary.empty()) {
      ++verified;
      continue;
    }
    first = std::move(problem);
    break;
  }
  DataMetrics m;
  m.files_pinned = static_cast<int64_t>(artifact->files.size());
  m.files_verified = verified;
  if (!first.summary.empty()) m.problem = first.summary;
  m.bytes = static_cast<int64_t>(total);
  if (width > 0) {
    m.vocab_size = static_cast<int64_t>(vocab);
    m.token_shards = tokens;
  }
  std::string summary = first.summary;
  if (summary.empty()) {
    summary = std::to_string(artifact->files.size()) + " pinned files verified (" +
              std::to_string(total) + " bytes)";
    if (width > 0) summary += "; every token id below vocab_size " + std::to_string(vocab);
  }
  CheckResult r = Judged(id, ToJson(m), std::move(summary), std::move(first.remedy));
  r.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace trainlock
