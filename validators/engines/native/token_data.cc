// Token sources and the window loader; see token_data.h.
#include "engines/native/token_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "base/failure.h"
#include "base/sha256.h"
#include "support/pinned_files.h"

namespace trainlock::validate {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

namespace {

class Synthetic : public TokenSource {
 public:
  Synthetic(uint64_t seed, int64_t vocab, uint64_t length)
      : seed_(seed), vocab_(static_cast<uint64_t>(vocab)), length_(length) {}
  uint64_t size() const override { return length_; }
  void Read(uint64_t start, uint64_t n, int64_t* out) const override {
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t p = start + i;
      uint64_t block_start = SplitMix64(seed_ ^ SplitMix64(p / 8)) % vocab_;
      out[i] = static_cast<int64_t>((block_start + 7 * (p % 8)) % vocab_);
    }
  }
  std::string Describe() const override {
    return "synthetic token stream (" + std::to_string(length_) + " tokens)";
  }

 private:
  uint64_t seed_, vocab_, length_;
};

class Shards : public TokenSource {
 public:
  Shards(const std::vector<std::filesystem::path>& files, int bytes_per_token, int64_t vocab,
         const std::vector<std::string>& sha256)
      : width_(bytes_per_token), vocab_(vocab) {
    for (size_t i = 0; i < files.size(); ++i) {
      Map(files[i]);
      if (i < sha256.size()) Verify(maps_.back(), sha256[i]);
      CheckVocabulary(maps_.back());
    }
  }
  ~Shards() override {
    for (const Mapping& m : maps_) ::munmap(m.data, m.bytes);
  }
  uint64_t size() const override { return total_; }
  void Read(uint64_t start, uint64_t n, int64_t* out) const override {
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t p = start + i;
      size_t m = 0;
      while (p >= maps_[m].first + maps_[m].tokens) ++m;
      const unsigned char* at =
          static_cast<const unsigned char*>(maps_[m].data) + (p - maps_[m].first) * width_;
      uint64_t token = 0;
      for (int b = width_ - 1; b >= 0; --b) token = (token << 8) | at[b];
      if (token >= static_cast<uint64_t>(vocab_))
        OutOfVocabulary(maps_[m], p - maps_[m].first, token);
      out[i] = static_cast<int64_t>(token);
    }
  }
  std::string Describe() const override {
    return std::to_string(maps_.size()) + " token shard(s), " + std::to_string(total_) + " tokens";
  }

 private:
  struct Mapping {
    std::string path;
    void* data;
    size_t bytes;
    uint64_t first, tokens;
  };
  // The shard's mapped bytes, hashed once before training reads any of them. The mapping is
  // MAP_PRIVATE of a file opened once, so what is hashed is what training reads (a rewrite in
  // place after this point would show through; replacing the file by rename would not). One
  // pass at disk speed; it also pulls the shard into the page cache the training reads from.
  static void Verify(const Mapping& m, const std::string& pinned) {
    Sha256 hash;
    hash.Update(m.data, m.bytes);
    VerifyPinned(m.path, hash.HexDigest(), m.bytes, pinned);
  }
  [[noreturn]] void OutOfVocabulary(const Mapping& m, uint64_t index, uint64_t token) const {
    throw Failure(m.path + ": token " + std::to_string(token) + " at index " +
                      std::to_string(index) + " is outside the vocabulary (" +
                      std::to_string(vocab_) + ")",
                  kExitVerdict);
  }
  // Every token of the shard, before training reads any: not only those a window reads (the
  // tail past the last window, the windows a short run never reaches), as data.dataset does.
  void CheckVocabulary(const Mapping& m) const {
    const auto* at = static_cast<const unsigned char*>(m.data);
    for (uint64_t i = 0; i < m.tokens; ++i, at += width_) {
      uint64_t token = 0;
      for (int b = width_ - 1; b >= 0; --b) token = (token << 8) | at[b];
      if (token >= static_cast<uint64_t>(vocab_)) OutOfVocabulary(m, i, token);
    }
  }
  void Map(const std::filesystem::path& file) {
    // Without blocking: a FIFO in place of a shard is refused, not waited on.
    int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw Failure(file.string() + ": " + std::strerror(errno), kExitEnvironment);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw Failure(file.string() + ": not a regular file", kExitBadInput);
    }
    size_t bytes = static_cast<size_t>(st.st_size);
    if (bytes == 0 || bytes % static_cast<size_t>(width_) != 0) {
      ::close(fd);
      throw Failure(file.string() + ": " + std::to_string(bytes) +
                        " bytes is not a whole number of " + std::to_string(width_) +
                        "-byte tokens",
                    kExitVerdict);
    }
    void* data = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (data == MAP_FAILED) throw Failure(file.string() + ": mmap failed", kExitEnvironment);
    uint64_t tokens = bytes / static_cast<size_t>(width_);
    maps_.push_back({file.string(), data, bytes, total_, tokens});
    total_ += tokens;
  }
  int width_;
  int64_t vocab_;
  std::vector<Mapping> maps_;
  uint64_t total_ = 0;
};

}  // namespace

std::unique_ptr<TokenSource> SyntheticTokens(uint64_t seed, int64_t vocab, uint64_t length) {
  return std::make_unique<Synthetic>(seed, vocab, length);
}

std::unique_ptr<TokenSource> ShardTokens(const std::vector<std::filesystem::path>& files,
                                         int bytes_per_token, int64_t vocab,
                                         const std::vector<std::string>& sha256) {
  return std::make_unique<Shards>(files, bytes_per_token, vocab, sha256);
}

