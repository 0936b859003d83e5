// Training data for the validator: the synthetic stream is seeded and inside the vocabulary;
// token shards (little-endian uint16/uint32, concatenated) read back exactly and refuse
// out-of-vocabulary tokens and ragged files; the window loader serves windows in order or in a
// seeded per-epoch shuffle that visits every training window once, keeps the evaluation windows
// apart, and resumes exactly from its saved state.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/failure.h"
#include "engines/native/token_data.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteFile;

// A stream whose token at position p is p, so a window is identified by its first input token.
class Positions : public TokenSource {
 public:
  explicit Positions(uint64_t size) : size_(size) {}
  uint64_t size() const override { return size_; }
  void Read(uint64_t start, uint64_t n, int64_t* out) const override {
    for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>(start + i);
  }
  std::string Describe() const override { return "positions (" + std::to_string(size_) + ")"; }

 private:
  uint64_t size_;
};

std::vector<int64_t> ReadAll(const TokenSource& source) {
  std::vector<int64_t> tokens(source.size());
  source.Read(0, tokens.size(), tokens.data());
  return tokens;
}

// The window each row of `b` holds, for a loader over Positions.
std::vector<int64_t> Windows(const Batch& b) {
  std::vector<int64_t> windows;
  for (int64_t row = 0; row < b.rows; ++row) windows.push_back(b.inputs[row * b.cols] / b.cols);
  return windows;
}

// The windows of the next `count` training rows (count a multiple of the micro-batch).
std::vector<int64_t> NextWindows(WindowLoader& loader, int64_t count) {
  std::vector<int64_t> windows;
  while (static_cast<int64_t>(windows.size()) < count) {
    for (int64_t w : Windows(loader.Next())) windows.push_back(w);
  }
  return windows;
}

// Little-endian bytes of `tokens`, `width` bytes each.
std::string ShardBytes(const std::vector<uint64_t>& tokens, int width) {
  std::string bytes;
  for (uint64_t t : tokens) {
    for (int b = 0; b < width; ++b) bytes.push_back(static_cast<char>((t >> (8 * b)) & 0xff));
  }
  return bytes;
}

