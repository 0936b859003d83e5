// Resolving a Python closure from a package index: tests/servers/pypi_server.py on a loopback
// port serves wheels it builds (HTML or JSON pages, with or without PEP 658 metadata files). The
// closure follows Requires-Dist with markers and extras, picks the newest version every
// constraint allows, pins each wheel's sha256 (the served bytes' hash), and names the
// constraints of a conflict, a package no index has, and bytes that do not match their hash.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>

#include "base/failure.h"
#include "base/sha256.h"
#include "lock/http_client.h"
#include "lock/python_index.h"
#include "lock/python_resolver.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

// One index server per test, serving the demo set plus `spec`.
class PythonIndex : public ::testing::Test {
 protected:
  void Serve(const nlohmann::json& spec, std::vector<std::string> flags = {}) {
    if (!testing::HaveProgram("python3")) GTEST_SKIP() << "python3 is not installed";
    testing::WriteFile(dir_.path() / "spec.json", spec.dump());
    port_ = testing::FreeLoopbackPort();
    std::vector<std::string> argv = {
        "python3",
        (testing::SourceDir() / "tests/servers/pypi_server.py").string(),
        std::to_string(port_),
        "--demo",
        "--spec",
        (dir_.path() / "spec.json").string()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    server_ = std::make_unique<testing::BackgroundProcess>(argv, dir_.path() / "server.log");
    ASSERT_TRUE(testing::WaitForHttp(Index() + "/", 30))
        << testing::ReadFile(dir_.path() / "server.log");
  }
  std::string Index() const { return "http://127.0.0.1:" + std::to_string(port_) + "/simple"; }

  std::vector<PythonPin> Resolve(std::map<std::string, std::string> roots,
                                 const std::string& python = "3.11") {
    ClosureRequest request;
    request.what = "targets.cpu";
    request.indexes = {Index()};
    request.platform = *PythonPlatform::Parse(python);
    request.roots = std::move(roots);
    IndexOptions options;
    options.timeout_s = 10;
    options.attempts = 1;
    options.scratch = dir_.path() / "scratch";
    return ResolvePythonClosure(request, options);
  }

  // The exit code and message of a resolution that must fail.
  std::pair<int, std::string> Refusal(std::map<std::string, std::string> roots) {
    try {
      Resolve(std::move(roots));
    } catch (const Failure& e) {
      return {e.exit_code(), e.what()};
    }
    ADD_FAILURE() << "resolved";
    return {0, ""};
  }

  static std::map<std::string, std::string> Versions(const std::vector<PythonPin>& pins) {
    std::map<std::string, std::string> out;
    for (const PythonPin& p : pins) out[p.name] = p.version;
    return out;
  }

  std::string ServedSha256(const std::string& file) {
    HttpRequest request;
    request.url = "http://127.0.0.1:" + std::to_string(port_) + "/files/" + file;
    return Sha256Hex(HttpFetch(request).body);
  }

  testing::TempDir dir_;
  int port_ = 0;
  std::unique_ptr<testing::BackgroundProcess> server_;
};

TEST_F(PythonIndex, TheClosureFollowsRequiresDistToTheNewestAllowedVersionWithItsHash) {
  Serve(nlohmann::json::array());
  const auto pins = Resolve({{"trainlock-demo-app", "1.0.0"}});
  // util 2.0.0 exists but app requires <2; the Windows-only dependency's marker is false.
  EXPECT_EQ(Versions(pins), (std::map<std::string, std::string>{{"trainlock-demo-app", "1.0.0"},
                                                                {"trainlock-demo-util", "1.2.0"}}));
  for (const PythonPin& p : pins) {
    EXPECT_EQ(p.sha256, ServedSha256(p.file)) << p.file;
    EXPECT_EQ(p.index, Index());
  }
  EXPECT_EQ(pins[1].file, "trainlock_demo_util-1.2.0-py3-none-any.whl");
}

// pip asks for a local version's wheel percent-encoded ("+" as %2B, as it quotes every path it
// takes from a link); the stand-in index serves it by its decoded name, as PyPI does.
TEST_F(PythonIndex, TheStandInServesALocalVersionsWheelAskedForPercentEncoded) {
  Serve(nlohmann::json::array({{{"name", "trainlock-demo-local"}, {"version", "1.0.0+cpu"}}}));
  const auto pins = Resolve({{"trainlock-demo-local", "1.0.0+cpu"}});
  ASSERT_EQ(pins.size(), 1u);
  ASSERT_EQ(pins[0].file, "trainlock_demo_local-1.0.0+cpu-py3-none-any.whl");
  EXPECT_EQ(ServedSha256("trainlock_demo_local-1.0.0%2Bcpu-py3-none-any.whl"), pins[0].sha256);
}

TEST_F(PythonIndex, HtmlAndJsonPagesAndWheelsWithoutMetadataFilesGiveOneClosure) {
  Serve(nlohmann::json::array(), {"--format", "json"});
  const auto json = Resolve({{"trainlock-demo-app", "1.0.0"}});
  server_.reset();
  Serve(nlohmann::json::array(), {"--format", "html", "--no-metadata", "--deflate"});
  const auto html = Resolve({{"trainlock-demo-app", "1.0.0"}});
  EXPECT_EQ(Versions(json), Versions(html));
  // Deflated wheels are other bytes: the hashes are the served ones.
  for (const PythonPin& p : html) EXPECT_EQ(p.sha256, ServedSha256(p.file));
}

TEST_F(PythonIndex, ALaterConstraintRepicksAnEarlierChoice) {
  // a needs b (any) and c; c needs b<2: b is first picked at 2.0, then re-picked at 1.5.
  Serve(nlohmann::json::array({
      {{"name", "a"}, {"version", "1.0"}, {"requires", {"b", "c"}}},
      {{"name", "b"}, {"version", "1.5"}, {"requires", nlohmann::json::array()}},
      {{"name", "b"}, {"version", "2.0"}, {"requires", nlohmann::json::array()}},
      {{"name", "c"}, {"version", "1.0"}, {"requires", {"b<2"}}},
  }));
  EXPECT_EQ(Versions(Resolve({{"a", "1.0"}})),
            (std::map<std::string, std::string>{{"a", "1.0"}, {"b", "1.5"}, {"c", "1.0"}}));
}

TEST_F(PythonIndex, ExtrasMarkersRequiresPythonPreReleasesAndYankedFilesAreHonoured) {
  Serve(nlohmann::json::array({
      {{"name", "top"},
       {"version", "1.0"},
       {"requires", {"lib[fast]>=1", "old; python_version < '3.8'"}}},
      {{"name", "lib"}, {"version", "1.0"}, {"requires", {"speed; extra == 'fast'"}}},
      {{"name", "lib"}, {"version", "3.0"}, {"requires_python", ">=3.13"}},
      {{"name", "lib"}, {"version", "2.0rc1"}},
      {{"name", "lib"}, {"version", "1.5"}, {"yanked", true}},
      {{"name", "speed"}, {"version", "0.1"}},
  }));
  EXPECT_EQ(Versions(Resolve({{"top", "1.0"}})),
            (std::map<std::string, std::string>{{"top", "1.0"}, {"lib", "1.0"}, {"speed", "0.1"}}));
}

TEST_F(PythonIndex, AConflictNamesEveryConstraintAndWhoMadeIt) {
  Serve(nlohmann::json::array());
  auto [code, message] =
      Refusal({{"trainlock-demo-app", "1.0.0"}, {"trainlock-demo-util", "2.0.0"}});
  EXPECT_EQ(code, 1);
  EXPECT_NE(message.find("no version of trainlock-demo-util satisfies ==2.0.0 (from the manifest), "
                         ">=1.1,<2 (from trainlock-demo-app 1.0.0)"),
            std::string::npos)
      << message;
}

TEST_F(PythonIndex, AMissingDependencyIsRefusedNamingWhoNeedsIt) {
  Serve(
      nlohmann::json::array({{{"name", "needy"}, {"version", "1.0"}, {"requires", {"ghost>=1"}}}}));
  auto [code, message] = Refusal({{"needy", "1.0"}});
  EXPECT_EQ(code, 1);
  EXPECT_NE(message.find("no index has ghost (required by needy 1.0"), std::string::npos)
      << message;
}

TEST_F(PythonIndex, AWheelWhoseBytesAreNotTheIndexsHashIsRefused) {
  // Without metadata files the wheel itself is downloaded, and its hash is checked.
  Serve(nlohmann::json::array(),
        {"--no-metadata", "--tamper", "trainlock_demo_util-1.2.0-py3-none-any.whl"});
  auto [code, message] = Refusal({{"trainlock-demo-app", "1.0.0"}});
  EXPECT_EQ(code, 1);
  EXPECT_NE(message.find("trainlock_demo_util-1.2.0-py3-none-any.whl: sha256"), std::string::npos)
      << message;
  EXPECT_NE(message.find("refusing tampered or corrupt content"), std::string::npos) << message;
}

TEST_F(PythonIndex, AnIndexThatCannotBeReachedIsExit3) {
  port_ = testing::FreeLoopbackPort();  // nothing listens
  try {
    Resolve({{"anything", "1.0"}});
    ADD_FAILURE() << "resolved";
  } catch (const Failure& e) {
    EXPECT_EQ(e.exit_code(), 3);
    EXPECT_NE(std::string(e.what()).find("index unreachable"), std::string::npos) << e.what();
  }
}

TEST(IndexPage, CharacterEntitiesAreDecodedOnceNamedAndNumeric) {
  const auto files = ParseIndexPage(
      "<a href=\"a-1.0-py3-none-any.whl\" data-requires-python=\"&gt;=3.8,&#60;4&#x2c;!=3.9\">"
      "a&amp;lt;b</a>",
      "text/html", "https://x.example/simple/a/", "a");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].requires_python, ">=3.8,<4,!=3.9");
  EXPECT_EQ(files[0].file, "a&lt;b");  // decoded once: &amp;lt; is the text &lt;
}

