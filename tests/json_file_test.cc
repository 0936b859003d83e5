// Untrusted JSON (base/json_file.h, base/json_limits.h): a document nested deeper than 64
// levels, a number beyond a double and a member named twice in one object are refused as bad
// input with their position, before nlohmann builds a tree; what stays inside the limits
// parses as before.
#include <gtest/gtest.h>

#include <string>

#include "base/json_file.h"
#include "base/json_limits.h"

namespace trainlock {
namespace {

// The one-line refusal ParseJsonText gives for `text`, "" (and a failure) when it accepts it.
std::string Refusal(const std::string& text) {
  try {
    ParseJsonText(text, "in.json");
  } catch (const InputError& e) {
    return e.diagnostics().items().at(0).Format();
  }
  ADD_FAILURE() << "accepted: " << text.substr(0, 80);
  return "";
}

std::string Nested(int depth) {
  return std::string(static_cast<size_t>(depth), '[') +
         std::string(static_cast<size_t>(depth), ']');
}

TEST(JsonLimits, TenThousandNestedArraysAreRefusedAtTheSixtyFifthOpening) {
  EXPECT_EQ(Refusal(Nested(10000)),
            "in.json:1:65: error: JSON nested deeper than 64 levels of arrays and objects");
}

TEST(JsonLimits, SixtyFourLevelsAreAccepted) {
  EXPECT_NO_THROW(ParseJsonText(Nested(kMaxJsonDepth), "in.json"));
}

TEST(JsonLimits, NestedObjectsCountLikeArrays) {
  std::string text;
  for (int i = 0; i < 65; ++i) text += "{\"a\":";
  text += "1" + std::string(65, '}');
  EXPECT_EQ(Refusal(text),
            "in.json:1:321: error: JSON nested deeper than 64 levels of arrays and objects");
}

TEST(JsonLimits, BracketsInsideStringsDoNotCount) {
  const std::string text = "[\"" + std::string(100, '[') + "\\\"" + std::string(100, '{') + "\"]";
  EXPECT_NO_THROW(ParseJsonText(text, "in.json"));
}

TEST(JsonLimits, ANumberBeyondADoubleIsRefusedWithItsPosition) {
  EXPECT_EQ(Refusal("{\n  \"duration_s\": 1e999\n}"),
            "in.json:2:17: error: number '1e999' is beyond the range of a double");
}

TEST(JsonLimits, ANegativeNumberBeyondADoubleIsRefused) {
  EXPECT_EQ(Refusal("[-" + std::string(400, '9') + "]"),
            "in.json:1:2: error: number '-" + std::string(59, '9') +
                "...' is beyond the range of a double");
}

TEST(JsonLimits, ATinyNumberThatRoundsToZeroIsAccepted) {
  EXPECT_EQ(ParseJsonText("[1e-999]", "in.json")[0].get<double>(), 0.0);
}

TEST(JsonLimits, AMemberNamedTwiceIsRefusedAtItsSecondName) {
  EXPECT_EQ(Refusal("{\"verdict\": \"fail\", \"verdict\": \"pass\"}"),
            "in.json:1:21: error: member 'verdict' appears twice in one object");
}

TEST(JsonLimits, AMemberNamedTwiceThroughAnEscapeIsRefused) {
  EXPECT_EQ(Refusal("{\"ab\": 1, \"a\\u0062\": 2}"),
            "in.json:1:11: error: member 'a\\u0062' appears twice in one object");
}

TEST(JsonLimits, TheSameNameInDifferentObjectsIsAccepted) {
  EXPECT_NO_THROW(ParseJsonText(R"({"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]})", "in.json"));
}

TEST(JsonLimits, AStringValueEqualToAKeyIsNotAKey) {
  EXPECT_NO_THROW(ParseJsonText(R"({"a": "a", "b": ["a", "a"]})", "in.json"));
}

TEST(JsonFile, ASyntaxErrorKeepsItsPositionAndNoLibraryPrefix) {
  EXPECT_EQ(Refusal("{\n  \"a\": tru\n}"),
            "in.json:2:11: error: not valid JSON: syntax error while parsing value - invalid "
            "literal; last read: '\"a\": tru<U+000A>'");
}

TEST(JsonFile, TryParseSaysWhatAndWhereWithoutThrowing) {
  std::string problem;
  EXPECT_FALSE(TryParseJsonText(Nested(100), &problem));
  EXPECT_EQ(problem,
            "JSON nested deeper than 64 levels of arrays and objects at line 1, column 65");
}

}  // namespace
}  // namespace trainlock
