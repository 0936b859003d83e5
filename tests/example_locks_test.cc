// The example locks are exactly what `trainlock lock` writes: each example is re-locked from
// its own pins (--offline reuses the lock's digests and commits, --skip-python its Python
// closure, so no registry, Hub or package index answer is needed) through the one lock writer, and
// the bytes must not change. A hand edit, or a writer change that would rewrite users' locks, fails
// here.
#include <gtest/gtest.h>

#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

TEST(ExampleLocks, EachIsByteIdenticalToWhatTrainlockLockWrites) {
  int examples = 0;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(testing::SourceDir() / "examples")) {
    const fs::path lock = entry.path() / "trainlock.lock";
    if (!fs::exists(lock)) continue;
    ++examples;
    testing::TempDir dir;
    // Beside a copy of examples/ops: a pilot's custom-op source is `../ops`.
    const fs::path copy = dir.path() / entry.path().filename();
    fs::create_directories(copy);
    testing::CopyExample(entry.path().filename().string(), copy);
    fs::create_directories(dir.path() / "ops");
    testing::CopyExample("ops", dir.path() / "ops");
    auto r = testing::RunTrainlock({"lock", copy.string(), "--offline", "--skip-python"});
    ASSERT_EQ(r.exit_code, 0) << entry.path() << ": " << r.err;
    EXPECT_EQ(testing::ReadFile(copy / "trainlock.lock"), testing::ReadFile(lock))
        << lock << " is not what `trainlock lock` writes; run `trainlock lock "
        << entry.path().lexically_relative(testing::SourceDir()).string()
        << " --offline --skip-python`";
    auto check = testing::RunTrainlock({"lock", copy.string(), "--check"});
    EXPECT_EQ(check.exit_code, 0) << check.err;
  }
  EXPECT_GE(examples, 4);
}

}  // namespace
}  // namespace trainlock