template <typename F>
std::string RuntimeError(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no std::runtime_error was thrown";
  return "";
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// --- SyntheticTokens ---

TEST(TokenDataSyntheticTokensTest, IsDeterministicForASeed) {
  auto a = SyntheticTokens(42, 1000, 4096);
  auto b = SyntheticTokens(42, 1000, 4096);
  EXPECT_EQ(a->size(), 4096u);
  EXPECT_EQ(ReadAll(*a), ReadAll(*b));
}

TEST(TokenDataSyntheticTokensTest, DiffersAcrossSeeds) {
  EXPECT_NE(ReadAll(*SyntheticTokens(1, 1000, 4096)), ReadAll(*SyntheticTokens(2, 1000, 4096)));
}

TEST(TokenDataSyntheticTokensTest, TokensAreInsideTheVocabulary) {
  for (int64_t vocab : {2, 50, 1000, 50257}) {
    SCOPED_TRACE(vocab);
    for (int64_t t : ReadAll(*SyntheticTokens(7, vocab, 4096))) {
      ASSERT_GE(t, 0);
      ASSERT_LT(t, vocab);
    }
  }
}

TEST(TokenDataSyntheticTokensTest, AnyRangeReadsTheSameTokensAsTheWhole) {
  auto source = SyntheticTokens(3, 500, 1000);
  std::vector<int64_t> all = ReadAll(*source);
  std::vector<int64_t> part(37);
  source->Read(501, part.size(), part.data());
  EXPECT_TRUE(std::equal(part.begin(), part.end(), all.begin() + 501));
}

// --- ShardTokens ---

class TokenDataShardTokensTest : public ::testing::Test {
 protected:
  fs::path Write(const std::string& name, const std::string& bytes) const {
    WriteFile(dir_.path() / name, bytes);
    return dir_.path() / name;
  }
  TempDir dir_;
};

TEST_F(TokenDataShardTokensTest, ReadsUint16ShardsConcatenated) {
  std::vector<uint64_t> first = {0, 1, 255, 256, 258, 65535, 4660};
  std::vector<uint64_t> second = {43981, 7, 513};
  auto source = ShardTokens(
      {Write("a.bin", ShardBytes(first, 2)), Write("b.bin", ShardBytes(second, 2))}, 2, 65536);
  ASSERT_EQ(source->size(), first.size() + second.size());
  std::vector<int64_t> want(first.begin(), first.end());
  want.insert(want.end(), second.begin(), second.end());
  EXPECT_EQ(ReadAll(*source), want);
  EXPECT_TRUE(Contains(source->Describe(), "2 token shard(s)")) << source->Describe();
}

TEST_F(TokenDataShardTokensTest, ReadsUint32ShardsConcatenated) {
  std::vector<uint64_t> first = {0, 65536, 70000, 16777216, 151935};
  std::vector<uint64_t> second = {1, 123456, 99999};
  auto source =
      ShardTokens({Write("a.bin", ShardBytes(first, 4)), Write("b.bin", ShardBytes(second, 4))}, 4,
                  int64_t{1} << 25);
  std::vector<int64_t> want(first.begin(), first.end());
  want.insert(want.end(), second.begin(), second.end());
  ASSERT_EQ(source->size(), want.size());
  EXPECT_EQ(ReadAll(*source), want);
  std::vector<int64_t> across(4);
  source->Read(4, 4, across.data());  // the last token of the first file and all of the second
  EXPECT_EQ(across, (std::vector<int64_t>{151935, 1, 123456, 99999}));
}

TEST_F(TokenDataShardTokensTest, RefusesATokenOutsideTheVocabularyNamingFileAndIndex) {
  fs::path a = Write("a.bin", ShardBytes({1, 2, 3}, 2));
  fs::path b = Write("b.bin", ShardBytes({4, 5, 6, 1000, 7}, 2));
  std::string error = RuntimeError([&] { ShardTokens({a, b}, 2, 1000); });
  EXPECT_TRUE(
      Contains(error, b.string() + ": token 1000 at index 3 is outside the vocabulary (1000)"))
      << error;
}

// The data rules are one: every token of every shard, not only those the windows read, is
// checked before training (a token in the tail past the last window, here).
TEST_F(TokenDataShardTokensTest, RefusesATokenOutsideTheVocabularyThatNoWindowReads) {
  std::vector<uint64_t> tokens(4096, 7);
  tokens.back() = 70000;
  fs::path a = Write("a.bin", ShardBytes(tokens, 4));
  std::string error = RuntimeError([&] { ShardTokens({a}, 4, 50000); });
  EXPECT_TRUE(Contains(error, a.string() + ": token 70000 at index 4095")) << error;
}

TEST_F(TokenDataShardTokensTest, RefusesAFileThatIsNotAWholeNumberOfTokens) {
  fs::path a = Write("a.bin", ShardBytes({1, 2}, 2));
  fs::path b = Write("b.bin", std::string(7, '\1'));
  std::string error = RuntimeError([&] { ShardTokens({a, b}, 2, 1000); });
  EXPECT_TRUE(Contains(error, b.string())) << error;
  EXPECT_TRUE(Contains(error, "7 bytes")) << error;

  fs::path c = Write("c.bin", std::string(6, '\1'));
  error = RuntimeError([&] { ShardTokens({c}, 4, 1000); });
  EXPECT_TRUE(Contains(error, c.string())) << error;
  EXPECT_TRUE(Contains(error, "4-byte tokens")) << error;
}

TEST_F(TokenDataShardTokensTest, RefusesAMissingFileNamingIt) {
  fs::path missing = dir_.path() / "missing.bin";
  std::string error = RuntimeError([&] { ShardTokens({missing}, 2, 1000); });
  EXPECT_TRUE(Contains(error, missing.string())) << error;
}

// --- WindowLoader ---

TEST(WindowLoaderTest, WithoutShuffleServesWindowsInOrder) {
  Positions source(1001);  // 125 windows of 8 + 1 tokens
  WindowLoader loader(source, 8, 4, /*seed=*/1, /*shuffle=*/false, /*eval_windows=*/5);
  ASSERT_EQ(loader.train_windows(), 120);
  Batch b = loader.Next();
  EXPECT_EQ(b.rows, 4);
  EXPECT_EQ(b.cols, 8);
  ASSERT_EQ(b.inputs.size(), 32u);
  std::vector<int64_t> first(32);
  std::iota(first.begin(), first.end(), 0);
  EXPECT_EQ(b.inputs, first);
  // Over two epochs the windows run 0, 1, ..., 119, 0, 1, ...
  std::vector<int64_t> windows = NextWindows(loader, 2 * 120);
  for (size_t i = 0; i < windows.size(); ++i) {
    ASSERT_EQ(windows[i], static_cast<int64_t>((i + 4) % 120)) << i;
  }
}

TEST(WindowLoaderTest, TargetsAreTheInputsShiftedByOneToken) {
  auto source = SyntheticTokens(5, 97, 2000);
  std::vector<int64_t> all = ReadAll(*source);
  const int64_t seq = 16, mb = 3;
  WindowLoader loader(*source, seq, mb, 1, /*shuffle=*/false, 2);
  for (int64_t step = 0; step < 5; ++step) {
    Batch b = loader.Next();
    for (int64_t row = 0; row < mb; ++row) {
      const int64_t start = (step * mb + row) * seq;
      for (int64_t j = 0; j < seq; ++j) {
        ASSERT_EQ(b.inputs[row * seq + j], all[start + j]) << step << "," << row << "," << j;
        ASSERT_EQ(b.targets[row * seq + j], all[start + j + 1]) << step << "," << row << "," << j;
      }
    }
  }
}

TEST(WindowLoaderTest, ShuffledEpochVisitsEveryTrainingWindowOnce) {
  Positions source(8 * 48 + 1);  // 48 windows
  WindowLoader loader(source, 8, 4, /*seed=*/9, /*shuffle=*/true, /*eval_windows=*/8);
  ASSERT_EQ(loader.train_windows(), 40);
  std::vector<int64_t> epoch = NextWindows(loader, 40);
  std::vector<int64_t> sorted = epoch;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> all(40);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);
  EXPECT_NE(epoch, all) << "a shuffled epoch should not be in order";
}

