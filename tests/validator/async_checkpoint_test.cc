// The asynchronous save: training is held up only for the copy into staging memory, the
// checkpoint holds the state as it was at the save even though training goes on changing it,
// and a SIGKILL during the background write leaves no committed checkpoint.
#include "engines/native/async_checkpoint.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

CheckpointContents Contents(int64_t step, int64_t elements) {
  torch::manual_seed(step);
  CheckpointContents c;
  c.step = step;
  c.model = {{"model.embed_tokens.weight", torch::randn({elements})},
             {"model.norm.weight", torch::ones({8})}};
  c.optimizer = {{"model.embed_tokens.weight.exp_avg", torch::randn({elements})},
                 {"model.embed_tokens.weight.exp_avg_sq", torch::rand({elements})}};
  c.state = {{"data_loader", {{"epoch", 0}, {"cursor", step}}}, {"lock_sha256", "x"}};
  return c;
}

TEST(AsyncCheckpoint, TheCheckpointHoldsTheStateAtTheSaveWhileTrainingChangesIt) {
  testing::TempDir root;
  CheckpointContents live = Contents(4, 1 << 20);
  const torch::Tensor before = live.model[0].tensor.clone();
  AsyncCheckpointer checkpointer;
  checkpointer.Prepare(live);
  checkpointer.Start(root.path(), live, 2);
  live.model[0].tensor.mul_(2);  // the next training step, while the write goes on
  const CheckpointIo io = checkpointer.Wait();
  const CheckpointContents saved = LoadCheckpoint(io.dir);
  EXPECT_TRUE(torch::equal(saved.model[0].tensor, before));
  EXPECT_EQ(saved.step, 4);
}

TEST(AsyncCheckpoint, TrainingIsBlockedForTheStagingNotForTheWrite) {
  testing::TempDir root;
  CheckpointContents live = Contents(1, 8 << 20);
  AsyncCheckpointer checkpointer;
  checkpointer.Prepare(live);
  checkpointer.Start(root.path(), live, 2);
  const CheckpointIo io = checkpointer.Wait();
  const AsyncSaveTimes& t = checkpointer.times();
  EXPECT_GT(t.blocking_s, 0);
  EXPECT_LE(t.blocking_s, t.durable_s);
  EXPECT_GE(t.durable_s, io.seconds);
  EXPECT_FALSE(checkpointer.in_flight());
}

TEST(AsyncCheckpoint, SigkillDuringTheBackgroundWriteLeavesNoCommittedCheckpoint) {
  testing::TempDir root;
  SaveCheckpoint(root.path(), Contents(1, 1024), 3);
  // 3 x 64 MiB: long enough to be caught mid-write. Made before the fork.
  CheckpointContents big = Contents(2, 16 << 20);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    torch::set_num_threads(1);  // no OpenMP team in a forked child
    AsyncCheckpointer checkpointer;
    checkpointer.Start(root.path(), big, 3);
    while (true) ::pause();  // "training" goes on; the write runs beside it
  }
  bool caught = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!caught && std::chrono::steady_clock::now() < deadline) {
    for (const auto& e : fs::directory_iterator(root.path())) {
      const std::string name = e.path().filename().string();
      std::error_code ec;
      if (name.rfind(".step-00000002", 0) == 0 && !fs::is_empty(e.path(), ec)) caught = true;
    }
    if (!caught) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(caught) << "the background write finished before it could be killed";
  EXPECT_FALSE(fs::exists(root.path() / "step-00000002"));
  ASSERT_TRUE(LatestCheckpoint(root.path()));
  EXPECT_EQ(LatestCheckpoint(root.path())->filename(), "step-00000001");
}

}  // namespace
}  // namespace trainlock::validate
