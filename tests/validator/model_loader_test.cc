// Loading Hugging Face model directories into the reference decoder: a single file, BF16/F16
// files and a sharded model with model.safetensors.index.json load every parameter exactly; the
// names HF writes but the model does not hold (a tied lm_head, rotary inv_freq buffers) are
// ignored; and every disagreement (shape, dtype, a missing or unexpected tensor, config.json, a
// broken index, duplicated tensors, no weights at all) is its own ModelLoadError naming the file
// and the tensor or key.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engines/native/llama.h"
#include "engines/native/model_loader.h"
#include "engines/native/safetensors.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteFile;

constexpr char kShard1[] = "model-00001-of-00002.safetensors";
constexpr char kShard2[] = "model-00002-of-00002.safetensors";

ModelConfig TinyConfig(bool tied = false) {
  ModelConfig c;
  c.architecture = "llama";
  c.hidden_size = 16;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.intermediate_size = 32;
  c.vocab_size = 50;
  c.tie_embeddings = tied;
  return c;
}

nlohmann::json ConfigJson(const ModelConfig& c) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", c.hidden_size},
          {"num_hidden_layers", c.num_layers},
          {"num_attention_heads", c.num_heads},
          {"num_key_value_heads", c.num_kv_heads},
          {"intermediate_size", c.intermediate_size},
          {"vocab_size", c.vocab_size},
          {"tie_word_embeddings", c.tie_embeddings},
          {"torch_dtype", "float32"}};
}

// A seeded model whose every parameter (norms included, which InitWeights sets to 1) is random,
// so that a parameter left unloaded cannot pass for a loaded one.
Llama SourceModel(const ModelConfig& c, uint64_t seed) {
  torch::manual_seed(seed);
  Llama model(c);
  torch::NoGradGuard no_grad;
  for (auto& item : model->named_parameters()) item.value().normal_(0.0, 1.0);
  return model;
}

// The model's parameters under their HF names, converted to `dtype`.
std::map<std::string, torch::Tensor> HfTensors(Llama& model, at::ScalarType dtype = at::kFloat) {
  std::map<std::string, torch::Tensor> tensors;
  for (auto& item : model->named_parameters()) {
    tensors[item.key()] = item.value().detach().to(dtype).clone();
  }
  return tensors;
}

void WriteTensors(const fs::path& file, const std::map<std::string, torch::Tensor>& tensors) {
  std::vector<NamedTensor> named;
  for (const auto& [name, tensor] : tensors) named.push_back({name, tensor});
  WriteSafetensors(file, named);
}

// Writes `tensors` split into the two shards (alternating by name) plus the index mapping each
// name to its shard.
void WriteSharded(const fs::path& dir, const std::map<std::string, torch::Tensor>& tensors) {
  std::map<std::string, torch::Tensor> first, second;
  nlohmann::json weight_map = nlohmann::json::object();
  bool odd = false;
  for (const auto& [name, tensor] : tensors) {
    (odd ? second : first)[name] = tensor;
    weight_map[name] = odd ? kShard2 : kShard1;
    odd = !odd;
  }
  WriteTensors(dir / kShard1, first);
  WriteTensors(dir / kShard2, second);
  WriteFile(
      dir / "model.safetensors.index.json",
      nlohmann::json{{"metadata", {{"total_size", 12345}}}, {"weight_map", weight_map}}.dump(2));
}

void ExpectParametersEqual(Llama& got, const std::map<std::string, torch::Tensor>& want) {
  auto params = got->named_parameters();
  ASSERT_GT(params.size(), 0u);
  for (auto& item : params) {
    SCOPED_TRACE(item.key());
    ASSERT_TRUE(want.count(item.key()));
    EXPECT_EQ(item.value().scalar_type(), at::kFloat);
    EXPECT_TRUE(torch::equal(item.value(), want.at(item.key())));
  }
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class ModelLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = SourceModel(config_, 1);
    tensors_ = HfTensors(src_);
    WriteFile(dir() / "config.json", ConfigJson(config_).dump(2));
  }

  const fs::path& dir() const { return dir_.path(); }
  fs::path SingleFile() const { return dir() / "model.safetensors"; }

  // A freshly initialised model with a different seed from the source.
  Llama Destination() const {
    torch::manual_seed(2);
    return Llama(config_);
  }

  // The what() of the ModelLoadError that loading dir() throws; "" (and a failure) if none.
  std::string LoadError() {
    Llama dst = Destination();
    try {
      LoadHfWeights(dst, dir());
    } catch (const ModelLoadError& e) {
      return e.what();
    }
    ADD_FAILURE() << "loading " << dir() << " did not throw";
    return "";
  }

  ModelConfig config_ = TinyConfig();
  TempDir dir_;
  Llama src_{nullptr};
  std::map<std::string, torch::Tensor> tensors_;
};

