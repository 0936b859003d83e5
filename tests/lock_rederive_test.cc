// A hand-edited lock is refused: `check` and `lock --check` re-derive the lock offline from the
// manifest and the lock's own pins and name each field that differs; lock-sha256 covers every
// field, [images] included, while the build identity images and reports carry leaves it out.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/canonical.h"
#include "base/toml_document.h"
#include "lock/lock_rederive.h"
#include "project/project.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

toml::table Doc(const std::string& text) {
  return ParseTomlDocument(text, "t.lock");
}

std::vector<std::string> Fields(const std::string& lock, const std::string& derived) {
  std::vector<std::string> out;
  for (const LockFieldDifference& d : LockFieldDifferences(Doc(lock), Doc(derived)))
    out.push_back(d.field);
  return out;
}

TEST(LockFieldDifferences, NameTheNestedFieldThatDiffers) {
  EXPECT_EQ(Fields("[validate]\nrequired = []\nsteps = 4\n",
                   "[validate]\nrequired = ['train.step']\nsteps = 4\n"),
            std::vector<std::string>{"validate.required"});
}

TEST(LockFieldDifferences, NameTheElementOfAnArrayOfTables) {
  EXPECT_EQ(Fields("[[custom-ops]]\nlibrary = 'a'\ntolerance = 0.5\n",
                   "[[custom-ops]]\nlibrary = 'a'\ntolerance = 0.001\n"),
            std::vector<std::string>{"custom-ops[0].tolerance"});
}

TEST(LockFieldDifferences, NameATableOnlyOneSideHas) {
  auto d = LockFieldDifferences(Doc("[a]\nx = 1\n[b]\ny = 2\n"), Doc("[a]\nx = 1\n"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].field, "b");
  EXPECT_EQ(d[0].derived, "(absent)");
}

TEST(LockFieldDifferences, SpellingIsNotADifference) {
  EXPECT_TRUE(Fields("a = 0x10\n[t]\nb = 'x'\n", "t = { b = \"x\" }\na = 16\n").empty());
}

TEST(LockFieldDifferences, ImagesAreNotDerivedSoNotCompared) {
  EXPECT_TRUE(Fields("[images.cpu]\nref = 'r'\ndigest = 'd'\n", "").empty());
}

TEST(LockIdentity, AnImagesTableChangesLockSha256ButNotTheBuildIdentity) {
  const toml::table plain = Doc("lock-version = 1\n");
  const toml::table built = Doc("lock-version = 1\n[images.cpu]\nref = 'r'\ndigest = 'd'\n");
  EXPECT_NE(LockSha256(plain), LockSha256(built));
  EXPECT_EQ(LockBuildSha256(plain), LockBuildSha256(built));
  EXPECT_EQ(LockSha256(plain), LockBuildSha256(plain));  // no [images]: one identity
}

// A copy of examples/tiny whose lock has `from` replaced by `to`.
fs::path EditedTiny(const testing::TempDir& dir, const std::string& from, const std::string& to) {
  const fs::path project = testing::CopyExample("tiny", dir.path());
  std::string lock = testing::ReadFile(project / "trainlock.lock");
  const size_t at = lock.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) lock.replace(at, from.size(), to);
  testing::WriteFile(project / "trainlock.lock", lock);
  return project;
}

const char* kRequired =
    "required = [ 'train.step', 'train.roundtrip', 'train.eval', 'ckpt.portable' ]";