TEST(WindowLoaderTest, EachShuffledEpochHasANewOrder) {
  Positions source(8 * 48 + 1);
  WindowLoader loader(source, 8, 4, 9, /*shuffle=*/true, 8);
  std::vector<int64_t> first = NextWindows(loader, 40);
  std::vector<int64_t> second = NextWindows(loader, 40);
  std::vector<int64_t> sorted = second;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> all(40);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);
  EXPECT_NE(first, second);
}

TEST(WindowLoaderTest, ShuffleOrderFollowsTheSeed) {
  Positions source(8 * 48 + 1);
  WindowLoader a(source, 8, 4, 9, true, 8), b(source, 8, 4, 9, true, 8),
      c(source, 8, 4, 10, true, 8);
  std::vector<int64_t> order = NextWindows(a, 40);
  EXPECT_EQ(order, NextWindows(b, 40));
  EXPECT_NE(order, NextWindows(c, 40));
}

TEST(WindowLoaderTest, AnEpochBoundaryInsideABatchContinuesIntoTheNextEpoch) {
  Positions source(8 * 13 + 1);  // 13 windows, 10 for training: batches of 4 straddle epochs
  WindowLoader loader(source, 8, 4, 3, /*shuffle=*/true, 3);
  ASSERT_EQ(loader.train_windows(), 10);
  std::vector<int64_t> windows = NextWindows(loader, 20);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::set<int64_t> seen(windows.begin() + epoch * 10, windows.begin() + epoch * 10 + 10);
    EXPECT_EQ(seen.size(), 10u) << "epoch " << epoch;
    EXPECT_LT(*seen.rbegin(), 10) << "epoch " << epoch;
  }
}

