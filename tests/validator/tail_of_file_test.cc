// TailOfFile: the last lines of a process's stderr for error summaries, read from the file's
// end only, whatever the process wrote before them (one huge line, hundreds of MiB).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "support/worker_process.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

fs::path WrittenStderr(const testing::TempDir& dir, const std::string& text) {
  const fs::path file = dir.path() / "stderr";
  std::ofstream(file, std::ios::binary) << text;
  return file;
}

TEST(TailOfFile, GivesTheLastLinesWithoutTheFinalNewline) {
  testing::TempDir dir;
  EXPECT_EQ(TailOfFile(WrittenStderr(dir, "one\ntwo\nthree\nfour\n"), 2), "three\nfour");
  EXPECT_EQ(TailOfFile(WrittenStderr(dir, "a\n\nb"), 5), "a\n\nb");
}

TEST(TailOfFile, AMissingOrEmptyFileIsEmpty) {
  testing::TempDir dir;
  EXPECT_EQ(TailOfFile(dir.path() / "absent", 5), "");
  EXPECT_EQ(TailOfFile(WrittenStderr(dir, ""), 5), "");
}

TEST(TailOfFile, ManyMegabytesBeforeTheEndAreNotRead) {
  testing::TempDir dir;
  std::string text(8 << 20, 'x');
  text += "\nTraceback (most recent call last):\nRuntimeError: CUDA out of memory\n";
  EXPECT_EQ(TailOfFile(WrittenStderr(dir, text), 2),
            "Traceback (most recent call last):\nRuntimeError: CUDA out of memory");
  // The line that began before the window is not given as a whole line.
  EXPECT_EQ(TailOfFile(WrittenStderr(dir, text), 5),
            "Traceback (most recent call last):\nRuntimeError: CUDA out of memory");
}

TEST(TailOfFile, OneHugeLineIsCutToItsEnd) {
  testing::TempDir dir;
  const std::string tail = TailOfFile(WrittenStderr(dir, std::string(8 << 20, 'y') + "END\n"), 5);
  EXPECT_EQ(tail.size(), 3 + kTailLineBytes);
  EXPECT_EQ(tail.substr(0, 3), "...");
  EXPECT_EQ(tail.substr(tail.size() - 3), "END");
}

}  // namespace
}  // namespace trainlock::validate
