// Specification of golden digests pinned in the lock: `trainlock lock DIR --golden REPORT` writes
// [golden.<key-sha256>] (src/report/golden_pin.h) without changing the build identity, and
// `trainlock gate` holds a report under a pinned key to the pinned digest by the rule fleet
// summarize applies too (src/report/golden_compare.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/time_text.h"
#include "compat/catalog.h"
#include "image/image_build.h"
#include "project/project.h"
#include "report/gate.h"
#include "report/golden_digest.h"
#include "report/golden_pin.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::RunResult;
using testing::RunTrainlock;

const std::string kA(64, 'a');
const std::string kB(64, 'b');

GoldenDigest GoldenOf(const std::string& lock_build, const std::string& digest) {
  GoldenDigest g;
  g.digest = digest;
  g.key.gpu = "cpu";
  g.key.torch = "1.13.1";
  g.key.engine = "native";
  g.key.lock_sha256 = lock_build;
  return g;
}

class LockGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::CopyExample("tiny", tmp_.path() / "tiny");
    project_ = LoadProject(dir_);
  }
  // The tiny fixture report, made this lock's, with `golden`.
  fs::path Report(const GoldenDigest& golden, const std::string& verdict = "pass") {
    json r = json::parse(
        testing::ReadFile(testing::SourceDir() / "tests/fixtures/reports/tiny-report.json"));
    r["lock_sha256"] = project_.lock->lock_build_sha256;
    r["config_sha256"] = project_.config_sha256;
    r["verdict"] = verdict;
    r["golden"] = ToJson(golden);
    const fs::path file = tmp_.path() / "report.json";
    testing::WriteFile(file, r.dump(2));
    return file;
  }
  std::string BuildIdentity() { return RunTrainlock({"hash", dir_.string(), "--build"}).out; }

  testing::TempDir tmp_;
  fs::path dir_;
  Project project_;
};

TEST_F(LockGolden, APassingReportsDigestIsPinnedUnderItsKeyAndTheBuildIdentityStays) {
  const std::string build = BuildIdentity();
  const GoldenDigest golden = GoldenOf(project_.lock->lock_build_sha256, kA);
  RunResult r = RunTrainlock({"lock", dir_.string(), "--golden", Report(golden).string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("pinned golden digest " + kA), std::string::npos) << r.out;
  const Project pinned = LoadProject(dir_);
  ASSERT_EQ(pinned.lock->golden.size(), 1u);
  const GoldenPin* pin = PinnedGoldenFor(*pinned.lock, golden.key);
  ASSERT_NE(pin, nullptr);
  EXPECT_EQ(pin->digest, kA);
  EXPECT_EQ(pin->key.at("gpu"), "cpu");
  EXPECT_EQ(BuildIdentity(), build) << "a pin is an output, as [images] is";
  EXPECT_EQ(RunTrainlock({"lock", dir_.string(), "--check"}).exit_code, 0)
      << "the re-derivation leaves pins alone";
}

// A pin is an output as [images] is: re-locking keeps it.
TEST_F(LockGolden, ARelockKeepsThePins) {
  const GoldenDigest golden = GoldenOf(project_.lock->lock_build_sha256, kA);
  ASSERT_EQ(RunTrainlock({"lock", dir_.string(), "--golden", Report(golden).string()}).exit_code,
            0);
  RunResult relock = RunTrainlock({"lock", dir_.string(), "--offline"});
  ASSERT_EQ(relock.exit_code, 0) << relock.err;
  const Project relocked = LoadProject(dir_);
  const GoldenPin* pin = PinnedGoldenFor(*relocked.lock, golden.key);
  ASSERT_NE(pin, nullptr);
  EXPECT_EQ(pin->digest, kA);
}

// Only the report decides what is pinned: the image built from the lock never carries the pins
// (its digest is part of the key they are pinned under).
TEST_F(LockGolden, TheImagesCopyOfTheLockLeavesThePinsOut) {
  const std::string lock = testing::ReadFile(dir_ / "trainlock.lock");
  const std::string pinned =
      LockTextWithGoldenPin(lock, "trainlock.lock", project_.lock->lock_build_sha256,
                            GoldenOf(project_.lock->lock_build_sha256, kA));
  EXPECT_NE(pinned.find("[golden."), std::string::npos);
  EXPECT_EQ(LockTextForImage(pinned, "trainlock.lock").find("golden"), std::string::npos);
  EXPECT_EQ(LockTextForImage(pinned, "trainlock.lock"), LockTextForImage(lock, "trainlock.lock"));
}

TEST_F(LockGolden, AReportOfAnotherLockIsNotPinned) {
  RunResult r =
      RunTrainlock({"lock", dir_.string(), "--golden", Report(GoldenOf(kB, kA)).string()});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("the report's golden digest is of lock bbbbbbbbbbbb"), std::string::npos)
      << r.err;
}

