// Specification of the small shared helpers (base/strings.h, IsPlainFileName in
// base/safe_paths.h) that replaced per-file copies when the library became one unity unit.
#include <gtest/gtest.h>

#include "base/safe_paths.h"
#include "base/strings.h"

namespace trainlock {
namespace {

TEST(AsciiLower, LowersAsciiLettersOnly) {
  EXPECT_EQ(AsciiLower("NVIDIA H200 SXM"), "nvidia h200 sxm");
  EXPECT_EQ(AsciiLower("Torch-2.11.0+CU130"), "torch-2.11.0+cu130");
  EXPECT_EQ(AsciiLower("\xC3\x84"), "\xC3\x84");  // UTF-8 bytes pass through unchanged
}

TEST(TrimBlanks, DropsLeadingAndTrailingSpacesAndTabsOnly) {
  EXPECT_EQ(TrimBlanks(" \t>=2.0 \t"), ">=2.0");
  EXPECT_EQ(TrimBlanks("a b"), "a b");
  EXPECT_EQ(TrimBlanks(" \t "), "");
  EXPECT_EQ(TrimBlanks("x\n"), "x\n");  // only spaces and tabs are blanks
}

TEST(JoinStrings, PutsTheSeparatorBetweenPartsOnly) {
  EXPECT_EQ(JoinStrings({}, ", "), "");
  EXPECT_EQ(JoinStrings({"a"}, ", "), "a");
  EXPECT_EQ(JoinStrings({"a", "b", "c"}, "; "), "a; b; c");
}

TEST(JoinStrings, KeepsEmptyPartsInTheirPlace) {
  EXPECT_EQ(JoinStrings({"", "b"}, ";"), ";b");
  EXPECT_EQ(JoinStrings({"a", "", "c"}, ";"), "a;;c");
}

TEST(IsPlainFileName, AcceptsOneComponentThatPrintsOnOneLine) {
  EXPECT_TRUE(IsPlainFileName("model-00001-of-00002.safetensors"));
  EXPECT_TRUE(IsPlainFileName("..hidden"));
}

TEST(IsPlainFileName, RefusesPathsDotsAndControlBytes) {
  for (const char* bad : {"", ".", "..", "a/b", "../x", "/etc/passwd", "a\\b", "a\nb", "a\x7f"})
    EXPECT_FALSE(IsPlainFileName(bad)) << bad;
}

}  // namespace
}  // namespace trainlock
