// Training data for the validator: a token stream (seeded synthetic, or the pinned dataset's
// token shards memory-mapped) cut into windows of seq_len + 1 tokens, served in a seeded,
// optionally shuffled order. The loader's position is explicit state so a checkpoint can
// carry it. No LibTorch here: batches are plain vectors.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace trainlock::validate {

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual uint64_t size() const = 0;
  // Copies tokens [start, start + n) into `out`.
  virtual void Read(uint64_t start, uint64_t n, int64_t* out) const = 0;
  virtual std::string Describe() const = 0;
};

// A learnable synthetic stream: blocks of 8 tokens whose first token is a seeded hash and the
// rest follow an arithmetic pattern, so loss falls as the model trains.
std::unique_ptr<TokenSource> SyntheticTokens(uint64_t seed, int64_t vocab, uint64_t length);

// Token shards (.bin of little-endian uint16 or uint32), memory-mapped and concatenated.
// Throws std::runtime_error naming the file when a shard cannot be mapped or is not a
// multiple of the token size, or when any token of a shard is >= vocab (every token is checked
// once, after the shard is verified and before any is read). `sha256`, when given,
// holds the lock's hash of each file (by position): each mapped shard is hashed once, before
// any token is read, and a mismatch throws ArtifactMismatch (support/pinned_files.h).
std::unique_ptr<TokenSource> ShardTokens(const std::vector<std::filesystem::path>& files,
                                         int bytes_per_token, int64_t vocab,
                                         const std::vector<std::string>& sha256 = {});

struct Batch {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> inputs;   // rows x cols
  std::vector<int64_t> targets;  // inputs shifted by one token
};

class WindowLoader {
 public:
  // Reserves the last `eval_windows` windows of the source for evaluation.
  WindowLoader(const TokenSource& source, int64_t seq_len, int64_t micro_batch, uint64_t seed,
               bool shuffle, int64_t eval_windows);

  Batch Next();
  Batch EvalBatch(int64_t index) const;

  nlohmann::json State() const;
  // Throws std::runtime_error when the state does not belong to this loader's data.
  void Restore(const nlohmann::json& state);
  int64_t train_windows() const { return train_windows_; }

 private:
  uint64_t WindowAt(uint64_t position) const;  // the window served at this position of an epoch
  void Fill(Batch& b, int64_t row, uint64_t window) const;

  const TokenSource& source_;
  int64_t seq_len_, micro_batch_;
  uint64_t seed_;
  bool shuffle_;
  int64_t train_windows_, eval_windows_;
  uint64_t epoch_ = 0, cursor_ = 0;
  std::vector<uint64_t> order_;  // permutation of the current epoch (shuffle only)
  void Reshuffle();
};

uint64_t SplitMix64(uint64_t x);

}  // namespace trainlock::validate