TEST_F(LockGolden, AFailingReportIsNotPinned) {
  const fs::path report = Report(GoldenOf(project_.lock->lock_build_sha256, kA), "fail");
  RunResult r = RunTrainlock({"lock", dir_.string(), "--golden", report.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("is not a passing report"), std::string::npos) << r.err;
}

// A pin is found by its table's name: a lock whose pin was edited (here the key's GPU) is
// refused where it is read, at the table, rather than holding another key's reports to it.
TEST_F(LockGolden, APinWhoseKeyWasEditedIsRefusedAtItsTable) {
  const GoldenDigest golden = GoldenOf(project_.lock->lock_build_sha256, kA);
  ASSERT_EQ(RunTrainlock({"lock", dir_.string(), "--golden", Report(golden).string()}).exit_code,
            0);
  const fs::path lock = dir_ / "trainlock.lock";
  std::string text = testing::ReadFile(lock);
  const std::string table = "[golden." + GoldenKeyId(golden.key) + "]";
  const size_t at = text.find(table);
  ASSERT_NE(at, std::string::npos) << text;
  const size_t gpu = text.find("gpu = 'cpu'", at);
  ASSERT_NE(gpu, std::string::npos) << text;
  text.replace(gpu, 11, "gpu = 'NVIDIA H200'");
  testing::WriteFile(lock, text);
  const int line = static_cast<int>(std::count(text.begin(), text.begin() + at, '\n')) + 1;
  RunResult r = RunTrainlock({"lock", dir_.string(), "--check"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("trainlock.lock:" + std::to_string(line) + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error: 'golden." + GoldenKeyId(golden.key) + "' is not named by its key"),
            std::string::npos)
      << r.err;
}

// ---- the gate ----

class GateGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    project_ = LoadProject(testing::SourceDir() / "examples/tiny");
    lock_ = *project_.lock;
    report_ = json::parse(
        testing::ReadFile(testing::SourceDir() / "tests/fixtures/reports/tiny-report.json"));
    report_["lock_sha256"] = project_.lock_sha256;
    report_["config_sha256"] = project_.config_sha256;
    pinned_ = GoldenOf(project_.lock_sha256, kA);
    lock_.golden[GoldenKeyId(pinned_.key)] = GoldenPin{kA, {}};
  }
  GateDecision Decide() {
    GateRequest r;
    r.report_path = "report.json";
    r.report_text = report_.dump(2);
    r.lock = &lock_;
    r.lock_path = "trainlock.lock";
    r.lock_sha256 = project_.lock_sha256;
    r.now_s = *ParseRfc3339(report_["started_at"].get<std::string>()) + 3600;
    r.allow_unsigned = true;
    static const Catalog catalog = Catalog::Embedded();
    return EvaluateGate(r, catalog);
  }
  static bool Refused(const GateDecision& d, const std::string& text) {
    return std::any_of(d.reasons.begin(), d.reasons.end(), [&](const std::string& r) {
      return r.starts_with("golden:") && r.find(text) != std::string::npos;
    });
  }

  Project project_;
  Lockfile lock_;
  json report_;
  GoldenDigest pinned_;
};

TEST_F(GateGolden, AReportUnderAPinnedKeyWithThePinnedDigestClears) {
  report_["golden"] = ToJson(pinned_);
  const GateDecision d = Decide();
  EXPECT_TRUE(d.allowed()) << ::testing::PrintToString(d.reasons);
}

TEST_F(GateGolden, AReportUnderAPinnedKeyWithAnotherDigestIsRefusedNamingIt) {
  GoldenDigest other = pinned_;
  other.digest = kB;
  report_["host"]["hostname"] = "gpu-3";
  report_["golden"] = ToJson(other);
  const GateDecision d = Decide();
  EXPECT_FALSE(d.allowed());
  EXPECT_TRUE(Refused(d,
                      "gpu-3 computed golden digest bbbbbbbbbbbb, not the aaaaaaaaaaaa the "
                      "lock pins for its key"))
      << ::testing::PrintToString(d.reasons);
  EXPECT_TRUE(Refused(d, "suspected silent data corruption"))
      << ::testing::PrintToString(d.reasons);
}

TEST_F(GateGolden, AReportUnderAKeyTheLockDoesNotPinIsComparedWithNothing) {
  GoldenDigest other = pinned_;
  other.key.gpu = "NVIDIA H200";
  other.digest = kB;
  report_["golden"] = ToJson(other);
  EXPECT_TRUE(Decide().allowed());
}

TEST_F(GateGolden, AReportWithoutAGoldenDigestIsRefusedWhenTheLockPinsAny) {
  report_.erase("golden");
  EXPECT_TRUE(Refused(Decide(), "the lock pins golden digests and the report carries none"));
}

}  // namespace
}  // namespace trainlock
