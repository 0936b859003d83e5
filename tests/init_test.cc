// `trainlock init --from-hub` against the loopback stand-in Hub (tests/servers/hf_server.py):
// the revision resolves to its commit, the manifest pins it, the training config takes the
// model's shape (rope_scaling included) from config.json, an unsupported model is refused
// with nothing written, and `trainlock check` then names every training-config field that
// disagrees with the pinned config.json at its line.
#include <gtest/gtest.h>

#include <memory>

#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCommit = "0123456789abcdef0123456789abcdef01234567";

// A small Llama with Llama 3's rope_scaling, as transformers writes config.json.
constexpr const char* kSmallLlama = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
  "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 2, "intermediate_size": 160, "vocab_size": 256,
  "max_position_embeddings": 128, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
  "tie_word_embeddings": false, "attention_bias": false, "mlp_bias": false
})";

class Init : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::HaveProgram("python3")) {
      skip_ = "python3 is not installed (ci/deps.sh installs it)";
      return;
    }
    root_ = std::make_unique<testing::TempDir>();
    const fs::path hub = root_->path() / "hub";
    testing::WriteFile(hub / "org/Small-Llama/config.json", kSmallLlama);
    std::string yarn = kSmallLlama;
    yarn.replace(yarn.find("\"llama3\""), 8, "\"yarn\"");
    testing::WriteFile(hub / "org/yarn-llama/config.json", yarn);
    // Shapes config.json may state but `trainlock check` refuses in the training config.
    auto with = [&](const std::string& repo, const std::string& from, const std::string& to) {
      std::string text = kSmallLlama;
      text.replace(text.find(from), from.size(), to);
      testing::WriteFile(hub / repo / "config.json", text);
    };
    with("org/odd-heads", "\"hidden_size\": 64", "\"hidden_size\": 66");
    with("org/odd-kv", "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3");
    with("org/zero-theta", "\"rope_theta\": 500000.0", "\"rope_theta\": 0");
    with("org/zero-eps", "\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": 0");
    // A revision answer that declares a 200 MiB config.json (the file itself is small).
    testing::WriteFile(hub / "org/huge-config/config.json", kSmallLlama);
    testing::WriteFile(hub / "org/huge-config/answer.json",
                       std::string(R"({"sha": ")") + kCommit +
                           R"(", "siblings": [{"rfilename": "config.json", "size": 209715200}]})");
    port_ = testing::FreeLoopbackPort();
    server_ = std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{"python3",
                                 (testing::SourceDir() / "tests/servers/hf_server.py").string(),
                                 std::to_string(port_), hub.string()},
        root_->path() / "hub.log");
    if (!testing::WaitForHttp(Endpoint() + "/api/models/x/y/revision/main", 30)) {
      skip_ = "hf_server.py did not start: " + testing::ReadFile(root_->path() / "hub.log");
    }
  }
  static void TearDownTestSuite() {
    server_.reset();
    root_.reset();
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }

  static std::string Endpoint() { return "http://127.0.0.1:" + std::to_string(port_); }

  testing::RunResult Run(std::vector<std::string> args) {
    return testing::RunProgram("trainlock", args, {"HF_ENDPOINT=" + Endpoint()});
  }
  testing::RunResult InitFrom(const std::string& model, const std::string& target = "cpu") {
    return Run({"init", project_.string(), "--from-hub", model, "--target", target});
  }

  testing::TempDir dir_;
  fs::path project_ = dir_.path() / "p";
  static inline std::string skip_;
  static inline std::unique_ptr<testing::TempDir> root_;
  static inline std::unique_ptr<testing::BackgroundProcess> server_;
  static inline int port_ = 0;
};

