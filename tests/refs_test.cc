// Image references, digests, commit ids, versions, paths and suggestions.
#include <gtest/gtest.h>

#include "base/refs.h"
#include "base/suggest.h"
#include "base/version.h"
#include "project/project_path.h"

namespace trainlock {
namespace {

const std::string kDigest = "sha256:" + std::string(64, 'a');

TEST(ImageRef, ParsesRegistryRepositoryTagAndDigest) {
  std::string error;
  auto ref = ParseImageRef("nvcr.io:5000/nvidia/pytorch:25.01-py3@" + kDigest, &error);
  ASSERT_TRUE(ref) << error;
  EXPECT_EQ(ref->registry, "nvcr.io:5000");
  EXPECT_EQ(ref->repository, "nvidia/pytorch");
  EXPECT_EQ(ref->tag, "25.01-py3");
  EXPECT_TRUE(ref->pinned());
}

TEST(ImageRef, ImpliedRegistryIsEmpty) {
  auto ref = ParseImageRef("ubuntu:24.04", nullptr);
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->registry, "");
  EXPECT_FALSE(ref->pinned());
}

TEST(ImageRef, RefusesUpperCaseRepository) {
  std::string error;
  EXPECT_FALSE(ParseImageRef("docker.io/NVIDIA/cuda:1", &error));
  EXPECT_NE(error.find("invalid repository name"), std::string::npos);
}

TEST(ImageRef, RefusesAShortDigest) {
  std::string error;
  EXPECT_FALSE(ParseImageRef("ubuntu@sha256:abc", &error));
  EXPECT_NE(error.find("got 3 characters"), std::string::npos);
}

TEST(Digest, RequiresLowerCaseHexOfSha256) {
  EXPECT_TRUE(IsDigest(kDigest));
  EXPECT_FALSE(IsDigest("sha512:" + std::string(64, 'a')));
  EXPECT_FALSE(IsDigest("sha256:" + std::string(64, 'A')));
}

TEST(CommitId, IsFortyLowerCaseHex) {
  EXPECT_TRUE(IsCommitId(std::string(40, 'f')));
  EXPECT_FALSE(IsCommitId("main"));
  EXPECT_FALSE(IsCommitId(std::string(39, 'f')));
}

TEST(Version, ComparesNumericallyWithImplicitZeros) {
  EXPECT_LT(*ParseVersion("550"), *ParseVersion("580.65.06"));
  EXPECT_LT(*ParseVersion("580.65.5"), *ParseVersion("580.65.06"));
  EXPECT_EQ(*ParseVersion("13"), *ParseVersion("13.0"));
  EXPECT_EQ(ParseVersion("2.11.0+cu130")->local, "cu130");
  EXPECT_EQ(ParseVersion("580.65.06")->ToString(), "580.65.06");
}

TEST(Version, APinMatchesEveryVersionThatHasItsComponents) {
  const Version have = *ParseVersion("9.13.2");
  EXPECT_TRUE(have.MatchesPin(*ParseVersion("9.13")));
  EXPECT_TRUE(have.MatchesPin(*ParseVersion("9.13.2")));
  EXPECT_FALSE(have.MatchesPin(*ParseVersion("9.1")));
  EXPECT_FALSE(have.MatchesPin(*ParseVersion("9.13.2.1")));
}

TEST(Version, RefusesRangesAndGarbage) {
  EXPECT_FALSE(ParseVersion(">=1.0"));
  EXPECT_FALSE(ParseVersion("1..2"));
  EXPECT_FALSE(ParseVersion("1.2.3.4.5"));
  EXPECT_FALSE(ParseVersion(""));
}

TEST(ProjectPath, RefusesEscapes) {
  EXPECT_EQ(RelativePathProblem("configs/a.yaml"), "");
  EXPECT_NE(RelativePathProblem("/etc/passwd"), "");
  EXPECT_NE(RelativePathProblem("configs/../../x"), "");
  EXPECT_NE(RelativePathProblem(".."), "");
  EXPECT_EQ(RelativePathProblem("a..b/c"), "");
}

TEST(Suggest, FindsTheClosestKnownWord) {
  std::string_view known[] = {"seed", "name", "config"};
  EXPECT_EQ(DidYouMean("sead", known), "did you mean 'seed'?");
  EXPECT_EQ(DidYouMean("completely-different", known), "");
}

}  // namespace
}  // namespace trainlock