WindowLoader::WindowLoader(const TokenSource& source, int64_t seq_len, int64_t micro_batch,
                           uint64_t seed, bool shuffle, int64_t eval_windows)
    : source_(source),
      seq_len_(seq_len),
      micro_batch_(micro_batch),
      seed_(seed),
      shuffle_(shuffle),
      eval_windows_(eval_windows) {
  if (eval_windows < 1) throw Failure("the loader needs at least one eval window", kExitBadInput);
  int64_t windows = source.size() > 1 ? static_cast<int64_t>((source.size() - 1) / seq_len) : 0;
  train_windows_ = windows - eval_windows;
  if (train_windows_ < micro_batch) {
    throw Failure(source.Describe() + " holds " + std::to_string(windows) + " windows of " +
                      std::to_string(seq_len + 1) + " tokens; need " +
                      std::to_string(micro_batch + eval_windows) + " (micro_batch + eval windows)",
                  kExitBadInput);
  }
  Reshuffle();
}

void WindowLoader::Reshuffle() {
  order_.clear();
  if (!shuffle_) return;
  order_.resize(static_cast<size_t>(train_windows_));
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
  uint64_t state = SplitMix64(seed_ ^ (0x5eed0000ull + epoch_));
  for (size_t i = order_.size(); i > 1; --i) {  // Fisher-Yates, portable across libraries
    state = SplitMix64(state);
    std::swap(order_[i - 1], order_[state % i]);
  }
}

uint64_t WindowLoader::WindowAt(uint64_t position) const {
  return shuffle_ ? order_[position] : position;
}

void WindowLoader::Fill(Batch& b, int64_t row, uint64_t window) const {
  std::vector<int64_t> tokens(static_cast<size_t>(seq_len_ + 1));
  source_.Read(window * static_cast<uint64_t>(seq_len_), tokens.size(), tokens.data());
  std::copy(tokens.begin(), tokens.end() - 1, b.inputs.begin() + row * seq_len_);
  std::copy(tokens.begin() + 1, tokens.end(), b.targets.begin() + row * seq_len_);
}

Batch WindowLoader::Next() {
  Batch b{micro_batch_, seq_len_, std::vector<int64_t>(micro_batch_ * seq_len_),
          std::vector<int64_t>(micro_batch_ * seq_len_)};
  for (int64_t row = 0; row < micro_batch_; ++row) {
    if (cursor_ == static_cast<uint64_t>(train_windows_)) {
      ++epoch_;
      cursor_ = 0;
      Reshuffle();
    }
    Fill(b, row, WindowAt(cursor_++));
  }
  return b;
}

Batch WindowLoader::EvalBatch(int64_t index) const {
  Batch b{micro_batch_, seq_len_, std::vector<int64_t>(micro_batch_ * seq_len_),
          std::vector<int64_t>(micro_batch_ * seq_len_)};
  for (int64_t row = 0; row < micro_batch_; ++row) {
    uint64_t window =
        static_cast<uint64_t>(train_windows_ + (index * micro_batch_ + row) % eval_windows_);
    Fill(b, row, window);
  }
  return b;
}

nlohmann::json WindowLoader::State() const {
  return {{"epoch", epoch_},
          {"cursor", cursor_},
          {"seed", seed_},
          {"shuffle", shuffle_},
          {"train_windows", train_windows_},
          {"seq_len", seq_len_}};
}

namespace {

// The unsigned integer `key` of a data-loader state, or nullopt when it is missing or mistyped
// (a checkpoint's state is read without trusting it).
std::optional<uint64_t> UnsignedIn(const nlohmann::json& state, const char* key) {
  const auto it = state.find(key);
  if (it == state.end() || !it->is_number_integer()) return std::nullopt;
  // A state built in memory holds signed integers, one parsed from text unsigned ones.
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->get<int64_t>() < 0) return std::nullopt;
  return static_cast<uint64_t>(it->get<int64_t>());
}

}  // namespace

void WindowLoader::Restore(const nlohmann::json& state) {
  if (!state.is_object()) throw Failure("data-loader state is not an object", kExitVerdict);
  const auto shuffle = state.find("shuffle");
  if (UnsignedIn(state, "train_windows") != static_cast<uint64_t>(train_windows_) ||
      UnsignedIn(state, "seq_len") != static_cast<uint64_t>(seq_len_) ||
      UnsignedIn(state, "seed") != seed_ || shuffle == state.end() || *shuffle != shuffle_) {
    // The state's own values are not echoed: they may be anything a crafted checkpoint holds.
    throw Failure("data-loader state was saved for different data (this run: train_windows " +
                      std::to_string(train_windows_) + ", seq_len " + std::to_string(seq_len_) +
                      ", seed " + std::to_string(seed_) + ", shuffle " +
                      (shuffle_ ? "true" : "false") + ")",
                  kExitVerdict);
  }
  const std::optional<uint64_t> epoch = UnsignedIn(state, "epoch");
  const std::optional<uint64_t> cursor = UnsignedIn(state, "cursor");
  if (!epoch || !cursor) {
    throw Failure("data-loader state lacks a non-negative integer epoch or cursor", kExitVerdict);
  }
  if (*cursor > static_cast<uint64_t>(train_windows_)) {
    throw Failure("data-loader state has cursor " + std::to_string(*cursor) + " past the epoch's " +
                      std::to_string(train_windows_) + " windows",
                  kExitVerdict);
  }
  epoch_ = *epoch;
  cursor_ = *cursor;
  Reshuffle();
}

}  // namespace trainlock::validate
