// The kill during a save (docs/validate.md, "Kill during a save"): the native engine's save
// passes the five points of TRAINLOCK_SAVE_POINTS in order, each leaving the step's files as
// its name says; `trainlock validate --kill-point POINT` on examples/tiny (the CPU) holds B's
// second save at each point and SIGKILLs it there, and the resume restores the committed
// checkpoint (the new one after its commit record), bitwise, naming the torn directory it
// skipped; the torn-snapshot check compares C's restored state with A's at that step, and a
// save whose tensors were staged after the next optimizer step (--negative-control
// torn-snapshot) fails it naming the tensor.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engines/native/checkpoint.h"
#include "support/engine_events.h"
#include "test_support.h"
#include "validator/report_checks.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

CheckpointContents TwoShardContents(int64_t step) {
  torch::manual_seed(step);
  CheckpointContents c;
  c.step = step;
  c.model = {{"model.a", torch::randn({4096})}, {"model.b", torch::randn({4096})}};
  c.optimizer = {{"model.a.exp_avg", torch::randn({4096})}};
  c.state = {{"data_loader", {{"cursor", step}}}};
  return c;
}

// The one temporary directory of a save under way in `root`; "" when there is none.
fs::path Temporary(const fs::path& root) {
  for (const auto& e : fs::directory_iterator(root))
    if (e.path().filename().string().rfind(".step-", 0) == 0) return e.path();
  return {};
}

TEST(SavePoints, TheNativeSavePassesTheFivePointsInOrderEachAsItsNameSays) {
  testing::TempDir dir;
  std::vector<std::string> seen;
  SaveCheckpoint(dir.path(), TwoShardContents(5), 2, kDefaultShardBytes, [&](const char* point) {
    seen.push_back(point);
    const fs::path tmp = Temporary(dir.path());
    const std::string at(point);
    if (at == kBeforeFiles) {
      ASSERT_FALSE(tmp.empty());
      EXPECT_TRUE(fs::is_empty(tmp));
    } else if (at == kMidFile) {
      // The header and the first of the model's two tensors: the file is cut short.
      const uint64_t size = fs::file_size(tmp / "model.safetensors");
      EXPECT_GT(size, 4096u * 4);
      EXPECT_LT(size, 2u * 4096 * 4);
    } else if (at == kAfterFiles) {
      EXPECT_TRUE(fs::exists(tmp / "optimizer.safetensors"));
      EXPECT_FALSE(fs::exists(tmp / kManifestFile));
    } else if (at == kAfterMetadata) {
      EXPECT_TRUE(fs::exists(tmp / kManifestFile));
      EXPECT_FALSE(fs::exists(tmp / kManifestHashFile));
      EXPECT_FALSE(LatestCheckpoint(dir.path()));
    } else if (at == kAfterCommit) {
      EXPECT_TRUE(tmp.empty());
      EXPECT_EQ(LatestCheckpoint(dir.path()), dir.path() / "step-00000005");
    }
  });
  EXPECT_EQ(seen, std::vector<std::string>(std::begin(kSavePoints), std::end(kSavePoints)));
}

TEST(SavePoints, ASaveStoppedBeforeItsCommitIsNamedAsTornAndNeverRestored) {
  testing::TempDir dir;
  SaveCheckpoint(dir.path(), TwoShardContents(3), 2);
  struct Stopped {};
  try {
    SaveCheckpoint(dir.path(), TwoShardContents(4), 2, kDefaultShardBytes, [](const char* point) {
      if (std::string(point) == kAfterMetadata) throw Stopped{};
    });
  } catch (const Stopped&) {
  }
  const std::vector<fs::path> torn = UncommittedCheckpoints(dir.path());
  ASSERT_EQ(torn.size(), 1u);
  EXPECT_EQ(torn[0].filename().string().rfind(".step-00000004.tmp-", 0), 0u) << torn[0];
  EXPECT_EQ(LatestCheckpoint(dir.path()), dir.path() / "step-00000003");
}

struct Validation {
  testing::RunResult run;
  nlohmann::json report;
};

// One validation of a fresh copy of examples/tiny (steps 6, checkpoint-at 3) with `extra`.
Validation ValidateTiny(const std::vector<std::string>& extra) {
  testing::TempDir dir;
  const fs::path project = dir.path() / "tiny";
  fs::create_directories(project);
  testing::CopyExample("tiny", project);
  const fs::path out = dir.path() / "report.json";
  std::vector<std::string> args = {"validate",  project.string(),
                                   "--out",     out.string(),
                                   "--threads", "2",
                                   "--only",    "train.roundtrip,train.eval,ckpt.portable"};
  args.insert(args.end(), extra.begin(), extra.end());
  Validation v{testing::RunProgram("trainlock", args, {"TMPDIR=" + dir.path().string()}),
               nlohmann::json()};
  if (fs::exists(out)) v.report = nlohmann::json::parse(testing::ReadFile(out));
  return v;
}