TEST_F(Init, AnUnpinnedRevisionIsPinnedToItsCommitInTheManifest) {
  testing::RunResult r = InitFrom("org/Small-Llama");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string manifest = testing::ReadFile(project_ / "trainlock.toml");
  EXPECT_NE(manifest.find("repo = \"org/Small-Llama\""), std::string::npos) << manifest;
  EXPECT_NE(manifest.find(std::string("revision = \"") + kCommit + "\""), std::string::npos);
  EXPECT_NE(manifest.find("[targets.cpu]"), std::string::npos);
  EXPECT_NE(r.out.find(std::string("resolved org/Small-Llama@main to ") + kCommit),
            std::string::npos)
      << r.out;
}

TEST_F(Init, TheTrainingConfigHasTheModelsShapeRopeThetaAndRopeScaling) {
  ASSERT_EQ(InitFrom("org/Small-Llama@" + std::string(kCommit)).exit_code, 0);
  const std::string config = testing::ReadFile(project_ / "configs/small-llama.yaml");
  for (const char* line :
       {"hidden_size: 64\n", "num_layers: 2\n", "num_heads: 4\n", "num_kv_heads: 2\n",
        "intermediate_size: 160\n", "vocab_size: 256\n", "rope_theta: 500000\n",
        "    type: llama3\n", "    factor: 8\n", "    original_max_position_embeddings: 64\n",
        "norm_eps: 1e-05\n", "seq_len: 128\n", "precision: fp32\n"}) {
    EXPECT_NE(config.find(line), std::string::npos) << line << " in\n" << config;
  }
}