TEST_F(ModelLoaderTest, LoadsEveryParameterFromASingleFile) {
  WriteTensors(SingleFile(), tensors_);
  Llama dst = Destination();
  ASSERT_FALSE(
      torch::equal(dst->model->embed_tokens->weight, tensors_["model.embed_tokens.weight"]));

  LoadedWeights info = LoadHfWeights(dst, dir());
  ExpectParametersEqual(dst, tensors_);
  EXPECT_EQ(info.tensors, static_cast<int64_t>(dst->named_parameters().size()));
  EXPECT_EQ(info.files, std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(info.dtypes, "F32");
}

TEST_F(ModelLoaderTest, LoadsBf16WeightsAsTheirBf16Values) {
  WriteTensors(SingleFile(), HfTensors(src_, at::kBFloat16));
  Llama dst = Destination();
  LoadedWeights info = LoadHfWeights(dst, dir());

  std::map<std::string, torch::Tensor> rounded;
  for (const auto& [name, t] : tensors_) rounded[name] = t.to(at::kBFloat16).to(at::kFloat);
  ExpectParametersEqual(dst, rounded);
  EXPECT_EQ(info.dtypes, "BF16");
}

TEST_F(ModelLoaderTest, LoadsF16WeightsAsTheirF16Values) {
  WriteTensors(SingleFile(), HfTensors(src_, at::kHalf));
  Llama dst = Destination();
  LoadedWeights info = LoadHfWeights(dst, dir());

  std::map<std::string, torch::Tensor> rounded;
  for (const auto& [name, t] : tensors_) rounded[name] = t.to(at::kHalf).to(at::kFloat);
  ExpectParametersEqual(dst, rounded);
  EXPECT_EQ(info.dtypes, "F16");
}

TEST_F(ModelLoaderTest, LoadsAShardedModelThroughItsIndex) {
  WriteSharded(dir(), tensors_);
  Llama dst = Destination();
  LoadedWeights info = LoadHfWeights(dst, dir());
  ExpectParametersEqual(dst, tensors_);
  EXPECT_EQ(info.files, (std::vector<std::string>{kShard1, kShard2}));
  EXPECT_EQ(info.tensors, static_cast<int64_t>(tensors_.size()));
}

TEST_F(ModelLoaderTest, AnUnpinnedSafetensorsFileBesideThePinnedOneIsNeverRead) {
  WriteTensors(SingleFile(), tensors_);
  WriteFile(dir() / "extra.safetensors", "not even safetensors: reading it would throw");
  Llama dst = Destination();
  LoadedWeights info = LoadHfWeights(
      dst, dir(), PinnedNames::value_type{{"config.json", ""}, {"model.safetensors", ""}});
  EXPECT_EQ(info.files, std::vector<std::string>{"model.safetensors"});
  ExpectParametersEqual(dst, tensors_);
}

TEST_F(ModelLoaderTest, APinnedConfigAloneLoadsNoUnpinnedWeights) {
  WriteTensors(SingleFile(), tensors_);
  Llama dst = Destination();
  try {
    LoadHfWeights(dst, dir(), PinnedNames::value_type{{"config.json", ""}});
    ADD_FAILURE() << "loaded weights the lock does not pin";
  } catch (const ModelLoadError& e) {
    EXPECT_TRUE(Contains(e.what(), "the lock pins no *.safetensors file")) << e.what();
  }
}

TEST_F(ModelLoaderTest, AnIndexNamingAShardTheLockDoesNotPinIsRefused) {
  WriteSharded(dir(), tensors_);
  Llama dst = Destination();
  try {
    LoadHfWeights(dst, dir(),
                  PinnedNames::value_type{
                      {"config.json", ""}, {"model.safetensors.index.json", ""}, {kShard1, ""}});
    ADD_FAILURE() << "loaded a shard the lock does not pin";
  } catch (const ModelLoadError& e) {
    EXPECT_TRUE(
        Contains(e.what(), std::string("shard '") + kShard2 + "' is not pinned by the lock"))
        << e.what();
  }
}

TEST_F(ModelLoaderTest, LoadsWithoutAnIndexFromSeveralFiles) {
  std::map<std::string, torch::Tensor> first, second;
  for (const auto& [name, t] : tensors_)
    (name.starts_with("model.layers.") ? second : first)[name] = t;
  WriteTensors(dir() / "a.safetensors", first);
  WriteTensors(dir() / "b.safetensors", second);
  Llama dst = Destination();
  LoadedWeights info = LoadHfWeights(dst, dir());
  ExpectParametersEqual(dst, tensors_);
  EXPECT_EQ(info.files, (std::vector<std::string>{"a.safetensors", "b.safetensors"}));
}

TEST_F(ModelLoaderTest, IgnoresRotaryInvFreqBuffers) {
  tensors_["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch::rand({2});
  tensors_["model.layers.1.self_attn.rotary_emb.inv_freq"] = torch::rand({2});
  WriteTensors(SingleFile(), tensors_);
  Llama dst = Destination();
  LoadedWeights info = LoadHfWeights(dst, dir());
  ExpectParametersEqual(dst, tensors_);
  EXPECT_EQ(info.tensors, static_cast<int64_t>(dst->named_parameters().size()));
}

TEST_F(ModelLoaderTest, TiedModelIgnoresAnLmHeadInTheFile) {
  config_ = TinyConfig(/*tied=*/true);
  src_ = SourceModel(config_, 1);
  tensors_ = HfTensors(src_);
  ASSERT_FALSE(tensors_.count("lm_head.weight"));
  WriteFile(dir() / "config.json", ConfigJson(config_).dump(2));
  std::map<std::string, torch::Tensor> on_disk = tensors_;
  on_disk["lm_head.weight"] = torch::randn({config_.vocab_size, config_.hidden_size});
  WriteTensors(SingleFile(), on_disk);

  Llama dst = Destination();
  LoadedWeights info = LoadHfWeights(dst, dir());
  ExpectParametersEqual(dst, tensors_);
  EXPECT_EQ(info.tensors, static_cast<int64_t>(tensors_.size()));
}

TEST_F(ModelLoaderTest, RefusesATensorOfTheWrongShape) {
  tensors_["model.layers.1.mlp.up_proj.weight"] = torch::randn({32, 8});
  WriteTensors(SingleFile(), tensors_);
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, SingleFile().string())) << error;
  EXPECT_TRUE(Contains(error, "'model.layers.1.mlp.up_proj.weight'")) << error;
  EXPECT_TRUE(Contains(error, "[32, 8]")) << error;
  EXPECT_TRUE(Contains(error, "[32, 16]")) << error;
}

