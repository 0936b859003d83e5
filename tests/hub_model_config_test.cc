// A Hub config.json read into the training config's model shape: carried over, or refused
// when the validator's Llama would compute something else; and the training-config fields
// that disagree with it, each at its own line.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "project/train_config.h"
#include "run/hub_model_config.h"
#include "run/rope_frequencies.h"
#include "test_support.h"

namespace trainlock {
namespace {

std::string Llama32Config() {
  return testing::ReadFile(testing::SourceDir() / "tests/fixtures/hub/llama-3.2-1b-config.json");
}

// config.json of Llama-3.2-1B with `key` set to `value_json` (or removed when empty).
std::string Llama32With(const std::string& key, const std::string& value_json) {
  nlohmann::json config = nlohmann::json::parse(Llama32Config());
  if (value_json.empty()) {
    config.erase(key);
  } else {
    config[key] = nlohmann::json::parse(value_json);
  }
  return config.dump();
}

std::string RefusalOf(const std::string& text) {
  try {
    ReadHubModelConfig(text, "config.json");
  } catch (const InputError& e) {
    std::string all;
    for (const Diagnostic& d : e.diagnostics().items()) all += d.Format() + "\n";
    return all;
  }
  return "";
}

TEST(HubModelConfig, Llama32OneBReadsAsItsShapeWithLlama3RopeScaling) {
  HubModelConfig hub = ReadHubModelConfig(Llama32Config(), "config.json");
  EXPECT_EQ(hub.model.hidden_size, 2048);
  EXPECT_EQ(hub.model.num_layers, 16);
  EXPECT_EQ(hub.model.num_heads, 32);
  EXPECT_EQ(hub.model.num_kv_heads, 8);
  EXPECT_EQ(hub.model.intermediate_size, 8192);
  EXPECT_EQ(hub.model.vocab_size, 128256);
  EXPECT_TRUE(hub.model.tie_embeddings);
  EXPECT_EQ(hub.model.rope_theta, 500000.0);
  EXPECT_EQ(hub.model.norm_eps, 1e-5);
  EXPECT_EQ(hub.max_position_embeddings, 131072);
  EXPECT_EQ(hub.model.rope_scaling.type, "llama3");
  EXPECT_EQ(hub.model.rope_scaling.factor, 32.0);
  EXPECT_EQ(hub.model.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(hub.model.ParameterCount(), 1235814400);
}

TEST(HubModelConfig, NullOrDefaultRopeScalingIsPlainRope) {
  EXPECT_EQ(ReadHubModelConfig(Llama32With("rope_scaling", "null"), "c").model.rope_scaling.type,
            "");
  EXPECT_EQ(ReadHubModelConfig(Llama32With("rope_scaling", R"({"rope_type": "default"})"), "c")
                .model.rope_scaling.type,
            "");
}

TEST(HubModelConfig, LinearRopeScalingIsCarriedOverWithItsLegacyTypeKey) {
  RopeScaling r =
      ReadHubModelConfig(Llama32With("rope_scaling", R"({"type": "linear", "factor": 4})"), "c")
          .model.rope_scaling;
  EXPECT_EQ(r.type, "linear");
  EXPECT_EQ(r.factor, 4.0);
}

TEST(HubModelConfig, RopeScalingTheValidatorDoesNotComputeIsRefusedByName) {
  std::string why = RefusalOf(Llama32With("rope_scaling", R"({"rope_type": "yarn", "factor": 4})"));
  EXPECT_NE(why.find("config.json: error: rope_scaling type 'yarn' is not supported"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("linear or llama3"), std::string::npos) << why;
}

TEST(HubModelConfig, AnotherArchitectureIsRefused) {
  EXPECT_NE(RefusalOf(Llama32With("model_type", "\"gemma2\"")).find("'gemma2' is not a Llama"),
            std::string::npos);
}

TEST(HubModelConfig, WhatTheLlamaDoesNotComputeIsRefusedNotIgnored) {
  EXPECT_NE(RefusalOf(Llama32With("hidden_act", "\"gelu\"")).find("hidden_act 'gelu'"),
            std::string::npos);
  EXPECT_NE(RefusalOf(Llama32With("attention_bias", "true")).find("'attention_bias' is true"),
            std::string::npos);
  EXPECT_NE(RefusalOf(Llama32With("head_dim", "128")).find("head_dim 128"), std::string::npos);
}

TEST(HubModelConfig, EveryMissingShapeFieldIsNamedAtOnce) {
  nlohmann::json config = nlohmann::json::parse(Llama32Config());
  config.erase("hidden_size");
  config.erase("vocab_size");
  std::string why = RefusalOf(config.dump());
  EXPECT_NE(why.find("'hidden_size' is missing"), std::string::npos) << why;
  EXPECT_NE(why.find("'vocab_size' is missing"), std::string::npos) << why;
}

TEST(HubModelConfig, NotJsonIsBadInputWithItsPosition) {
  EXPECT_NE(RefusalOf("{\n  \"hidden_size\": ,\n}").find("config.json:2:"), std::string::npos);
}

constexpr const char* kTrainConfig = R"(model:
  architecture: llama
  hidden_size: 2048
  num_layers: 16
  num_heads: 32
  num_kv_heads: 8
  intermediate_size: 8192
  vocab_size: 128256
  tie_embeddings: true
  rope_theta: 10000
  norm_eps: 1.0e-5
training: {seq_len: 8, micro_batch: 1, precision: bf16, optimizer: {name: adamw, lr: 0.1}}
)";

TEST(ModelConfigMismatches, EachDisagreeingFieldIsReportedAtItsLine) {
  const HubModelConfig hub = ReadHubModelConfig(Llama32Config(), "hub/config.json");
  const TrainConfig trained = LoadTrainConfig(kTrainConfig, "c.yaml");
  std::vector<Diagnostic> found =
      ModelConfigMismatches(hub.model, "hub/config.json", trained.model, kTrainConfig, "c.yaml");
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].Format().substr(0, found[0].Format().find(" but")),
            "c.yaml:10:15: error: model.rope_theta is 10000");
  EXPECT_NE(found[0].message.find("hub/config.json has rope_theta 500000"), std::string::npos);
  // rope_scaling is absent from the training config: reported at the model mapping.
  EXPECT_EQ(found[1].pos.line, 2);
  EXPECT_NE(found[1].message.find("model.rope_scaling is none (the default)"), std::string::npos)
      << found[1].message;
}

TEST(ModelConfigMismatches, AnAgreeingConfigHasNone) {
  const HubModelConfig hub = ReadHubModelConfig(Llama32With("rope_scaling", "null"), "c");
  std::string text = kTrainConfig;
  text.replace(text.find("10000"), 5, "500000");
  const TrainConfig trained = LoadTrainConfig(text, "c.yaml");
  EXPECT_TRUE(ModelConfigMismatches(hub.model, "c", trained.model, text, "c.yaml").empty());
}

TEST(RopeFrequencies, PlainRopeIsOneOverThetaToTheExponent) {
  ModelConfig m;
  m.hidden_size = 64;
  m.num_heads = 4;  // head_dim 16
  m.rope_theta = 10000;
  std::vector<double> f = RopeInverseFrequencies(m);
  ASSERT_EQ(f.size(), 8u);
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  EXPECT_DOUBLE_EQ(f[4], 1.0 / std::pow(10000.0, 8.0 / 16));
}

TEST(RopeFrequencies, LinearScalingDividesEveryFrequency) {
  ModelConfig m;
  m.hidden_size = 64;
  m.num_heads = 4;
  m.rope_scaling = {"linear", 4.0};
  ModelConfig plain = m;
  plain.rope_scaling = {};
  std::vector<double> scaled = RopeInverseFrequencies(m), base = RopeInverseFrequencies(plain);
  for (size_t i = 0; i < base.size(); ++i) EXPECT_DOUBLE_EQ(scaled[i], base[i] / 4.0);
}

TEST(RopeFrequencies, Llama3KeepsShortWavelengthsAndStretchesLongOnes) {
  ModelConfig m = ReadHubModelConfig(Llama32Config(), "c").model;
  ModelConfig plain = m;
  plain.rope_scaling = {};
  std::vector<double> scaled = RopeInverseFrequencies(m), base = RopeInverseFrequencies(plain);
  ASSERT_EQ(scaled.size(), 32u);
  EXPECT_DOUBLE_EQ(scaled[0], base[0]);           // wavelength 2*pi < 8192/4: kept
  EXPECT_DOUBLE_EQ(scaled[31], base[31] / 32.0);  // wavelength > 8192: divided by factor
  // transformers' _compute_llama3_parameters gives, for index 16 (wavelength ~4443, in the
  // smoothed band), (1 - s) * f / 32 + s * f with s = (8192 / wavelength - 1) / 3.
  const double wavelen = 2 * M_PI / base[16];
  ASSERT_GT(wavelen, 2048);
  ASSERT_LT(wavelen, 8192);
  const double s = (8192 / wavelen - 1) / 3;
  EXPECT_DOUBLE_EQ(scaled[16], (1 - s) * base[16] / 32 + s * base[16]);
}

}  // namespace
}  // namespace trainlock