TEST(WindowLoaderTest, EvalBatchesUseOnlyTheReservedLastWindows) {
  const int64_t seq = 8, mb = 4, eval = 6;
  Positions source(seq * 50 + 1);  // 50 windows, the last 6 reserved
  for (bool shuffle : {false, true}) {
    SCOPED_TRACE(shuffle);
    WindowLoader loader(source, seq, mb, 11, shuffle, eval);
    ASSERT_EQ(loader.train_windows(), 44);
    std::set<int64_t> train;
    for (int64_t w : NextWindows(loader, 2 * 44)) train.insert(w);
    EXPECT_EQ(train.size(), 44u);
    EXPECT_EQ(*train.rbegin(), 43);

    std::set<int64_t> evaluated;
    for (int64_t i = 0; i < 6; ++i) {
      Batch b = loader.EvalBatch(i);
      for (int64_t w : Windows(b)) {
        EXPECT_GE(w, 44);
        EXPECT_LT(w, 50);
        EXPECT_FALSE(train.count(w)) << "eval window " << w << " was also trained on";
        evaluated.insert(w);
      }
      // No evaluation input token was ever a training input token.
      for (int64_t t : b.inputs) EXPECT_GE(t, 44 * seq);
    }
    EXPECT_EQ(evaluated.size(), static_cast<size_t>(eval)) << "every reserved window is used";
  }
}

TEST(WindowLoaderTest, EvalBatchesAreFixedAndDoNotMoveTheTrainingStream) {
  Positions source(8 * 50 + 1);
  WindowLoader a(source, 8, 4, 11, true, 6), b(source, 8, 4, 11, true, 6);
  a.Next();
  b.Next();
  Batch e1 = a.EvalBatch(1);
  Batch e1_again = a.EvalBatch(1);
  EXPECT_EQ(e1.inputs, e1_again.inputs);
  EXPECT_EQ(e1.targets, e1_again.targets);
  EXPECT_EQ(a.Next().inputs, b.Next().inputs);
}

TEST(WindowLoaderTest, RestoredStateServesExactlyTheSameNextBatches) {
  Positions source(8 * 48 + 1);
  WindowLoader original(source, 8, 4, 9, /*shuffle=*/true, 8);
  for (int i = 0; i < 13; ++i) original.Next();  // into the second epoch
  // The state travels through a checkpoint as JSON text.
  nlohmann::json state = nlohmann::json::parse(original.State().dump());

  WindowLoader resumed(source, 8, 4, 9, /*shuffle=*/true, 8);
  resumed.Next();
  resumed.Restore(state);
  for (int i = 0; i < 25; ++i) {  // across the next epoch boundary too
    Batch want = original.Next();
    Batch got = resumed.Next();
    ASSERT_EQ(got.inputs, want.inputs) << "batch " << i;
    ASSERT_EQ(got.targets, want.targets) << "batch " << i;
  }
  EXPECT_EQ(resumed.State(), original.State());
}

TEST(WindowLoaderTest, RestoredStateAtAnEpochStartServesTheSameBatches) {
  Positions source(8 * 48 + 1);
  WindowLoader original(source, 8, 4, 9, /*shuffle=*/true, 8);
  for (int i = 0; i < 10; ++i) original.Next();  // exactly one epoch of 40 windows
  WindowLoader resumed(source, 8, 4, 9, /*shuffle=*/true, 8);
  resumed.Restore(original.State());
  for (int i = 0; i < 12; ++i) ASSERT_EQ(resumed.Next().inputs, original.Next().inputs) << i;
}