TEST_F(Init, TheProjectItWritesChecksCleanAgainstItsPinnedConfigJson) {
  ASSERT_EQ(InitFrom("org/Small-Llama").exit_code, 0);
  testing::RunResult r = Run({"check", project_.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(Init, CheckNamesAConfigFieldThatDisagreesWithThePinnedConfigJsonAtItsLine) {
  ASSERT_EQ(InitFrom("org/Small-Llama").exit_code, 0);
  const fs::path config = project_ / "configs/small-llama.yaml";
  std::string text = testing::ReadFile(config);
  text.replace(text.find("num_kv_heads: 2"), 15, "num_kv_heads: 4");
  testing::WriteFile(config, text);
  int line = 1;
  for (size_t i = 0; i < text.find("num_kv_heads: 4"); ++i) line += text[i] == '\n';
  testing::RunResult r = Run({"check", project_.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(config.string() + ":" + std::to_string(line) +
                       ":17: finding [model.config]"
                       ": model.num_kv_heads is 4 but "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("has num_key_value_heads 2"), std::string::npos) << r.out;
}

TEST_F(Init, UnsupportedRopeScalingIsRefusedAndNothingIsWritten) {
  testing::RunResult r = InitFrom("org/yarn-llama", "cuda");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("rope_scaling type 'yarn' is not supported"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(project_ / "trainlock.toml"));
  EXPECT_FALSE(fs::exists(project_ / "configs"));
}

TEST_F(Init, AnUnknownRevisionIsTheHubsAnswerExitThree) {
  testing::RunResult r = InitFrom("org/Small-Llama@no-such-branch");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_FALSE(fs::exists(project_ / "trainlock.toml"));
}

TEST_F(Init, AnExistingManifestIsKeptUnlessForced) {
  ASSERT_EQ(InitFrom("org/Small-Llama").exit_code, 0);
  testing::RunResult again = InitFrom("org/Small-Llama", "cuda");
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("trainlock.toml: error: already exists"), std::string::npos)
      << again.err;
  EXPECT_EQ(Run({"init", project_.string(), "--from-hub", "org/Small-Llama", "--target", "cuda",
                 "--force"})
                .exit_code,
            0);
  EXPECT_NE(testing::ReadFile(project_ / "trainlock.toml").find("[targets.cuda]"),
            std::string::npos);
}

TEST_F(Init, AConfigJsonTheHubDeclaresTooLargeIsRefusedBeforeItIsDownloaded) {
  testing::RunResult r = InitFrom("org/huge-config");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("config.json: error: the Hub declares 209715200 bytes; refusing inputs "
                       "over 67108864 bytes"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(project_ / "trainlock.toml"));
  EXPECT_FALSE(fs::exists(project_ / ".trainlock"));
}

// --force writes over files; a directory where the manifest goes is refused before anything is
// fetched or written, not after the configs and the cache were written.
TEST_F(Init, ADirectoryNamedLikeTheManifestIsRefusedEvenWithForceAndNothingIsWritten) {
  fs::create_directories(project_ / "trainlock.toml");
  testing::RunResult r = Run(
      {"init", project_.string(), "--from-hub", "org/Small-Llama", "--target", "cpu", "--force"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("trainlock.toml: error: exists and is not a regular file"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(project_ / "configs"));
  EXPECT_FALSE(fs::exists(project_ / ".trainlock"));
}

TEST_F(Init, AMalformedModelNameIsBadInputBeforeAnyRequest) {
  testing::RunResult r = InitFrom("no-slash");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--from-hub: error: not a Hub model: 'no-slash'"), std::string::npos)
      << r.err;
}

TEST_F(Init, AShapeCheckWouldRefuseIsRefusedNamingTheFieldAndNothingIsWritten) {
  const std::pair<const char*, const char*> cases[] = {
      {"org/odd-heads", "model.hidden_size 66 is not divisible by model.num_heads 4"},
      {"org/odd-kv", "model.num_heads 4 is not a multiple of model.num_kv_heads 3"},
      {"org/zero-theta", "model.rope_theta"},
      {"org/zero-eps", "model.norm_eps"}};
  for (const auto& [repo, field] : cases) {
    testing::RunResult r = InitFrom(repo);
    EXPECT_EQ(r.exit_code, 2) << repo << r.err;
    EXPECT_NE(r.err.find(":config.json: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(field), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(project_ / "trainlock.toml")) << repo;
    EXPECT_FALSE(fs::exists(project_ / "configs")) << repo;
  }
}

TEST_F(Init, AFileWhereTheProjectDirectoryShouldBeIsBadInputInOurWords) {
  testing::WriteFile(project_, "not a directory\n");
  testing::RunResult r = InitFrom("org/Small-Llama");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(project_.string() + ": error: "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("filesystem error"), std::string::npos) << r.err;
}

TEST_F(Init, AnUnusableCacheDirectoryIsBadInputInOurWords) {
  testing::WriteFile(dir_.path() / "cache-file", "a file, not a directory\n");
  testing::RunResult r = testing::RunProgram(
      "trainlock", {"init", project_.string(), "--from-hub", "org/Small-Llama", "--target", "cpu"},
      {"HF_ENDPOINT=" + Endpoint(), "TRAINLOCK_CACHE=" + (dir_.path() / "cache-file").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cache-file"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("filesystem error"), std::string::npos) << r.err;
}

TEST_F(Init, ASymlinkedConfigsDirectoryIsRefusedAndNothingIsWrittenThrough) {
  const fs::path outside = dir_.path() / "outside";
  fs::create_directories(outside);
  fs::create_directories(project_);
  fs::create_directory_symlink(outside, project_ / "configs");
  testing::RunResult r = InitFrom("org/Small-Llama");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("configs: error: is a symbolic link"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(outside));
  EXPECT_FALSE(fs::exists(project_ / "trainlock.toml"));
}

TEST_F(Init, ARevisionThatWouldChangeTheUrlIsRefusedBeforeAnyRequest) {
  for (const char* revision : {"main?x=1", "main#frag", "../../etc", "a b", "v1/../main"}) {
    testing::RunResult r = InitFrom(std::string("org/Small-Llama@") + revision);
    EXPECT_EQ(r.exit_code, 2) << revision << r.err;
    EXPECT_NE(r.err.find("is not a Hub revision"), std::string::npos) << r.err;
  }
}

TEST_F(Init, APasswordWithASlashInTheEndpointIsNeverPrinted) {
  testing::RunResult r = testing::RunProgram(
      "trainlock", {"init", project_.string(), "--from-hub", "org/Small-Llama", "--target", "cpu"},
      {"HF_ENDPOINT=http://user:s3cr/et@127.0.0.1:1"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.err.find("s3cr"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainlock
