// The engine spec (run/engine_spec.h) is the one description of a run every engine trains:
// what the coordinator writes reads back as the same run, and a spec that is not one the
// coordinator could write (a mistyped member, a value the training config refuses, a relative
// pinned path, model files in two directories) is refused naming the member.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "base/diagnostic.h"
#include "project/train_config.h"
#include "run/engine_spec.h"
#include "test_support.h"

namespace trainlock {
namespace {

EngineSpec TinySpec() {
  EngineSpec spec;
  spec.engine = "native";
  spec.lock_sha256 = std::string(64, 'a');
  spec.config_sha256 = std::string(64, 'b');
  spec.seed = 1234;
  spec.eval_batches = 2;
  spec.config = LoadTrainConfig(
      testing::ReadFile(testing::SourceDir() / "examples/tiny/configs/tiny.yaml"), "tiny.yaml");
  spec.data.seed = 1234;
  spec.data.length = 64 * 32 + 1;
  return spec;
}

// The message ReadEngineSpec refuses `doc` with, or "" when it reads it.
std::string RefusalOf(const nlohmann::json& doc) {
  try {
    ReadEngineSpec(doc, "engine-spec.json");
  } catch (const InputError& e) {
    return e.diagnostics().items().front().message;
  }
  return "";
}

TEST(EngineSpec, ReadsBackTheRunItWrote) {
  EngineSpec spec = TinySpec();
  spec.config.model.rope_scaling = {"llama3", 8.0, 1.0, 4.0, 8192};
  spec.model_files = {{"/p/model/model.safetensors", "model.safetensors", std::string(64, 'c'), 10},
                      {"/p/model/config.json", "config.json", std::string(64, 'd'), 5}};
  spec.model_dir = "/p/model";
  const nlohmann::json written = EngineSpecJson(spec);
  const EngineSpec read = ReadEngineSpec(written, "engine-spec.json");
  EXPECT_EQ(EngineSpecJson(read), written);
  EXPECT_EQ(read.config.model.rope_scaling, spec.config.model.rope_scaling);
  EXPECT_EQ(read.model_dir, "/p/model");
}

TEST(EngineSpec, ReadsShardsWithTheirHashes) {
  EngineSpec spec = TinySpec();
  spec.data = {"shards", 0, 0, {{"/p/data/a.bin", "a.bin", std::string(64, 'e'), 4096}}, 2};
  const EngineSpec read = ReadEngineSpec(EngineSpecJson(spec), "engine-spec.json");
  ASSERT_EQ(read.data.files.size(), 1u);
  EXPECT_EQ(read.data.files[0].sha256, std::string(64, 'e'));
  EXPECT_EQ(read.data.bytes_per_token, 2);
}

TEST(EngineSpec, RefusesAMistypedMemberNamingIt) {
  nlohmann::json doc = EngineSpecJson(TinySpec());
  doc["training"]["optimizer"]["lr"] = "fast";
  EXPECT_EQ(RefusalOf(doc), "spec.training.optimizer.lr is not a number");
  doc = EngineSpecJson(TinySpec());
  doc["model"].erase("vocab_size");
  EXPECT_EQ(RefusalOf(doc), "spec.model.vocab_size is missing");
  doc = EngineSpecJson(TinySpec());
  doc["schema"] = "trainlock.engine-spec/2";
  EXPECT_EQ(RefusalOf(doc), "spec.schema 'trainlock.engine-spec/2' is not trainlock.engine-spec/1");
}

// The spec reader takes the training config's ranges (run_config.h): a value `check` refuses
// in configs/*.yaml is refused in a spec too.
TEST(EngineSpec, RefusesWhatTheTrainingConfigRefuses) {
  nlohmann::json doc = EngineSpecJson(TinySpec());
  doc["training"]["seq_len"] = 0;
  EXPECT_EQ(RefusalOf(doc), "spec.training.seq_len 0 is out of range [1, 1048576]");
  doc = EngineSpecJson(TinySpec());
  doc["model"]["dropout"] = 0.95;
  EXPECT_EQ(RefusalOf(doc), "spec.model.dropout 0.95 is out of range [0.0, 0.9]");
  doc = EngineSpecJson(TinySpec());
  doc["model"]["hidden_size"] = 66;  // 66 / 4 heads does not divide
  EXPECT_EQ(RefusalOf(doc),
            "spec.model.num_heads breaks a rule: model.hidden_size 66 is not divisible by "
            "model.num_heads 4");
  doc = EngineSpecJson(TinySpec());
  doc["training"]["parallelism"] = "tp";
  EXPECT_EQ(RefusalOf(doc), "spec.training.parallelism 'tp' is not one the engines train");
}

TEST(EngineSpec, RefusesARelativeOrUnhashedPinnedFile) {
  nlohmann::json doc = EngineSpecJson(TinySpec());
  doc["data"] = {
      {"kind", "shards"},
      {"bytes_per_token", 2},
      {"files",
       {{{"path", "a.bin"}, {"name", "a.bin"}, {"sha256", std::string(64, 'e')}, {"size", 1}}}}};
  EXPECT_EQ(RefusalOf(doc), "spec.data.files[0].path is not an absolute path");
  doc["data"]["files"][0]["path"] = "/p/a.bin";
  doc["data"]["files"][0]["sha256"] = "ABC";
  EXPECT_EQ(RefusalOf(doc), "spec.data.files[0].sha256 is not a lowercase hex SHA-256");
}

// A local model's file may be a symlink inside the project: its path is where it resolves,
// its name what the loader reads under the model's directory.
TEST(EngineSpec, ReadsAModelFileWhosePathIsNotUnderItsDirectory) {
  EngineSpec spec = TinySpec();
  spec.model_files = {{"/p/blobs/ab12", "model.safetensors", std::string(64, 'c'), 10}};
  spec.model_dir = "/p/model";
  EXPECT_EQ(RefusalOf(EngineSpecJson(spec)), "");
}

TEST(EngineSpec, RefusesModelFilesWithoutAnAbsoluteDirectory) {
  EngineSpec spec = TinySpec();
  spec.model_files = {
      {"/p/model/model.safetensors", "model.safetensors", std::string(64, 'c'), 10}};
  spec.model_dir = "model";
  EXPECT_EQ(RefusalOf(EngineSpecJson(spec)), "spec.model.dir is not an absolute path");
  nlohmann::json doc = EngineSpecJson(spec);
  doc["model"].erase("dir");
  EXPECT_EQ(RefusalOf(doc), "spec.model.dir is missing");
}

TEST(EngineSpec, RefusesASyntheticStreamTooLongToAllocate) {
  nlohmann::json doc = EngineSpecJson(TinySpec());
  doc["data"]["length"] = uint64_t{1} << 62;
  EXPECT_NE(RefusalOf(doc).find("spec.data.length 4611686018427387904 is over 67108864 windows"),
            std::string::npos)
      << RefusalOf(doc);
}

}  // namespace
}  // namespace trainlock