TEST_F(ModelLoaderTest, RefusesAnIntegerTensorWhereAWeightIsExpected) {
  tensors_["model.norm.weight"] = torch::arange(16, torch::kLong);
  WriteTensors(SingleFile(), tensors_);
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, SingleFile().string())) << error;
  EXPECT_TRUE(Contains(error, "'model.norm.weight'")) << error;
  EXPECT_TRUE(Contains(error, "I64")) << error;
  EXPECT_TRUE(Contains(error, "F32, F16 or BF16")) << error;
}

TEST_F(ModelLoaderTest, RefusesAMissingTensor) {
  tensors_.erase("model.layers.0.input_layernorm.weight");
  WriteTensors(SingleFile(), tensors_);
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, "missing tensor 'model.layers.0.input_layernorm.weight'")) << error;
  EXPECT_TRUE(Contains(error, dir().string())) << error;
}

TEST_F(ModelLoaderTest, RefusesAMissingLmHeadWhenEmbeddingsAreNotTied) {
  tensors_.erase("lm_head.weight");
  WriteTensors(SingleFile(), tensors_);
  EXPECT_TRUE(Contains(LoadError(), "missing tensor 'lm_head.weight'"));
}

TEST_F(ModelLoaderTest, RefusesAnUnexpectedTensor) {
  tensors_["model.layers.2.mlp.up_proj.weight"] = torch::randn({32, 16});
  WriteTensors(SingleFile(), tensors_);
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, SingleFile().string())) << error;
  EXPECT_TRUE(Contains(error, "unexpected tensor 'model.layers.2.mlp.up_proj.weight'")) << error;
}

