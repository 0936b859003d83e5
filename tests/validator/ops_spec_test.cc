// The ops spec (validators/ops/ops_spec.h): what the coordinator resolves from the lock's
// [[custom-ops]] is what the ops worker reads back, member for member; a spec changed after
// the coordinator wrote it, or one with a member out of the lock's ranges, is refused naming
// the file and the member. The ops worker itself is started on a spec, never on the project.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/sha256.h"
#include "ops/ops_spec.h"
#include "run/engine_spec.h"  // kMaxEngineSpecBytes
#include "support/pinned_files.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

OpsLibrary SampleLibrary() {
  OpsLibrary lib;
  lib.library = "ops/libops.so";
  lib.path = "/project/ops/libops.so";
  lib.sha256 = std::string(64, 'a');
  lib.ops = {"trainlock_ops::fused_rmsnorm"};
  SmokeSpec smoke;
  smoke.op = "trainlock_ops::fused_rmsnorm";
  smoke.inputs = {{{8, 64}, "bf16"}, {{64}, "bf16"}};
  smoke.reference = "rmsnorm";
  smoke.rtol = 2e-2;
  smoke.atol = 3e-2;
  smoke.grad_rtol = 4e-2;
  smoke.grad_atol = 5e-2;
  lib.smoke = {smoke};
  return lib;
}

std::string SpecText(const nlohmann::json& spec) {
  return spec.dump();
}

// The refusal's text, or "" when the spec is read.
std::string Refusal(const std::string& text) {
  try {
    ParseOpsSpec(text, "ops-spec.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(OpsSpec, ReadsBackEveryMemberTheCoordinatorWrote) {
  const std::vector<OpsLibrary> read =
      ParseOpsSpec(SpecText(OpsSpecJson({SampleLibrary()})), "ops-spec.json");
  ASSERT_EQ(read.size(), 1u);
  const OpsLibrary want = SampleLibrary();
  EXPECT_EQ(read[0].library, want.library);
  EXPECT_EQ(read[0].path, want.path);
  EXPECT_EQ(read[0].sha256, want.sha256);
  EXPECT_EQ(read[0].ops, want.ops);
  ASSERT_EQ(read[0].smoke.size(), 1u);
  const SmokeSpec& s = read[0].smoke[0];
  EXPECT_EQ(s.op, want.smoke[0].op);
  EXPECT_EQ(s.reference, "rmsnorm");
  ASSERT_EQ(s.inputs.size(), 2u);
  EXPECT_EQ(s.inputs[0].shape, (std::vector<int64_t>{8, 64}));
  EXPECT_EQ(s.inputs[1].dtype, "bf16");
  EXPECT_EQ(s.rtol, 2e-2);
  EXPECT_EQ(s.atol, 3e-2);
  EXPECT_EQ(s.grad_rtol, 4e-2);
  EXPECT_EQ(s.grad_atol, 5e-2);
}

TEST(OpsSpec, ALibraryBuiltInTheImageHasNoPinnedHash) {
  OpsLibrary built = SampleLibrary();
  built.sha256 = "";
  EXPECT_EQ(ParseOpsSpec(SpecText(OpsSpecJson({built})), "ops-spec.json")[0].sha256, "");
}

TEST(OpsSpec, ADtypeNoSmokeTestTakesIsRefusedNamingTheMember) {
  nlohmann::json spec = OpsSpecJson({SampleLibrary()});
  spec["libraries"][0]["smoke"][0]["inputs"][1]["dtype"] = "fp8";
  const std::string why = Refusal(SpecText(spec));
  EXPECT_NE(why.find("ops-spec.json"), std::string::npos) << why;
  EXPECT_NE(why.find("ops.libraries[0].smoke[0].inputs[1].dtype"), std::string::npos) << why;
}

TEST(OpsSpec, AShapeBeyondTheLocksRangeIsRefused) {
  nlohmann::json spec = OpsSpecJson({SampleLibrary()});
  spec["libraries"][0]["smoke"][0]["inputs"][0]["shape"] = {8, int64_t{1} << 40};
  EXPECT_NE(Refusal(SpecText(spec)).find("ops.libraries[0].smoke[0].inputs[0].shape[1]"),
            std::string::npos);
}

TEST(OpsSpec, ARelativeLibraryPathIsRefused) {
  nlohmann::json spec = OpsSpecJson({SampleLibrary()});
  spec["libraries"][0]["path"] = "ops/libops.so";
  EXPECT_NE(Refusal(SpecText(spec)).find("ops.libraries[0].path"), std::string::npos);
}

TEST(OpsSpec, ASmokeTestOfAnOpTheLibraryDoesNotListIsRefused) {
  nlohmann::json spec = OpsSpecJson({SampleLibrary()});
  spec["libraries"][0]["smoke"][0]["op"] = "trainlock_ops::other";
  EXPECT_NE(Refusal(SpecText(spec)).find("ops.libraries[0].smoke[0].op"), std::string::npos);
}

TEST(OpsSpec, AnotherSchemaIsRefused) {
  nlohmann::json spec = OpsSpecJson({SampleLibrary()});
  spec["schema"] = "trainlock.engine-spec/1";
  EXPECT_NE(Refusal(SpecText(spec)).find("ops.schema"), std::string::npos);
}

TEST(OpsSpec, AFileChangedAfterTheCoordinatorWroteItIsRefusedWithBothHashes) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "ops-spec.json";
  const std::string written = WriteOpsSpec(file, {SampleLibrary()});
  EXPECT_EQ(ReadOpsSpecFile(file, written).size(), 1u);
  OpsLibrary swapped = SampleLibrary();
  swapped.path = "/tmp/elsewhere.so";
  const std::string other = WriteOpsSpec(file, {swapped});
  try {
    ReadOpsSpecFile(file, written);
    FAIL() << "a changed ops spec was read";
  } catch (const ArtifactMismatch& e) {
    EXPECT_NE(std::string(e.what()).find(written), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(other), std::string::npos) << e.what();
  }
}

TEST(OpsSpec, AFileChangedAfterTheCoordinatorWroteItIsNamedAnOpsSpec) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "ops-spec.json";
  const std::string written = WriteOpsSpec(file, {SampleLibrary()});
  try {
    ReadOpsSpecFile(file, std::string(64, '0'));
    FAIL() << "an ops spec with another hash was read";
  } catch (const ArtifactMismatch& e) {
    EXPECT_NE(std::string(e.what()).find("the ops spec changed after the coordinator wrote it"),
              std::string::npos)
        << e.what();
  }
}