TEST(WindowLoaderTest, RefusesStateFromALoaderOverDifferentData) {
  Positions source(8 * 48 + 1);
  WindowLoader loader(source, 8, 4, 9, true, 8);
  loader.Next();

  WindowLoader other_seq_len(source, 6, 4, 9, true, 8);
  std::string error = RuntimeError([&] { other_seq_len.Restore(loader.State()); });
  EXPECT_TRUE(Contains(error, "different data")) << error;

  WindowLoader other_seed(source, 8, 4, 10, true, 8);
  error = RuntimeError([&] { other_seed.Restore(loader.State()); });
  EXPECT_TRUE(Contains(error, "different data")) << error;

  Positions longer(8 * 60 + 1);
  WindowLoader other_size(longer, 8, 4, 9, true, 8);
  error = RuntimeError([&] { other_size.Restore(loader.State()); });
  EXPECT_TRUE(Contains(error, "different data")) << error;
}

TEST(WindowLoaderTest, RefusesStateFromALoaderWithOtherShuffling) {
  Positions source(8 * 48 + 1);
  WindowLoader shuffled(source, 8, 4, 9, /*shuffle=*/true, 8);
  shuffled.Next();
  WindowLoader ordered(source, 8, 4, 9, /*shuffle=*/false, 8);
  EXPECT_THROW(ordered.Restore(shuffled.State()), Failure);
}

TEST(WindowLoaderTest, RefusesStateWithACursorPastTheEpoch) {
  Positions source(8 * 48 + 1);
  WindowLoader loader(source, 8, 4, 9, true, 8);
  nlohmann::json state = loader.State();
  state["cursor"] = loader.train_windows() + 1;
  EXPECT_THROW(loader.Restore(state), Failure);
}

TEST(WindowLoaderTest, RefusesASourceTooSmallForAMicroBatchAndTheEvalWindows) {
  Positions source(8 * 6 + 1);  // 6 windows; 4 + 4 are needed
  std::string error = RuntimeError([&] { WindowLoader(source, 8, 4, 1, false, 4); });
  EXPECT_TRUE(Contains(error, "positions (49)")) << error;
  EXPECT_TRUE(Contains(error, "holds 6 windows of 9 tokens")) << error;
  EXPECT_TRUE(Contains(error, "need 8")) << error;
}

TEST(WindowLoaderTest, RefusesAnEmptySource) {
  Positions source(0);
  std::string error = RuntimeError([&] { WindowLoader(source, 8, 1, 1, false, 1); });
  EXPECT_TRUE(Contains(error, "holds 0 windows")) << error;
}

TEST(WindowLoaderTest, RefusesZeroEvalWindows) {
  Positions source(8 * 20 + 1);
  std::string error = RuntimeError([&] { WindowLoader(source, 8, 4, 1, false, 0); });
  EXPECT_TRUE(Contains(error, "eval window")) << error;
}

TEST(WindowLoaderTest, ServesShardTokens) {
  TempDir dir;
  std::vector<uint64_t> tokens(8 * 10 + 1);
  std::iota(tokens.begin(), tokens.end(), 100);
  WriteFile(dir.path() / "a.bin",
            ShardBytes(std::vector<uint64_t>(tokens.begin(), tokens.begin() + 30), 2));
  WriteFile(dir.path() / "b.bin",
            ShardBytes(std::vector<uint64_t>(tokens.begin() + 30, tokens.end()), 2));
  auto source = ShardTokens({dir.path() / "a.bin", dir.path() / "b.bin"}, 2, 1000);
  WindowLoader loader(*source, 8, 2, 1, false, 2);
  loader.Next();
  Batch b = loader.Next();  // windows 2 and 3: tokens 116..132, from a.bin into b.bin
  std::vector<int64_t> want(16), want_targets(16);
  std::iota(want.begin(), want.end(), 116);
  std::iota(want_targets.begin(), want_targets.end(), 117);
  EXPECT_EQ(b.inputs, want);
  EXPECT_EQ(b.targets, want_targets);
}

}  // namespace
}  // namespace trainlock::validate
