// The library's stage layering (docs/DESIGN.md, "Architecture map"): src/ is split by stage in
// data-flow order, and no file may include a header of a later stage. This is trainlock's
// depcheck: it reads every source file under src/ and fails on an include that points up.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

// The stages in data-flow order: a stage may include its own headers and those of earlier ones.
constexpr std::array<const char*, 10> kStages = {
    "base", "project", "compat", "lock", "image", "report", "checks", "plan", "fleet", "cli",
};

int StageRank(const std::string& stage) {
  auto it = std::find(kStages.begin(), kStages.end(), stage);
  return it == kStages.end() ? -1 : static_cast<int>(it - kStages.begin());
}

// One line per broken rule in the tree rooted at `src`: "file:line: message".
std::vector<std::string> LayeringViolations(const fs::path& src) {
  std::vector<std::string> problems;
  const std::regex quoted(R"(^\s*#\s*include\s*"([^"]+)\")");
  const std::regex torch(R"(^\s*#\s*include\s*<(torch|ATen|c10)/)");
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    if (!entry.is_regular_file()) continue;
    const fs::path rel = fs::relative(entry.path(), src);
    const std::string ext = rel.extension().string();
    if (ext != ".h" && ext != ".cc") continue;
    const std::string where = (fs::path("src") / rel).string();
    if (rel.begin() == rel.end() || std::next(rel.begin()) == rel.end()) {
      problems.push_back(where + ": a source file outside every stage folder");
      continue;
    }
    const std::string stage = rel.begin()->string();
    const int rank = StageRank(stage);
    if (rank < 0) {
      problems.push_back(where + ": '" + stage + "' is not a stage of the architecture map");
      continue;
    }
    std::ifstream in(entry.path());
    int line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      const std::string at = where + ":" + std::to_string(line_no) + ": ";
      std::smatch m;
      if (std::regex_search(line, m, torch)) {
        problems.push_back(at + "LibTorch belongs in validators/, not the library");
        continue;
      }
      if (!std::regex_search(line, m, quoted)) continue;
      const fs::path header = m[1].str();
      if (std::distance(header.begin(), header.end()) != 2) {
        problems.push_back(at + "include '" + header.string() + "' as \"stage/file.h\"");
        continue;
      }
      const int target = StageRank(header.begin()->string());
      if (target < 0) {
        problems.push_back(at + "'" + header.string() + "' is in no stage");
      } else if (target > rank) {
        problems.push_back(at + stage + " may not include the later stage's '" + header.string() +
                           "'");
      }
    }
  }
  std::sort(problems.begin(), problems.end());
  return problems;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string all;
  for (const std::string& line : lines) all += line + "\n";
  return all;
}

TEST(Layering, TheLibraryIncludesOnlyItsOwnAndEarlierStages) {
  EXPECT_EQ(Joined(LayeringViolations(testing::SourceDir() / "src")), "");
}

TEST(Layering, AnIncludeOfALaterStageIsRefused) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "base/text.h", "#pragma once\n#include \"report/report.h\"\n");
  testing::WriteFile(dir.path() / "report/report.h", "#pragma once\n#include \"base/text.h\"\n");
  EXPECT_EQ(Joined(LayeringViolations(dir.path())),
            "src/base/text.h:2: base may not include the later stage's 'report/report.h'\n");
}

TEST(Layering, AFolderOutsideTheMapIsRefused) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "misc/util.h", "#pragma once\n");
  testing::WriteFile(dir.path() / "loose.cc", "int x;\n");
  EXPECT_EQ(Joined(LayeringViolations(dir.path())),
            "src/loose.cc: a source file outside every stage folder\n"
            "src/misc/util.h: 'misc' is not a stage of the architecture map\n");
}

TEST(Layering, AFlatIncludeAndLibTorchAreRefused) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "plan/plan.cc",
                     "#include \"plan.h\"\n#include <torch/torch.h>\n#include \"base/sha.h\"\n");
  EXPECT_EQ(Joined(LayeringViolations(dir.path())),
            "src/plan/plan.cc:1: include 'plan.h' as \"stage/file.h\"\n"
            "src/plan/plan.cc:2: LibTorch belongs in validators/, not the library\n");
}

}  // namespace
}  // namespace trainlock