const nlohmann::json& CheckOf(const nlohmann::json& report, const std::string& id) {
  return testing::ReportCheck(report, id);
}

class KillDuringSaveNative : public ::testing::TestWithParam<const char*> {};

// Killed at each point: the resume restores the committed checkpoint (step 3; step 4 once its
// commit record is written), bitwise equal to the uninterrupted run, its restored state the
// uninterrupted run's at that step, and the torn directory of step 4 named as skipped.
TEST_P(KillDuringSaveNative, TheResumeRestoresTheCommittedCheckpointBitwise) {
  const std::string point = GetParam();
  const Validation v = ValidateTiny({"--kill-point", point});
  ASSERT_EQ(v.run.exit_code, 0) << v.run.out << v.run.err;
  const auto& roundtrip = CheckOf(v.report, "train.roundtrip");
  const nlohmann::json& m = roundtrip["metrics"];
  EXPECT_EQ(roundtrip["status"], "pass") << roundtrip.dump();
  EXPECT_EQ(m["bitwise_equal"], true);
  EXPECT_EQ(m["kill_point"], point);
  EXPECT_EQ(m["snapshot_equal"], true);
  EXPECT_NE(roundtrip["summary"].get<std::string>().find("killed at " + point), std::string::npos)
      << roundtrip["summary"];
  const bool committed = point == kAfterCommit;
  EXPECT_EQ(m["restored_step"], committed ? 4 : 3);
  EXPECT_EQ(m["checkpoint_verified"]["step"], committed ? 4 : 3);
  EXPECT_EQ(m["killed_during_save"], !committed);
  if (committed) {
    EXPECT_FALSE(m.contains("skipped_uncommitted")) << m.dump();
  } else {
    ASSERT_EQ(m["skipped_uncommitted"].size(), 1u) << m.dump();
    EXPECT_NE(m["skipped_uncommitted"][0].get<std::string>().find("/.step-00000004.tmp-"),
              std::string::npos)
        << m["skipped_uncommitted"];
  }
  EXPECT_EQ(CheckOf(v.report, "train.eval")["status"], "pass");
  EXPECT_EQ(CheckOf(v.report, "ckpt.portable")["status"], "pass");
}

INSTANTIATE_TEST_SUITE_P(AtEachPoint, KillDuringSaveNative, ::testing::ValuesIn(kSavePoints),
                         [](const ::testing::TestParamInfo<const char*>& point) {
                           std::string name;
                           for (const char c : std::string(point.param))
                             if (c != '-') name += c;
                           return name;
                         });

// --kill-during-save alone kills mid-file.
TEST(KillDuringSave, WithoutAPointTheKillLandsMidFile) {
  const Validation v = ValidateTiny({"--kill-during-save"});
  ASSERT_EQ(v.run.exit_code, 0) << v.run.out << v.run.err;
  EXPECT_EQ(CheckOf(v.report, "train.roundtrip")["metrics"]["kill_point"], "mid-file");
}

// The planted fault: B's first save stages its tensors only after the next optimizer step. The
// checkpoint says step 3 and restores step 3's RNG and data position, but its tensors are step
// 4's: the torn-snapshot check fails, naming the first tensor that differs.
TEST(KillDuringSave, ATornSnapshotFailsTheRoundTripNamingTheTensor) {
  const Validation v = ValidateTiny({"--kill-during-save", "--negative-control", "torn-snapshot"});
  EXPECT_EQ(v.run.exit_code, 1) << v.run.out << v.run.err;
  EXPECT_EQ(v.report["negative_control"], "torn-snapshot");
  const auto& roundtrip = CheckOf(v.report, "train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "fail");
  EXPECT_EQ(roundtrip["metrics"]["snapshot_equal"], false);
  const std::string tensor = roundtrip["metrics"]["snapshot_first_different"];
  EXPECT_FALSE(tensor.empty());
  EXPECT_NE(
      roundtrip["summary"].get<std::string>().find(
          "the checkpoint of step 3 holds a state other than step 3's: " + tensor + " differs"),
      std::string::npos)
      << roundtrip["summary"];
}

TEST(KillDuringSave, ATornSnapshotControlWithoutTheKillIsRefusedBeforeAnyWork) {
  const Validation v = ValidateTiny({"--negative-control", "torn-snapshot"});
  EXPECT_EQ(v.run.exit_code, 2) << v.run.out << v.run.err;
  EXPECT_NE(v.run.err.find("torn-snapshot plants its fault"), std::string::npos) << v.run.err;
}

}  // namespace
}  // namespace trainlock::validate