TEST_F(ModelLoaderTest, RefusesAConfigJsonThatDisagreesWithTheTrainingConfig) {
  WriteTensors(SingleFile(), tensors_);
  nlohmann::json config = ConfigJson(config_);
  config["hidden_size"] = 32;
  WriteFile(dir() / "config.json", config.dump(2));
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, (dir() / "config.json").string())) << error;
  EXPECT_TRUE(Contains(error, "hidden_size is 32")) << error;
  EXPECT_TRUE(Contains(error, "builds 16")) << error;
}

TEST_F(ModelLoaderTest, ConfigJsonWithoutKvHeadsMeansOneKvHeadPerAttentionHead) {
  WriteTensors(SingleFile(), tensors_);
  nlohmann::json config = ConfigJson(config_);
  config.erase("num_key_value_heads");
  WriteFile(dir() / "config.json", config.dump(2));
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, "config.json")) << error;
  EXPECT_TRUE(Contains(error, "num_key_value_heads is 4")) << error;
  EXPECT_TRUE(Contains(error, "builds 2")) << error;
}

TEST_F(ModelLoaderTest, RefusesAConfigJsonWithOtherEmbeddingTying) {
  WriteTensors(SingleFile(), tensors_);
  nlohmann::json config = ConfigJson(config_);
  config["tie_word_embeddings"] = true;
  WriteFile(dir() / "config.json", config.dump(2));
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, "config.json")) << error;
  EXPECT_TRUE(Contains(error, "tie_word_embeddings is true")) << error;
}

TEST_F(ModelLoaderTest, RefusesAConfigJsonThatIsNotJson) {
  WriteTensors(SingleFile(), tensors_);
  WriteFile(dir() / "config.json", "{\"hidden_size\": ");
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, (dir() / "config.json").string())) << error;
  EXPECT_TRUE(Contains(error, "not a JSON object")) << error;
}

TEST_F(ModelLoaderTest, RefusesAConfigJsonNestedDeeperThanTheJsonLimit) {
  WriteTensors(SingleFile(), tensors_);
  WriteFile(dir() / "config.json",
            "{\"x\":" + std::string(5000, '[') + std::string(5000, ']') + "}");
  EXPECT_EQ(LoadError(), (dir() / "config.json").string() +
                             ": not a JSON object: JSON nested deeper than 64 levels of arrays "
                             "and objects at line 1, column 69");
}

TEST_F(ModelLoaderTest, RefusesAConfigJsonIntegerBeyondInt64) {
  WriteTensors(SingleFile(), tensors_);
  nlohmann::json config = ConfigJson(config_);
  config["hidden_size"] = UINT64_MAX;
  WriteFile(dir() / "config.json", config.dump(2));
  EXPECT_EQ(LoadError(), (dir() / "config.json").string() +
                             ": hidden_size must be an integer, not '18446744073709551615'");
}

TEST_F(ModelLoaderTest, RefusesAnIndexNamingAShardOutsideTheDirectory) {
  WriteSharded(dir(), tensors_);
  nlohmann::json index =
      nlohmann::json::parse(testing::ReadFile(dir() / "model.safetensors.index.json"));
  index["weight_map"].begin().value() = "..";
  WriteFile(dir() / "model.safetensors.index.json", index.dump());
  EXPECT_EQ(LoadError(),
            (dir() / "model.safetensors.index.json").string() + ": shard '..' is not a file name");
}

TEST_F(ModelLoaderTest, RefusesAnIndexNamingAMissingShard) {
  WriteSharded(dir(), tensors_);
  fs::remove(dir() / kShard2);
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, "model.safetensors.index.json")) << error;
  EXPECT_TRUE(Contains(error, std::string("shard '") + kShard2 + "' is missing")) << error;
}

TEST_F(ModelLoaderTest, RefusesAShardThatLacksATensorTheIndexNames) {
  // The index still maps the tensor to the second shard, but no file holds it.
  const std::string name = "model.layers.0.mlp.down_proj.weight";
  WriteSharded(dir(), tensors_);
  std::map<std::string, torch::Tensor> second = ReadSafetensors(dir() / kShard2);
  ASSERT_TRUE(second.count(name)) << "the test expects " << name << " in the second shard";
  second.erase(name);
  WriteTensors(dir() / kShard2, second);
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, (dir() / kShard2).string())) << error;
  EXPECT_TRUE(Contains(error, "lacks tensor '" + name + "'")) << error;
}

