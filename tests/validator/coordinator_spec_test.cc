// A spec file the coordinator wrote and hashed (validators/support/pinned_files.h's
// ReadCoordinatorSpec): the process that uses it reads the bytes bounded, hashes them itself and
// trusts them only when they are the bytes the coordinator hashed; every refusal names the file
// and which spec it is.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/sha256.h"
#include "run/engine_spec.h"  // kMaxEngineSpecBytes
#include "support/pinned_files.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

bool Says(const std::exception& e, const std::string& text) {
  return std::string(e.what()).find(text) != std::string::npos;
}

TEST(CoordinatorSpec, TheBytesTheCoordinatorHashedAreReadWithTheirHash) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "engine-spec.json";
  WriteFileAtomically(file, "{\"schema\": \"x\"}\n");
  const CoordinatorSpec spec =
      ReadCoordinatorSpec(file, Sha256Hex("{\"schema\": \"x\"}\n"), "engine spec");
  EXPECT_EQ(spec.text, "{\"schema\": \"x\"}\n");
  EXPECT_EQ(spec.sha256, Sha256Hex(spec.text));
}

TEST(CoordinatorSpec, ASpecChangedAfterTheCoordinatorHashedItIsRefusedWithBothHashes) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "engine-spec.json";
  const std::string hashed = Sha256Hex("{\"seed\": 1}\n");
  WriteFileAtomically(file, "{\"seed\": 2}\n");
  try {
    ReadCoordinatorSpec(file, hashed, "engine spec");
    FAIL() << "a changed spec was read";
  } catch (const ArtifactMismatch& e) {
    EXPECT_TRUE(Says(e, file.string())) << e.what();
    EXPECT_TRUE(Says(e, hashed)) << e.what();
    EXPECT_TRUE(Says(e, Sha256Hex("{\"seed\": 2}\n"))) << e.what();
    EXPECT_TRUE(Says(e, "the engine spec changed after the coordinator wrote it")) << e.what();
  }
}

TEST(CoordinatorSpec, ASpecOverTheSizeCapIsRefusedNamingWhichSpecBeforeItIsHashed) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "engine-spec.json";
  const std::string text(static_cast<size_t>(kMaxEngineSpecBytes) + 1, ' ');
  WriteFileAtomically(file, text);
  try {
    ReadCoordinatorSpec(file, Sha256Hex(text), "engine spec");
    FAIL() << "an oversized spec was read";
  } catch (const InputError& e) {
    EXPECT_TRUE(Says(e, file.string())) << e.what();
    EXPECT_TRUE(Says(e, "the engine spec is larger than 16 MiB")) << e.what();
  }
}

TEST(CoordinatorSpec, AMissingSpecIsRefusedNamingTheFile) {
  testing::TempDir dir;
  const fs::path file = dir.path() / "absent.json";
  try {
    ReadCoordinatorSpec(file, std::string(64, '0'), "ops spec");
    FAIL() << "a missing spec was read";
  } catch (const InputError& e) {
    EXPECT_TRUE(Says(e, file.string())) << e.what();
  }
}

}  // namespace
}  // namespace trainlock::validate
