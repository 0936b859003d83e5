// A registry's JSON read without trusting it (lock/registry_json.h): an index entry whose
// digest is not sha256:<64 hex> or whose platform is not plain names is refused, so nothing
// malformed reaches the lock or a Containerfile; ill-typed members are refusals, not library
// exceptions; a token a header cannot carry is not used.
#include <gtest/gtest.h>

#include <string>

#include "lock/registry_json.h"

namespace trainlock {
namespace {

const std::string kDigest = "sha256:" + std::string(64, 'a');

std::string Index(const std::string& entry) {
  return R"({"mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [)" + entry +
         "]}";
}

// The refusal of `body`, "" (and a failure) when it is accepted.
std::string Refusal(const std::string& body) {
  std::string problem;
  if (ReadManifestAnswer(body, "", &problem)) ADD_FAILURE() << "accepted: " << body;
  return problem;
}

TEST(RegistryJson, AnIndexListsEachPlatformsDigest) {
  std::string problem;
  auto answer = ReadManifestAnswer(
      Index(R"({"digest": ")" + kDigest +
            R"(", "platform": {"os": "linux", "architecture": "arm64", "variant": "v8"}})"),
      "", &problem);
  ASSERT_TRUE(answer) << problem;
  EXPECT_EQ(answer->media_type, "application/vnd.oci.image.index.v1+json");
  EXPECT_EQ(answer->platforms.at("linux/arm64/v8"), kDigest);
}

TEST(RegistryJson, APlatformDigestCarryingALineBreakIsRefused) {
  EXPECT_EQ(Refusal(Index(R"({"digest": ")" + kDigest +
                          R"(\nRUN sh", "platform": {"os": "linux", "architecture": "amd64"}})")),
            "manifests[0] (linux/amd64) has no digest of the form sha256:<64 hex>");
}

TEST(RegistryJson, APlatformEntryWithoutADigestIsRefused) {
  EXPECT_EQ(Refusal(Index(R"({"platform": {"os": "linux", "architecture": "amd64"}})")),
            "manifests[0] (linux/amd64) has no digest of the form sha256:<64 hex>");
}

TEST(RegistryJson, APlatformNameThatIsNotAPlainNameIsRefused) {
  EXPECT_EQ(Refusal(Index(R"({"digest": ")" + kDigest +
                          R"(", "platform": {"os": "linux\u001b[31m", "architecture": "amd64"}})")),
            "manifests[0].platform needs os and architecture (and an optional variant) that are "
            "plain names");
}

TEST(RegistryJson, APlatformWhoseOsIsANumberIsRefusedNotThrown) {
  EXPECT_EQ(Refusal(Index(R"({"digest": ")" + kDigest +
                          R"(", "platform": {"os": 7, "architecture": "amd64"}})")),
            "manifests[0].platform needs os and architecture (and an optional variant) that are "
            "plain names");
}

TEST(RegistryJson, AMediaTypeThatIsNotAStringIsRefusedNotThrown) {
  EXPECT_EQ(Refusal(R"({"mediaType": ["x"]})"), "the manifest's mediaType is not a string");
}

TEST(RegistryJson, AManifestNestedTooDeepIsRefused) {
  EXPECT_EQ(Refusal("{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}"),
            "JSON nested deeper than 64 levels of arrays and objects at line 1, column 69");
}

TEST(RegistryJson, EntriesWithoutAPlatformAndAttestationsAreSkipped) {
  std::string problem;
  auto answer =
      ReadManifestAnswer(Index(R"({"digest": "x"}, {"digest": "y", "platform": {"os": "unknown", )"
                               R"("architecture": "unknown"}})"),
                         "application/x", &problem);
  ASSERT_TRUE(answer) << problem;
  EXPECT_TRUE(answer->platforms.empty());
  EXPECT_EQ(answer->media_type, "application/vnd.oci.image.index.v1+json");
}

TEST(RegistryJson, ATokenIsTakenFromTokenElseAccessToken) {
  EXPECT_EQ(BearerTokenOf(R"({"token": "abc.def"})"), "abc.def");
  EXPECT_EQ(BearerTokenOf(R"({"access_token": "xyz"})"), "xyz");
}

TEST(RegistryJson, ATokenHoldingALineBreakIsNotUsed) {
  EXPECT_EQ(BearerTokenOf(R"({"token": "abc\r\nX-Injected: 1"})"), "");
}

TEST(RegistryJson, ATokenThatIsNotAStringIsNotUsed) {
  EXPECT_EQ(BearerTokenOf(R"({"token": 42})"), "");
}

TEST(RegistryJson, DockerConfigCredentialsAreDecodedForTheirHost) {
  // base64("alice:s3cret")
  const std::string config =
      R"({"auths": {"https://reg.example/v1/": {"auth": "YWxpY2U6czNjcmV0"}}})";
  EXPECT_EQ(DockerConfigCredentials(config, "reg.example"), "alice:s3cret");
  EXPECT_EQ(DockerConfigCredentials(config, "other.example"), "");
}

TEST(RegistryJson, DockerConfigAuthOfTheWrongTypeIsIgnoredNotThrown) {
  EXPECT_EQ(DockerConfigCredentials(R"({"auths": {"reg.example": {"auth": 5}}})", "reg.example"),
            "");
}

}  // namespace
}  // namespace trainlock