TEST(HandEditedLock, CheckRefusesAnEmptiedRequiredListNamingTheField) {
  testing::TempDir dir;
  const fs::path project = EditedTiny(dir, kRequired, "required = [ ]");
  auto r = testing::RunTrainlock({"check", project.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("finding [lock.edited]: validate.required: [] but trainlock.toml"),
            std::string::npos)
      << r.out;
}

TEST(HandEditedLock, LockCheckRefusesAnEmptiedRequiredListNamingTheField) {
  testing::TempDir dir;
  const fs::path project = EditedTiny(dir, kRequired, "required = [ ]");
  auto r = testing::RunTrainlock({"lock", project.string(), "--check"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("trainlock.lock: validate.required: [] but trainlock.toml"),
            std::string::npos)
      << r.err;
}

TEST(HandEditedLock, CheckRefusesAnAddedTolerance) {
  testing::TempDir dir;
  const fs::path project = EditedTiny(dir, "[validate]\n", "[validate]\nloss-tolerance = 0.5\n");
  auto r = testing::RunTrainlock({"check", project.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("[lock.edited]: validate.loss-tolerance: 0.5 but"), std::string::npos)
      << r.out;
}

// The pins themselves: what follows from the manifest offline (lock/pin_consistency.h).
TEST(HandEditedLock, AWheelVersionOtherThanPythonPinsIsRefusedNamingTheField) {
  testing::TempDir dir;
  const fs::path project = EditedTiny(dir, "version = '1.0.0'", "version = '1.0.1'");
  auto r = testing::RunTrainlock({"check", project.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("[lock.edited]: targets.cpu.wheels[0].version: '1.0.1' but [python] "
                       "pins trainlock-demo-app at '1.0.0'"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[lock.edited]: targets.cpu.wheels[0].version: '1.0.1' but its file "
                       "trainlock_demo_app-1.0.0-py3-none-any.whl is version 1.0.0"),
            std::string::npos)
      << r.out;
  r = testing::RunTrainlock({"lock", project.string(), "--check"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("trainlock.lock: error: edited: the lock's pins do not follow from "
                       "trainlock.toml"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("trainlock.lock: targets.cpu.wheels[0].version: '1.0.1' but [python]"),
            std::string::npos)
      << r.err;
}

TEST(HandEditedLock, ADependencyWheelVersionOtherThanItsFileIsRefused) {
  testing::TempDir dir;
  const fs::path project = EditedTiny(dir, "version = '1.2.0'", "version = '1.3.0'");
  auto r = testing::RunTrainlock({"lock", project.string(), "--check"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("targets.cpu.wheels[1].version: '1.3.0' but its file "
                       "trainlock_demo_util-1.2.0-py3-none-any.whl is version 1.2.0"),
            std::string::npos)
      << r.err;
}

TEST(HandEditedLock, ADeletedRootWheelIsRefused) {
  testing::TempDir dir;
  const fs::path project = testing::CopyExample("tiny", dir.path());
  std::string lock = testing::ReadFile(project / "trainlock.lock");
  const size_t from = lock.find("    [[targets.cpu.wheels]]");
  const size_t to = lock.find("    [[targets.cpu.wheels]]", from + 1);
  ASSERT_NE(to, std::string::npos);
  testing::WriteFile(project / "trainlock.lock", lock.erase(from, to - from));
  auto r = testing::RunTrainlock({"check", project.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("[lock.edited]: targets.cpu.wheels: no wheel of trainlock-demo-app, which "
                       "[python] pins at '1.0.0'"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(testing::RunTrainlock({"lock", project.string(), "--check"}).exit_code, 1);
}

TEST(HandEditedLock, ABaseDigestThatIsItsOwnPlatformsManifestIsRefused) {
  testing::TempDir dir;
  const fs::path project = dir.path() / "h200-pilot";
  fs::create_directories(project);
  testing::CopyExample("h200-pilot", project);
  fs::create_directories(dir.path() / "ops");  // the custom op's sources, where it names them
  testing::CopyExample("ops", dir.path() / "ops");
  const Project before = LoadProject(project);
  const Target& cuda = before.lock->targets.at("cuda");
  const std::string index = cuda.base.substr(cuda.base.find('@') + 1);
  const std::string amd64 = cuda.base_platforms.at("linux/amd64");
  std::string lock = testing::ReadFile(project / "trainlock.lock");
  lock.replace(lock.find(index), index.size(), amd64);
  testing::WriteFile(project / "trainlock.lock", lock);
  auto r = testing::RunTrainlock({"lock", project.string(), "--check"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("targets.cuda.base: its digest " + amd64.substr(0, 19) +
                       "... is base-platforms' linux/amd64 manifest, not the index"),
            std::string::npos)
      << r.err;
}

TEST(HandEditedLock, ABaseDigestOtherThanTheManifestsOwnPinIsRefused) {
  testing::TempDir dir;
  const fs::path project = testing::CopyExample("tiny", dir.path());
  const std::string digest = LoadProject(project).lock->targets.at("cpu").base;
  std::string manifest = testing::ReadFile(project / "trainlock.toml");
  const std::string tag = "docker.io/library/debian:bookworm-slim";
  manifest.replace(manifest.find(tag), tag.size(), digest);  // the manifest pins the digest
  testing::WriteFile(project / "trainlock.toml", manifest);
  auto relock = testing::RunTrainlock({"lock", project.string(), "--offline"});
  ASSERT_EQ(relock.exit_code, 0) << relock.err;
  std::string lock = testing::ReadFile(project / "trainlock.lock");
  const std::string hex = digest.substr(digest.find("sha256:") + 7);
  lock.replace(lock.find(hex), hex.size(), std::string(64, 'e'));
  testing::WriteFile(project / "trainlock.lock", lock);
  auto r = testing::RunTrainlock({"check", project.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("[lock.edited]: targets.cpu.base: "), std::string::npos) << r.out;
}

// What nothing offline can check of tiny's lock (lock/pin_consistency.h, PinsNotCheckedOffline).
const char* kTinyWheels =
    "the dependencies and hashes of cpu's wheels (a deleted dependency wheel)";
const char* kTinyBase = "the base digest of cpu's tag-only base";

// `check` and `lock --check` on `project`, each expected to exit 0 and to say "ok offline" and
// "up to date offline", never a bare "ok" or "up to date", naming `unchecked` and the command
// that checks it.
void ExpectOkOfflineOnlyNaming(const fs::path& project, const std::string& unchecked) {
  const std::string upstream = "run `trainlock lock " + project.string() + " --check --upstream`";
  auto r = testing::RunTrainlock({"check", project.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(": ok offline: manifest, lock and config valid"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find(": ok:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": not checked offline: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(unchecked), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(upstream), std::string::npos) << r.out;
  r = testing::RunTrainlock({"lock", project.string(), "--check"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("trainlock.lock: up to date offline (lock-sha256 "), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("up to date ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("trainlock.lock: not checked offline: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(unchecked), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(upstream), std::string::npos) << r.out;
}

TEST(HandEditedLock, AnUneditedExampleLockIsOkOfflineNamingWhatOfflineCannotCheck) {
  testing::TempDir dir;
  const fs::path project = testing::CopyExample("tiny", dir.path());
  ExpectOkOfflineOnlyNaming(project,
                            std::string(kTinyWheels) + ", " + kTinyBase + ": run `trainlock lock");
}

// The lock does not record the wheels' dependencies: a deleted dependency wheel is not
// knowable offline, so it is not called ok, and what checks it is named.
TEST(HandEditedLock, ADeletedDependencyWheelIsNotCalledOk) {
  testing::TempDir dir;
  const fs::path project = testing::CopyExample("tiny", dir.path());
  std::string lock = testing::ReadFile(project / "trainlock.lock");
  const size_t first = lock.find("    [[targets.cpu.wheels]]");
  const size_t from = lock.find("    [[targets.cpu.wheels]]", first + 1);
  const size_t to = lock.find("[validate]");
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(lock.substr(from, to - from).find("trainlock-demo-util"), std::string::npos);
  testing::WriteFile(project / "trainlock.lock", lock.erase(from, to - from));
  ExpectOkOfflineOnlyNaming(project, kTinyWheels);
}

// tiny's manifest names its base by tag: which digest the tag served is the registry's to say.
TEST(HandEditedLock, AChangedDigestOfATagOnlyBaseIsNotCalledOk) {
  testing::TempDir dir;
  const fs::path project = testing::CopyExample("tiny", dir.path());
  const std::string base = LoadProject(project).lock->targets.at("cpu").base;
  const std::string hex = base.substr(base.find("sha256:") + 7);
  std::string lock = testing::ReadFile(project / "trainlock.lock");
  lock.replace(lock.find(hex), hex.size(), std::string(64, 'e'));
  testing::WriteFile(project / "trainlock.lock", lock);
  ExpectOkOfflineOnlyNaming(project, kTinyBase);
}

// The pilot's cuda base is pinned to an index listing its platform manifests: another
// well-formed index digest is not knowable offline either.
TEST(HandEditedLock, AChangedIndexDigestOfCudasTagOnlyBaseIsNotCalledUpToDate) {
  testing::TempDir dir;
  const fs::path project = dir.path() / "h200-pilot";
  fs::create_directories(project);
  testing::CopyExample("h200-pilot", project);
  fs::create_directories(dir.path() / "ops");  // the custom op's sources, where it names them
  testing::CopyExample("ops", dir.path() / "ops");
  const std::string base = LoadProject(project).lock->targets.at("cuda").base;
  const std::string hex = base.substr(base.find("sha256:") + 7);
  std::string lock = testing::ReadFile(project / "trainlock.lock");
  lock.replace(lock.find(hex), hex.size(), std::string(64, 'e'));
  testing::WriteFile(project / "trainlock.lock", lock);
  auto r = testing::RunTrainlock({"lock", project.string(), "--check"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("up to date ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not checked offline: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the base digest of cuda's tag-only base and its platform manifests"),
            std::string::npos)
      << r.out;
}

// Where the manifest leaves nothing to the network (no base, no package), offline is all there
// is to check, and the words say so plainly.
TEST(HandEditedLock, ALockWithNothingLeftToTheNetworkIsPlainlyOk) {
  testing::TempDir dir;
  const fs::path project = testing::UnlockedTiny(dir.path() / "tiny", "");
  ASSERT_EQ(testing::RunTrainlock({"lock", project.string(), "--offline"}).exit_code, 0);
  auto r = testing::RunTrainlock({"check", project.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(": ok: manifest, lock and config valid"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("not checked"), std::string::npos) << r.out;
  r = testing::RunTrainlock({"lock", project.string(), "--check"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("trainlock.lock: up to date (lock-sha256 "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("not checked"), std::string::npos) << r.out;
}

TEST(HandEditedLock, TheJsonOfCheckAndLockCheckListsWhatOfflineCannotCheck) {
  testing::TempDir dir;
  const fs::path project = testing::CopyExample("tiny", dir.path());
  const nlohmann::json want = {kTinyWheels, kTinyBase};
  auto r = testing::RunTrainlock({"check", project.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["not_checked_offline"], want) << r.out;
  r = testing::RunTrainlock({"lock", project.string(), "--check", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["checked"], "offline") << r.out;
  EXPECT_EQ(j["not_checked_offline"], want) << r.out;
}

// What a push records for `image build --check` (the epoch, the validator) is kept by the
// re-derivation, so a lock that records it stays up to date.
TEST(HandEditedLock, ARecordedImagesEpochAndValidatorKeepTheLockUpToDate) {
  testing::TempDir dir;
  const fs::path project = testing::CopyExample("tiny", dir.path());
  std::string lock = testing::ReadFile(project / "trainlock.lock");
  testing::WriteFile(project / "trainlock.lock",
                     lock + "\n[images.cpu]\nref = 'registry.example/tiny:1'\ndigest = 'sha256:" +
                         std::string(64, 'a') + "'\nsource-date-epoch = 1764460800\n" +
                         "validator-sha256 = '" + std::string(64, 'b') + "'\n");
  auto r = testing::RunTrainlock({"lock", project.string(), "--check"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(HandEditedLock, AnAddedImagesTableChangesTheLockId) {
  testing::TempDir dir;
  const fs::path project = testing::CopyExample("tiny", dir.path());
  auto before = testing::RunTrainlock({"hash", project.string()});
  std::string lock = testing::ReadFile(project / "trainlock.lock");
  testing::WriteFile(project / "trainlock.lock",
                     lock + "\n[images.cpu]\nref = 'registry.example/tiny:1'\ndigest = 'sha256:" +
                         std::string(64, 'a') + "'\n");
  auto after = testing::RunTrainlock({"hash", project.string()});
  ASSERT_EQ(before.exit_code, 0) << before.err;
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_NE(before.out, after.out);
}

}  // namespace
}  // namespace trainlock
