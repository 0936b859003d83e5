// The "written once" claims of docs/DESIGN.md that a scan of the tree can hold: each spelling
// below may appear, outside comments, in its one owning file of src/, validators/ and images/
// only. (The other claims have tests of their own: metric keys check_metrics_test.cc, the
// layering layering_test.cc, throw sites throw_sites_test.cc, the remedies
// memory_remedies_test.cc, the validator's options validator_options_test.cc.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

struct OnePlace {
  std::string spelling;
  std::string owner;  // relative to the source tree
};

// What each spelling means is in its owner's comments.
const std::vector<OnePlace> kOnePlace = {
    {"/etc/trainlock", "src/image/in_image_paths.h"},
    {"/var/lib/trainlock", "src/image/in_image_paths.h"},
    {"/usr/local/bin/trainlock-validate", "src/image/in_image_paths.h"},
    {"/trainlock/project", "src/image/in_image_paths.h"},
    {"/trainlock/out", "src/image/in_image_paths.h"},
    {"/proc/self/exe", "src/base/program_path.cc"},
    // The mask: one masking function (RedactCredentials, its table of secret forms) for every
    // output; a second one elsewhere would spell it again.
    {"\"***\"", "src/base/redact.cc"},
};

bool IsSource(const fs::path& file) {
  const std::string ext = file.extension().string();
  return ext == ".h" || ext == ".cc" || ext == ".in";
}

// Calls visit(rel, line_no, line) for each line of the source files under root/folder for each
// of `folders` (rel: the file's path relative to `root`).
template <typename Visit>
void ForEachSourceLine(const fs::path& root, std::initializer_list<const char*> folders,
                       Visit visit) {
  for (const char* folder : folders) {
    if (!fs::exists(root / folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      if (!entry.is_regular_file() || !IsSource(entry.path())) continue;
      const std::string rel = fs::relative(entry.path(), root).generic_string();
      std::ifstream in(entry.path());
      int line_no = 0;
      for (std::string line; std::getline(in, line);) visit(rel, ++line_no, line);
    }
  }
}

// "file:line: spelling" for each use of a spelling outside its owner under `root`'s folders.
std::vector<std::string> SpelledElsewhere(const fs::path& root,
                                          const std::vector<OnePlace>& places) {
  std::vector<std::string> found;
  ForEachSourceLine(
      root, {"src", "validators", "images"},
      [&](const std::string& rel, int line_no, const std::string& line) {
        const size_t code = line.find_first_not_of(" \t");
        if (code != std::string::npos && line.compare(code, 2, "//") == 0) return;
        for (const OnePlace& place : places) {
          if (rel != place.owner && line.find(place.spelling) != std::string::npos)
            found.push_back(rel + ":" + std::to_string(line_no) + ": " + place.spelling);
        }
      });
  return found;
}

TEST(OnePlace, InImagePathsTheProcessPathAndTheMaskAreSpelledOnlyByTheirOwners) {
  const std::vector<std::string> found = SpelledElsewhere(testing::SourceDir(), kOnePlace);
  std::string all;
  for (const std::string& f : found) all += f + "\n";
  EXPECT_EQ(all, "");
}

TEST(OnePlace, ASpellingOutsideItsOwnerIsFound) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "src/cli/cmd_x.cc",
                     "// /etc/trainlock in a comment is fine\nauto p = \"/etc/trainlock/x\";\n");
  testing::WriteFile(dir.path() / "images/cpu.Containerfile.in", "COPY a /etc/trainlock/\n");
  const std::vector<std::string> found = SpelledElsewhere(dir.path(), kOnePlace);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_NE(std::find(found.begin(), found.end(), "src/cli/cmd_x.cc:2: /etc/trainlock"),
            found.end());
  EXPECT_NE(std::find(found.begin(), found.end(), "images/cpu.Containerfile.in:1: /etc/trainlock"),
            found.end());
}

// The report's members (report.h) as the stages after report/ might read them by hand.
const std::vector<std::string> kReportMembers = {
    "schema",     "verdict", "lock_sha256", "config_sha256", "manifest_sha256", "negative_control",
    "drift",      "image",   "validator",   "host",          "devices",         "started_at",
    "duration_s", "checks",  "required",    "project",       "work_dir",        "only",
    "rank",       "ranks",   "signature",
};

// "file:line: member" for each read of a report member by subscript, value(), at() or
// contains() in the stages that come after report/ (they read through report_view.h). An
// assignment (`x["image"] = ...`) writes and is not a read.
std::vector<std::string> ReportMembersReadByHand(const fs::path& root) {
  std::vector<std::string> found;
  ForEachSourceLine(
      root, {"src/checks", "src/plan", "src/fleet", "src/cli"},
      [&](const std::string& rel, int line_no, const std::string& line) {
        for (const std::string& member : kReportMembers) {
          const std::string quoted = "\"" + member + "\"";
          for (const std::string& read : {"[" + quoted + "]", ".value(" + quoted,
                                          ".at(" + quoted + ")", "contains(" + quoted + ")"}) {
            const size_t at = line.find(read);
            if (at == std::string::npos) continue;
            const size_t after = line.find_first_not_of(' ', at + read.size());
            if (read.front() == '[' && after != std::string::npos && line[after] == '=' &&
                line.compare(after, 2, "==") != 0)
              continue;
            found.push_back(rel + ":" + std::to_string(line_no) + ": " + member);
          }
        }
      });
  return found;
}

TEST(OnePlace, CommandsAndLaterStagesReadReportsOnlyThroughTheView) {
  std::string all;
  for (const std::string& f : ReportMembersReadByHand(testing::SourceDir())) all += f + "\n";
  EXPECT_EQ(all, "");
}

TEST(OnePlace, AReportMemberReadByHandIsFound) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "src/cli/cmd_x.cc",
                     "row[\"verdict\"] = v;\nif (r.value(\"verdict\", \"\") == \"pass\") {}\n"
                     "bool b = r[\"checks\"] == x;\n");
  const std::vector<std::string> found = ReportMembersReadByHand(dir.path());
  EXPECT_EQ(found, (std::vector<std::string>{"src/cli/cmd_x.cc:2: verdict",
                                             "src/cli/cmd_x.cc:3: checks"}));
}

}  // namespace
}  // namespace trainlock
