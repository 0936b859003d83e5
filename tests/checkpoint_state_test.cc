// A checkpoint's run state (manifest.json's "state": the engine spec it was trained from) is
// read without trusting it: every member the worker builds from is checked for type and range
// first, and a crafted one is refused as a
// checkpoint error naming the manifest and the member, never with a JSON library's text, a
// division by zero or a huge allocation. The data-loader position is restored the same way.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "base/failure.h"
#include "engines/native/checkpoint_manifest.h"
#include "engines/native/checkpoint_state.h"
#include "engines/native/token_data.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

nlohmann::json SeedState() {
  return nlohmann::json::parse(
      testing::ReadFile(testing::SourceDir() / "tests/fuzz/seeds/checkpoint_state/synthetic.json"));
}

// The CheckpointError ReadCheckpointRunState throws for `state`, or "" when it accepts it.
std::string RefusalOf(const nlohmann::json& state) {
  try {
    ReadCheckpointRunState(state, "ckpt/manifest.json");
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckpointRunState, ReadsTheStateTheNativeEngineWrites) {
  const CheckpointRunState run = ReadCheckpointRunState(SeedState(), "ckpt/manifest.json");
  EXPECT_EQ(run.spec.seed, 7u);
  EXPECT_EQ(run.spec.eval_batches, 2);
  EXPECT_EQ(run.spec.config.training.seq_len, 32);
  EXPECT_EQ(run.spec.data.kind, "synthetic");
  EXPECT_EQ(run.spec_sha256.size(), 64u);
}

TEST(CheckpointRunState, RefusesAZeroTokenWidthBeforeAnythingDividesByIt) {
  nlohmann::json state = SeedState();
  state["spec"]["data"] = {
      {"kind", "shards"}, {"files", nlohmann::json::array()}, {"bytes_per_token", 0}};
  EXPECT_EQ(RefusalOf(state),
            "ckpt/manifest.json: state.spec.data.bytes_per_token 0 is out of range [2, 4]");
}

TEST(CheckpointRunState, RefusesASyntheticLengthOfMoreWindowsThanTheLimit) {
  nlohmann::json state = SeedState();
  state["spec"]["data"]["length"] = uint64_t{1} << 62;
  EXPECT_NE(RefusalOf(state).find("state.spec.data.length 4611686018427387904 is over"),
            std::string::npos)
      << RefusalOf(state);
}

TEST(CheckpointRunState, RefusesAMistypedMemberNamingIt) {
  nlohmann::json state = SeedState();
  state["spec"]["seed"] = "seven";
  EXPECT_EQ(RefusalOf(state), "ckpt/manifest.json: state.spec.seed is not a non-negative integer");
  state = SeedState();
  state.erase("spec");
  EXPECT_EQ(RefusalOf(state), "ckpt/manifest.json: state.spec is missing");
  state = SeedState();
  state["spec_sha256"] = "abc";
  EXPECT_EQ(RefusalOf(state), "ckpt/manifest.json: state.spec_sha256 is not a SHA-256");
  EXPECT_EQ(RefusalOf(nlohmann::json::array()), "ckpt/manifest.json: state is not an object");
}

TEST(CheckpointRunState, RefusesEvalBatchesOutOfRangeWithoutOverflow) {
  nlohmann::json state = SeedState();
  state["spec"]["eval_batches"] = uint64_t{1} << 63;
  EXPECT_EQ(RefusalOf(state), "ckpt/manifest.json: state.spec.eval_batches is not an integer");
  state["spec"]["eval_batches"] = -3;
  EXPECT_EQ(RefusalOf(state),
            "ckpt/manifest.json: state.spec.eval_batches -3 is out of range [1, 1048576]");
}

TEST(CheckpointRunState, RefusesAShapeTheTrainingConfigWouldRefuse) {
  nlohmann::json state = SeedState();
  state["spec"]["model"]["num_kv_heads"] = 3;  // 4 heads do not share 3 kv heads
  EXPECT_NE(RefusalOf(state).find("state.spec.model.num_kv_heads breaks a rule: model.num_heads 4 "
                                  "is not a multiple of model.num_kv_heads 3"),
            std::string::npos)
      << RefusalOf(state);
  state = SeedState();
  state["spec"]["training"]["optimizer"]["lr"] = 0;
  EXPECT_EQ(RefusalOf(state),
            "ckpt/manifest.json: state.spec.training.optimizer.lr is not above 0");
}

// The data-loader's position, restored from a crafted state.
std::string LoaderRefusal(const nlohmann::json& loader_state) {
  const CheckpointRunState run = ReadCheckpointRunState(SeedState(), "ckpt/manifest.json");
  const auto source = SyntheticTokens(7, run.spec.config.model.vocab_size, 64 * 32 + 1);
  WindowLoader loader(*source, 32, 4, 7, true, 8);
  try {
    loader.Restore(loader_state);
  } catch (const Failure& e) {
    return e.what();
  }
  return "";
}

TEST(CheckpointRunState, RestoresTheDataLoaderPositionItWrote) {
  EXPECT_EQ(LoaderRefusal(SeedState()["data_loader"]), "");
}

TEST(CheckpointRunState, RefusesAMistypedLoaderPositionWithoutEchoingIt) {
  nlohmann::json position = SeedState()["data_loader"];
  position["seed"] = "\x1b[2J";
  const std::string refusal = LoaderRefusal(position);
  EXPECT_NE(refusal.find("saved for different data"), std::string::npos) << refusal;
  EXPECT_EQ(refusal.find('\x1b'), std::string::npos) << refusal;
  position = SeedState()["data_loader"];
  position["cursor"] = -1;
  EXPECT_EQ(LoaderRefusal(position),
            "data-loader state lacks a non-negative integer epoch or cursor");
  EXPECT_NE(LoaderRefusal(nlohmann::json::array()).find("not an object"), std::string::npos);
}

}  // namespace
}  // namespace trainlock::validate