TEST(OpsSpec, AFileOverTheSpecSizeCapIsRefusedAsAnOpsSpecBeforeItIsHashed) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "ops-spec.json";
  const std::string text(static_cast<size_t>(kMaxEngineSpecBytes) + 1, ' ');
  WriteFileAtomically(file, text);
  try {
    ReadOpsSpecFile(file, Sha256Hex(text));
    FAIL() << "an oversized ops spec was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the ops spec is larger than 16 MiB"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
}

// The ops worker takes the libraries from its spec: given a spec whose hash is not the one on
// its command line it loads nothing and says why, naming the file.
TEST(OpsWorker, RefusesASpecThatIsNotTheOneTheCoordinatorHashed) {
  testing::TempDir dir;
  const fs::path spec = dir.path() / "ops-spec.json";
  const fs::path result = dir.path() / "ops.json";
  WriteOpsSpec(spec, {SampleLibrary()});
  const std::string command = (testing::BinDir() / "trainlock-validate").string() +
                              " worker --role ops --device cpu --ops-spec " + spec.string() +
                              " --ops-spec-sha256 " + std::string(64, '0') + " --result " +
                              result.string() + " 2>/dev/null";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  const nlohmann::json r = nlohmann::json::parse(testing::ReadFile(result));
  EXPECT_EQ(r["error"]["kind"], "integrity");
  EXPECT_NE(r["error"]["message"].get<std::string>().find(spec.string()), std::string::npos);
  EXPECT_FALSE(r.contains("libraries"));
}

TEST(OpsWorker, HasNoProjectOption) {
  testing::TempDir dir;
  const std::string command = (testing::BinDir() / "trainlock-validate").string() +
                              " worker --role ops --project " + dir.path().string() + " --result " +
                              (dir.path() / "ops.json").string() + " >/dev/null 2>&1";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);  // a usage error: the option is gone
}

}  // namespace
}  // namespace trainlock::validate