TEST(IndexPage, AJsonPageBeyondTheJsonLimitsIsExit3WithOurMessage) {
  try {
    ParseIndexPage(std::string(100000, '[') + std::string(100000, ']'),
                   "application/vnd.pypi.simple.v1+json", "https://x.example/simple/a/", "a");
    ADD_FAILURE() << "parsed";
  } catch (const Failure& e) {
    EXPECT_EQ(e.exit_code(), 3);
    EXPECT_NE(std::string(e.what()).find("JSON nested deeper than 64"), std::string::npos)
        << e.what();
  }
}

TEST(CoreMetadata, ABlankContinuationLineIsSkippedNotAnError) {
  const CoreMetadata m =
      ParseCoreMetadata("Name: a\nVersion: 1.0\nSummary: x\n   \nRequires-Dist: b\n");
  EXPECT_EQ(m.name, "a");
  EXPECT_EQ(m.requires_dist, std::vector<std::string>{"b"});
}

// A hostile index (pypi_server.py --hostile): every answer is bounded in the time and memory it
// costs, refused with our own message, and leaves nothing behind in the scratch directory.
TEST_F(PythonIndex, AJsonPageNestedDeeperThanTheJsonLimitIsRefusedAsTheIndexsFault) {
  Serve(nlohmann::json::array(), {"--hostile", "deep-json"});
  auto [code, message] = Refusal({{"trainlock-demo-app", "1.0.0"}});
  EXPECT_EQ(code, 3);
  EXPECT_NE(message.find("the index's JSON page is refused: JSON nested deeper than 64"),
            std::string::npos)
      << message;
}

