// PEP 440 versions and specifiers, PEP 508 requirements and markers, and wheel tags: the
// pieces the Python closure resolver decides with, on the cases pip's own tests pin down.
#include <gtest/gtest.h>

#include "base/failure.h"
#include "lock/pep440.h"
#include "lock/pep508.h"
#include "lock/wheel_tags.h"

namespace trainlock {
namespace {

PyVersion V(const std::string& text) {
  auto v = ParsePyVersion(text);
  EXPECT_TRUE(v) << text;
  return v.value_or(PyVersion{});
}

bool In(const std::string& version, const std::string& specifier) {
  std::string error;
  auto set = PySpecifierSet::Parse(specifier, &error);
  EXPECT_TRUE(set) << specifier << ": " << error;
  return set && set->Contains(V(version));
}

TEST(Pep440, VersionsSortInTheSpecificationsOrder) {
  const std::vector<std::string> ordered = {
      "1.0.dev456",    "1.0a1",         "1.0a2.dev456", "1.0a12.dev456",
      "1.0a12",        "1.0b1.dev456",  "1.0b2",        "1.0b2.post345.dev456",
      "1.0b2.post345", "1.0rc1.dev456", "1.0rc1",       "1.0",
      "1.0+abc.5",     "1.0+abc.7",     "1.0+5",        "1.0.post456.dev34",
      "1.0.post456",   "1.0.15",        "1.1.dev1",     "2!0.1"};
  for (size_t i = 0; i + 1 < ordered.size(); ++i) {
    EXPECT_LT(ComparePyVersions(V(ordered[i]), V(ordered[i + 1])), 0)
        << ordered[i] << " < " << ordered[i + 1];
  }
}

TEST(Pep440, SpellingsNormaliseAndTrailingZerosAreEqual) {
  EXPECT_EQ(V("1.0-ALPHA_1").ToString(), "1.0a1");
  EXPECT_EQ(V("v2.11.0+CU130").ToString(), "2.11.0+cu130");
  EXPECT_EQ(V("1.0-1").ToString(), "1.0.post1");
  EXPECT_EQ(ComparePyVersions(V("1.0"), V("1.0.0")), 0);
  EXPECT_FALSE(ParsePyVersion("1..0"));
  EXPECT_FALSE(ParsePyVersion("latest"));
}

TEST(Pep440, SpecifiersFollowTheSpecification) {
  EXPECT_TRUE(In("1.2.3", ">=1.1,<2"));
  EXPECT_FALSE(In("2.0.0", ">=1.1,<2"));
  EXPECT_TRUE(In("1.2.9", "==1.2.*"));
  EXPECT_FALSE(In("1.3", "==1.2.*"));
  EXPECT_TRUE(In("2.2", "~=2.2"));
  EXPECT_TRUE(In("2.9.1", "~=2.2"));
  EXPECT_FALSE(In("3.0", "~=2.2"));
  EXPECT_FALSE(In("1.4.6", "~=1.4.5a4,!=1.4.6"));
  // A local version matches a public specifier; an exact local pin matches only itself.
  EXPECT_TRUE(In("2.11.0+cu130", "==2.11.0"));
  EXPECT_TRUE(In("2.11.0+cu130", "==2.11.0+cu130"));
  EXPECT_FALSE(In("2.11.0+cu128", "==2.11.0+cu130"));
  // <V excludes V's pre-releases; >V excludes V's post-releases and local versions.
  EXPECT_FALSE(In("2.0rc1", "<2"));
  EXPECT_FALSE(In("1.7.post1", ">1.7"));
  EXPECT_TRUE(In("1.7.1", ">1.7"));
  EXPECT_FALSE(In("1.7+local", ">1.7"));
  std::string error;
  EXPECT_FALSE(PySpecifierSet::Parse(">=1.0,,", &error));
  EXPECT_FALSE(PySpecifierSet::Parse("~=1", &error));
  EXPECT_TRUE(PySpecifierSet::Parse(">=1.0.0rc1", &error)->AllowsPreReleases());
}

TEST(Pep508, RequirementsParseWithExtrasSpecifiersAndMarkers) {
  std::string error;
  auto r = ParsePyRequirement("Typing_Extensions[Foo , bar] (>=4.10.0) ; python_version >= \"3.9\"",
                              &error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->name, "typing-extensions");
  EXPECT_EQ(r->extras, (std::set<std::string>{"foo", "bar"}));
  EXPECT_EQ(r->specifier.ToString(), ">=4.10.0");
  EXPECT_EQ(r->marker, "python_version >= \"3.9\"");
  auto url = ParsePyRequirement("pkg @ https://example.com/pkg-1.0.whl", &error);
  ASSERT_TRUE(url) << error;
  EXPECT_EQ(url->url, "https://example.com/pkg-1.0.whl");
  EXPECT_FALSE(ParsePyRequirement("pkg >=", &error));
  EXPECT_FALSE(ParsePyRequirement("pkg; python_version >=", &error));
}

TEST(Pep508, MarkersEvaluateForTheImagesPythonAndPlatform) {
  const MarkerEnvironment env = PythonPlatform::Parse("3.12")->Markers();
  auto eval = [&](const std::string& marker, std::set<std::string> extras = {}) {
    return EvaluateMarker(marker, env, extras);
  };
  EXPECT_TRUE(eval("platform_system == \"Linux\" and platform_machine == \"x86_64\""));
  EXPECT_FALSE(eval("sys_platform == \"win32\""));
  EXPECT_TRUE(eval("python_version >= \"3.9\""));
  EXPECT_FALSE(eval("python_version < \"3.10\""));
  EXPECT_TRUE(
      eval("python_version >= \"3.12\" and (sys_platform == \"darwin\" or os_name == 'posix')"));
  EXPECT_FALSE(eval("extra == \"optree\""));
  EXPECT_TRUE(eval("extra == \"Opt_Tree\"", {"opt-tree"}));
  EXPECT_TRUE(eval("'linux' in sys_platform"));
  EXPECT_THROW(eval("python_version >= "), Failure);
  EXPECT_THROW(eval("no_such_variable == '1'"), Failure);
}

TEST(WheelTags, ThePlatformsWheelsRankAndOthersAreRefused) {
  const PythonPlatform py311 = *PythonPlatform::Parse("3.11");
  auto rank = [&](const std::string& file) {
    auto name = ParseWheelName(file);
    EXPECT_TRUE(name) << file;
    return name ? WheelTagRank(*name, py311) : std::nullopt;
  };
  auto specific = rank("numpy-2.1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl");
  auto abi3 = rank("cryptography-44.0.0-cp39-abi3-manylinux_2_28_x86_64.whl");
  auto pure = rank("filelock-3.16.1-py3-none-any.whl");
  ASSERT_TRUE(specific && abi3 && pure);
  EXPECT_LT(*specific, *abi3);
  EXPECT_LT(*abi3, *pure);
  EXPECT_FALSE(rank("numpy-2.1.0-cp312-cp312-manylinux_2_17_x86_64.whl"));
  EXPECT_FALSE(rank("numpy-2.1.0-cp311-cp311-macosx_14_0_arm64.whl"));
  EXPECT_FALSE(rank("torch-2.11.0+cu130-cp311-cp311-manylinux_2_40_x86_64.whl"));  // glibc 2.36
  EXPECT_FALSE(ParseWheelName("numpy-2.1.0.tar.gz"));
  auto torch = ParseWheelName("torch-2.11.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl");
  ASSERT_TRUE(torch);
  EXPECT_EQ(torch->version, "2.11.0+cu130");
}

}  // namespace
}  // namespace trainlock
