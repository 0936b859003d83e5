// YamlFields: typed fields of a YAML mapping with line:column, the same Need style and the same
// messages as TomlFields.
#include <gtest/gtest.h>

#include <toml++/toml.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "base/toml_fields.h"
#include "base/yaml_fields.h"

namespace trainlock {
namespace {

// Every diagnostic as its one-line rendering.
std::vector<std::string> Lines(const Diagnostics& diags) {
  std::vector<std::string> out;
  for (const Diagnostic& d : diags.items()) out.push_back(d.Format());
  return out;
}

TEST(YamlFields, ReadsTypedValues) {
  YAML::Node map = YAML::Load("n: 42\nx: 0.5\nb: yes\nc: bf16\n");
  Diagnostics diags;
  YamlFields f(map, "", "c.yaml", diags);
  static constexpr std::string_view kChoices[] = {"fp32", "bf16"};
  EXPECT_EQ(f.Integer("n", Need::kRequired, 1, 100), 42);
  EXPECT_EQ(f.Number("x", Need::kRequired, 0, 1), 0.5);
  EXPECT_EQ(f.Bool("b", Need::kRequired), true);
  EXPECT_EQ(f.Choice("c", Need::kRequired, kChoices), "bf16");
  f.Finish();
  EXPECT_TRUE(diags.empty()) << Lines(diags)[0];
}

TEST(YamlFields, WrongTypeNamesLineAndColumn) {
  YAML::Node map = YAML::Load("a: 1\nseq_len: [4]\n");
  Diagnostics diags;
  YamlFields f(map, "training", "c.yaml", diags);
  EXPECT_FALSE(f.Integer("seq_len", Need::kRequired, 1, 10));
  EXPECT_EQ(Lines(diags),
            std::vector<std::string>{
                "c.yaml:2:10: error: 'training.seq_len' must be an integer, not a list"});
}

TEST(YamlFields, MissingRequiredKeyPointsAtTheMapping) {
  YAML::Node map = YAML::Load("a: 1\n");
  Diagnostics diags;
  YamlFields f(map, "model", "c.yaml", diags);
  EXPECT_FALSE(f.Integer("hidden_size", Need::kRequired, 1, 10));
  EXPECT_EQ(Lines(diags), std::vector<std::string>{
                              "c.yaml:1:1: error: missing required key 'model.hidden_size'"});
}

TEST(YamlFields, AbsentOptionalKeyIsNoError) {
  YAML::Node map = YAML::Load("a: 1\n");
  Diagnostics diags;
  YamlFields f(map, "", "c.yaml", diags);
  EXPECT_FALSE(f.Bool("shuffle", Need::kOptional));
  EXPECT_TRUE(diags.empty());
}

TEST(YamlFields, IntegerOutOfRangeSaysTheRange) {
  YAML::Node map = YAML::Load("n: 0\n");
  Diagnostics diags;
  YamlFields f(map, "", "c.yaml", diags);
  EXPECT_FALSE(f.Integer("n", Need::kRequired, 1, 8));
  EXPECT_EQ(Lines(diags), std::vector<std::string>{
                              "c.yaml:1:4: error: 'n' = 0 is out of range; expected 1 to 8"});
}

TEST(YamlFields, NumberOutOfRangeShowsTheValueAsWritten) {
  YAML::Node map = YAML::Load("p: 1.50\n");
  Diagnostics diags;
  YamlFields f(map, "", "c.yaml", diags);
  EXPECT_FALSE(f.Number("p", Need::kRequired, 0, 0.9));
  EXPECT_EQ(Lines(diags), std::vector<std::string>{
                              "c.yaml:1:4: error: 'p' = 1.50 is out of range; expected 0 to 0.9"});
}

TEST(YamlFields, DuplicateKeyIsRefused) {
  YAML::Node map = YAML::Load("a: 1\na: 2\n");
  Diagnostics diags;
  YamlFields f(map, "training", "c.yaml", diags);
  EXPECT_EQ(Lines(diags),
            std::vector<std::string>{"c.yaml:2:1: error: duplicate key 'a' in 'training'"});
}

TEST(YamlFields, UnknownKeySuggestsTheClosestKnownOne) {
  YAML::Node map = YAML::Load("rope_theta: 1\nrope_thetta: 2\n");
  Diagnostics diags;
  YamlFields f(map, "model", "c.yaml", diags);
  f.Number("rope_theta", Need::kOptional, 0, 10);
  f.Finish();
  EXPECT_EQ(Lines(diags),
            std::vector<std::string>{"c.yaml:2:1: error: unknown key 'rope_thetta' in 'model'; "
                                     "did you mean 'rope_theta'?"});
}

// The two readers share their wording: the same mistake reads the same in either format.
TEST(FieldMessages, TomlAndYamlWordAnUnknownTopLevelKeyAlike) {
  Diagnostics toml_diags, yaml_diags;
  toml::table table = toml::parse("seed = 1\nsed = 2\n");
  TomlFields t(table, "", "f", toml_diags);
  t.Integer("seed", Need::kOptional, 0, 10);
  t.Finish();
  YAML::Node map = YAML::Load("seed: 1\nsed: 2\n");
  YamlFields y(map, "", "f", yaml_diags);
  y.Integer("seed", Need::kOptional, 0, 10);
  y.Finish();
  ASSERT_EQ(toml_diags.size(), 1u);
  ASSERT_EQ(yaml_diags.size(), 1u);
  EXPECT_EQ(toml_diags.items()[0].message, yaml_diags.items()[0].message);
  EXPECT_EQ(toml_diags.items()[0].hint, yaml_diags.items()[0].hint);
}

TEST(FieldMessages, TomlAndYamlWordAnOutOfRangeNumberAlike) {
  Diagnostics toml_diags, yaml_diags;
  toml::table table = toml::parse("p = 1.5\n");
  TomlFields t(table, "", "f", toml_diags);
  t.Number("p", Need::kRequired, 0, 0.9);
  YAML::Node map = YAML::Load("p: 1.5\n");
  YamlFields y(map, "", "f", yaml_diags);
  y.Number("p", Need::kRequired, 0, 0.9);
  ASSERT_EQ(toml_diags.size(), 1u);
  ASSERT_EQ(yaml_diags.size(), 1u);
  EXPECT_EQ(toml_diags.items()[0].message, yaml_diags.items()[0].message);
  EXPECT_EQ(toml_diags.items()[0].hint, yaml_diags.items()[0].hint);
}

}  // namespace
}  // namespace trainlock