TEST_F(PythonIndex, AnHtmlPageOfManyCharacterEntitiesIsReadInLinearTime) {
  Serve(nlohmann::json::array(), {"--format", "html", "--hostile", "entities"});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Versions(Resolve({{"trainlock-demo-app", "1.0.0"}})).size(), 2u);
  // 200,000 entities: a replace per entity took minutes; one pass takes milliseconds.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST_F(PythonIndex, AWheelTricklingOutIsAbandonedAfterTheTimeoutAndNotKept) {
  Serve(nlohmann::json::array(), {"--no-metadata", "--hostile", "slow-wheel"});
  const auto start = std::chrono::steady_clock::now();
  ClosureRequest request;
  request.what = "targets.cpu";
  request.indexes = {Index()};
  request.platform = *PythonPlatform::Parse("3.11");
  request.roots = {{"trainlock-demo-util", "1.2.0"}};
  IndexOptions options;
  options.timeout_s = 2;
  options.attempts = 1;
  options.scratch = dir_.path() / "scratch";
  try {
    ResolvePythonClosure(request, options);
    ADD_FAILURE() << "resolved";
  } catch (const Failure& e) {
    EXPECT_EQ(e.exit_code(), 3);
    EXPECT_NE(std::string(e.what()).find("timed out: no progress"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_TRUE(fs::is_empty(dir_.path() / "scratch")) << "a partial wheel stayed behind";
}

TEST_F(PythonIndex, AWheelDeclaringMoreThanTheLimitIsRefusedBeforeAnyByteIsWritten) {
  Serve(nlohmann::json::array(), {"--no-metadata", "--hostile", "huge-declared"});
  auto [code, message] = Refusal({{"trainlock-demo-util", "1.2.0"}});
  EXPECT_EQ(code, 1);
  EXPECT_NE(message.find("sent or declared more than 8589934592 bytes"), std::string::npos)
      << message;
  EXPECT_TRUE(fs::is_empty(dir_.path() / "scratch")) << "a partial wheel stayed behind";
}

// libcurl reads file:// URLs unless told not to: file:///dev/zero never ends, and ~/.netrc's
// credentials would go wherever such a link points.
TEST_F(PythonIndex, AWheelLinkThatIsNotHttpIsRefusedNotRead) {
  Serve(nlohmann::json::array(), {"--format", "html", "--no-metadata", "--hostile", "file-link"});
  const auto start = std::chrono::steady_clock::now();
  auto [code, message] = Refusal({{"trainlock-demo-util", "1.2.0"}});
  EXPECT_NE(code, 0);
  EXPECT_NE(message.find("file:///dev/zero"), std::string::npos) << message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_TRUE(fs::is_empty(dir_.path() / "scratch")) << "a partial wheel stayed behind";
}

// A 503 whose page never ends, faster than the low-speed limit: once read without end.
TEST_F(PythonIndex, AnEndlessErrorPageForAWheelIsAbandoned) {
  Serve(nlohmann::json::array(), {"--no-metadata", "--hostile", "endless-error"});
  const auto start = std::chrono::steady_clock::now();
  auto [code, message] = Refusal({{"trainlock-demo-util", "1.2.0"}});
  EXPECT_EQ(code, 3);
  EXPECT_NE(message.find("503"), std::string::npos) << message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_TRUE(fs::is_empty(dir_.path() / "scratch")) << "a partial wheel stayed behind";
}

TEST_F(PythonIndex, AManifestPinBeyondAnIntegerIsRefusedNotDereferenced) {
  Serve(nlohmann::json::array());
  auto [code, message] = Refusal({{"trainlock-demo-util", "99999999999999999999"}});
  EXPECT_EQ(code, 2);
  EXPECT_NE(message.find("'99999999999999999999'"), std::string::npos) << message;
}

// A package's METADATA is the index's text: a Requires-Dist holding terminal escape sequences
// reaches `trainlock lock`'s output made visible, never as the bytes a terminal would obey.
TEST_F(PythonIndex, EscapeSequencesInAPackagesMetadataNeverReachTheTerminal) {
  Serve(nlohmann::json::array({{{"name", "needy"},
                                {"version", "1.0"},
                                {"requires", {"gh\x1b]0;pwned\x07ost\x1b[2J>=1"}}}}));
  const fs::path project = dir_.path() / "tiny";
  testing::CopyExample("tiny", project);
  std::string manifest = testing::ReadFile(project / "trainlock.toml");
  manifest.replace(manifest.find("trainlock-demo-app = \"1.0.0\""),
                   std::string("trainlock-demo-app = \"1.0.0\"").size(), "needy = \"1.0\"");
  const std::string demo_index = "http://127.0.0.1:8765/simple";
  manifest.replace(manifest.find(demo_index), demo_index.size(), Index());
  testing::WriteFile(project / "trainlock.toml", manifest);
  const testing::RunResult r = testing::RunTrainlock({"lock", project.string(), "--python-only"});
  EXPECT_NE(r.exit_code, 0);
  const std::string output = r.out + r.err;
  EXPECT_NE(output.find("needy"), std::string::npos) << output;
  EXPECT_EQ(output.find('\x1b'), std::string::npos) << output;
  EXPECT_EQ(output.find('\x07'), std::string::npos) << output;
}

}  // namespace
}  // namespace trainlock
