// The Hub's revision answer read without trusting it (lock/hub_json.h): a file path that
// climbs out of the repository, a malformed LFS hash, a size that is not a non-negative
// integer and a file listed twice are refused, saying which file, instead of reaching the
// lock or throwing a library exception.
#include <gtest/gtest.h>

#include <string>

#include "lock/hub_json.h"

namespace trainlock {
namespace {

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

std::string Answer(const std::string& siblings) {
  return R"({"sha": ")" + kCommit + R"(", "siblings": [)" + siblings + "]}";
}

// The refusal of `body`, "" (and a failure) when it is accepted.
std::string Refusal(const std::string& body) {
  std::string problem;
  if (ReadHubRevisionAnswer(body, &problem)) ADD_FAILURE() << "accepted: " << body;
  return problem;
}

TEST(HubJson, AnLfsFileGivesItsHashAndSizeAndAGitFileItsSize) {
  std::string problem;
  auto answer = ReadHubRevisionAnswer(
      Answer(R"({"rfilename": "model.safetensors", "size": 1, "lfs": {"sha256": ")" +
             std::string(64, 'e') +
             R"(", "size": 4096}}, {"rfilename": "config.json", "size": 20})"),
      &problem);
  ASSERT_TRUE(answer) << problem;
  EXPECT_EQ(answer->commit, kCommit);
  EXPECT_EQ(answer->siblings.at("model.safetensors").lfs_sha256, std::string(64, 'e'));
  EXPECT_EQ(answer->siblings.at("model.safetensors").size, 4096u);
  EXPECT_EQ(answer->siblings.at("config.json").lfs_sha256, "");
  EXPECT_EQ(answer->siblings.at("config.json").size, 20u);
}

TEST(HubJson, AFilePathThatClimbsOutIsRefused) {
  EXPECT_EQ(Refusal(Answer(R"({"rfilename": "../../.bashrc", "size": 1})")),
            "the Hub's file '../../.bashrc': path '../../.bashrc' escapes the project through "
            "'..'");
}

TEST(HubJson, AnAbsoluteFilePathIsRefused) {
  EXPECT_EQ(Refusal(Answer(R"({"rfilename": "/etc/passwd"})")),
            "the Hub's file '/etc/passwd': absolute path '/etc/passwd' escapes the project");
}

TEST(HubJson, AnLfsHashThatIsNotHexIsRefused) {
  EXPECT_EQ(Refusal(Answer(R"({"rfilename": "w.bin", "lfs": {"sha256": "zz", "size": 1}})")),
            "the Hub's file 'w.bin': lfs.sha256 is not 64 lower-case hex characters");
}

TEST(HubJson, ASizeThatIsAStringIsRefusedNotThrown) {
  EXPECT_EQ(Refusal(Answer(R"({"rfilename": "config.json", "size": "20"})")),
            "the Hub's file 'config.json': size is not a non-negative integer");
}

TEST(HubJson, ANegativeLfsSizeIsRefused) {
  EXPECT_EQ(Refusal(Answer(R"({"rfilename": "w.bin", "lfs": {"sha256": ")" + std::string(64, 'e') +
                           R"(", "size": -1}})")),
            "the Hub's file 'w.bin': lfs.size is not a non-negative integer");
}

TEST(HubJson, AFileListedTwiceIsRefused) {
  EXPECT_EQ(Refusal(Answer(R"({"rfilename": "a.json"}, {"rfilename": "a.json"})")),
            "the Hub's file 'a.json' is listed twice");
}

TEST(HubJson, SiblingsThatAreNotAnArrayAreRefused) {
  EXPECT_EQ(Refusal(R"({"sha": ")" + kCommit + R"(", "siblings": {"a": 1}})"),
            "the Hub's answer has 'siblings' that are not an array");
}

TEST(HubJson, AnAnswerWithoutACommitIsRefused) {
  EXPECT_EQ(Refusal(R"({"sha": 5})"), "the Hub's answer has no 40-hex commit ('sha')");
}

TEST(HubJson, AnAnswerNestedTooDeepIsRefused) {
  EXPECT_EQ(Refusal(Answer(std::string(1000, '[') + std::string(1000, ']'))),
            "JSON nested deeper than 64 levels of arrays and objects at line 1, column 128");
}

}  // namespace
}  // namespace trainlock
