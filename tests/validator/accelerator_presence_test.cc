// A GPU build of the validator that sees no GPU, for a lock whose targets all train on one, is
// an environment error (exit 3), never a failing node or a config refused: the container was
// started without its GPUs. A cpu project on a GPU host still trains on the CPU.
#include <gtest/gtest.h>

#include "coordinator/accelerator_presence.h"
#include "project/lockfile_loader.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

Lockfile Lock(const char* example) {
  const auto file = testing::SourceDir() / "examples" / example / "trainlock.lock";
  return LoadLockfile(testing::ReadFile(file), file.string(), LockfileKind::kLock);
}

TEST(MissingAccelerator, ACudaBuildSeeingNoGpuForACudaLockCannotJudgeTheNode) {
  const std::string why = MissingAccelerator("cuda", "auto", Lock("h200-pilot"), 0);
  EXPECT_NE(why.find("this cuda build of the validator sees no GPU"), std::string::npos) << why;
  EXPECT_NE(why.find("the lock's targets (cuda)"), std::string::npos) << why;
  EXPECT_NE(why.find("--gpus all"), std::string::npos) << why;
  EXPECT_NE(MissingAccelerator("cuda", "cuda:0", Lock("h200-pilot"), 0), "");
}

TEST(MissingAccelerator, AVisibleGpuACpuTargetACpuBuildOrDeviceCpuCanRun) {
  EXPECT_EQ(MissingAccelerator("cuda", "auto", Lock("h200-pilot"), 1), "");
  EXPECT_EQ(MissingAccelerator("cuda", "auto", Lock("tiny"), 0), "");  // a cpu target
  EXPECT_EQ(MissingAccelerator("cpu", "auto", Lock("h200-pilot"), 0), "");
  EXPECT_EQ(MissingAccelerator("cuda", "cpu", Lock("h200-pilot"), 0), "");
}

}  // namespace
}  // namespace trainlock::validate