TEST_F(ModelLoaderTest, RefusesATensorFoundInAnotherShardThanTheIndexSays) {
  const std::string name = "model.layers.0.mlp.down_proj.weight";
  WriteSharded(dir(), tensors_);
  std::map<std::string, torch::Tensor> first = ReadSafetensors(dir() / kShard1);
  std::map<std::string, torch::Tensor> second = ReadSafetensors(dir() / kShard2);
  ASSERT_TRUE(second.count(name));
  first[name] = second[name];
  second.erase(name);
  WriteTensors(dir() / kShard1, first);
  WriteTensors(dir() / kShard2, second);
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, (dir() / kShard1).string())) << error;
  EXPECT_TRUE(Contains(error, "'" + name + "'")) << error;
  EXPECT_TRUE(Contains(error, std::string("indexed in '") + kShard2 + "'")) << error;
}

TEST_F(ModelLoaderTest, RefusesTheSameTensorInTwoIndexedShards) {
  const std::string name = "model.layers.0.mlp.down_proj.weight";
  WriteSharded(dir(), tensors_);
  std::map<std::string, torch::Tensor> first = ReadSafetensors(dir() / kShard1);
  ASSERT_FALSE(first.count(name));
  first[name] = tensors_[name];
  WriteTensors(dir() / kShard1, first);
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, "'" + name + "'")) << error;
  EXPECT_TRUE(Contains(error, kShard1)) << error;
  EXPECT_TRUE(Contains(error, kShard2)) << error;
}

TEST_F(ModelLoaderTest, RefusesTheSameTensorInTwoFilesWithoutAnIndex) {
  const std::string name = "model.norm.weight";
  WriteTensors(dir() / "a.safetensors", tensors_);
  WriteTensors(dir() / "b.safetensors", {{name, tensors_[name]}});
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, (dir() / "b.safetensors").string())) << error;
  EXPECT_TRUE(
      Contains(error, "'" + name + "' also appears in " + (dir() / "a.safetensors").string()))
      << error;
}

TEST_F(ModelLoaderTest, RefusesADirectoryWithoutSafetensorsFiles) {
  WriteFile(dir() / "pytorch_model.bin", "not safetensors");
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, dir().string())) << error;
  EXPECT_TRUE(Contains(error, "no *.safetensors files")) << error;
}

TEST_F(ModelLoaderTest, ReportsAMalformedSafetensorsFileAsALoadError) {
  WriteTensors(SingleFile(), tensors_);
  fs::resize_file(SingleFile(), fs::file_size(SingleFile()) - 4);
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, SingleFile().string())) << error;
  EXPECT_TRUE(Contains(error, "truncated")) << error;
}

TEST_F(ModelLoaderTest, ReportsAnUnopenableWeightsFileAsALoadError) {
  fs::create_symlink(dir() / "blobs" / "absent", SingleFile());
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, SingleFile().string())) << error;
}

TEST_F(ModelLoaderTest, RefusesANonBooleanTieWordEmbeddings) {
  WriteTensors(SingleFile(), tensors_);
  nlohmann::json config = ConfigJson(config_);
  config["tie_word_embeddings"] = "no";
  WriteFile(dir() / "config.json", config.dump(2));
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error, (dir() / "config.json").string())) << error;
  EXPECT_TRUE(Contains(error, "tie_word_embeddings")) << error;
}

TEST_F(ModelLoaderTest, RefusesAConfigJsonWhoseRopeTheTrainingConfigDoesNotState) {
  WriteTensors(SingleFile(), tensors_);
  nlohmann::json config = ConfigJson(config_);
  config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 32.0}};
  WriteFile(dir() / "config.json", config.dump(2));
  std::string error = LoadError();
  EXPECT_TRUE(Contains(error,
                       "rope_scaling is llama3 but the training config's "
                       "model.rope_scaling is none"))
      << error;
  config.erase("rope_scaling");
  config["rope_theta"] = config_.rope_theta * 2;
  WriteFile(dir() / "config.json", config.dump(2));
  EXPECT_TRUE(Contains(LoadError(), "rope_theta is")) << LoadError();
}

}  // namespace
}  // namespace trainlock::validate
