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
constexpr std::array<const char*, 12> kStages = {
    "base",   "run",    "project", "compat", "lock",  "image",
    "report", "checks", "plan",    "fleet",  "watch", "cli",
};

// The validator's parts (docs/DESIGN.md, "Architecture map"), lowest first. validators/ sits
// above every library stage, so any part may include the library; main.cc, alone at the top
// of validators/, may include every part.
constexpr std::array<const char*, 7> kValidatorParts = {
    "support", "probes", "engines/native", "ops", "comm", "worker", "coordinator",
};

template <size_t N>
int RankIn(const std::array<const char*, N>& order, const std::string& name) {
  auto it = std::find(order.begin(), order.end(), name);
  return it == order.end() ? -1 : static_cast<int>(it - order.begin());
}

// The part a path under validators/ belongs to: its folder ("engines/native" for an engine).
std::string ValidatorPartOf(const fs::path& rel) {
  const fs::path folder = rel.parent_path();
  return folder.generic_string();
}

// The validator part an include names ("coordinator/roundtrip.h" -> "coordinator"), or "" when
// it names none.
std::string IncludedValidatorPart(const fs::path& header) {
  for (const char* part : kValidatorParts) {
    const std::string prefix = std::string(part) + "/";
    const std::string h = header.generic_string();
    if (h.starts_with(prefix) && h.find('/', prefix.size()) == std::string::npos) return part;
  }
  return "";
}

struct Scanned {
  std::string where;  // "src/base/x.h"
  fs::path rel;       // relative to the scanned root
};

// Every .h and .cc file under `root`, named as `display`/relative path.
std::vector<Scanned> SourceFiles(const fs::path& root, const std::string& display) {
  std::vector<Scanned> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    const fs::path rel = fs::relative(entry.path(), root);
    const std::string ext = rel.extension().string();
    if (ext != ".h" && ext != ".cc") continue;
    files.push_back({(fs::path(display) / rel).generic_string(), rel});
  }
  return files;
}

// Calls `visit(at, header)` for each quoted include of `file` ("at" is "file:line: ").
template <typename Visit>
void ForEachQuotedInclude(const fs::path& file, const std::string& where, Visit visit) {
  const std::regex quoted(R"(^\s*#\s*include\s*"([^"]+)\")");
  std::ifstream in(file);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    std::smatch m;
    if (std::regex_search(line, m, quoted))
      visit(where + ":" + std::to_string(line_no) + ": ", fs::path(m[1].str()));
  }
}

// One line per broken rule in the tree rooted at `src`: "file:line: message".
std::vector<std::string> LayeringViolations(const fs::path& src) {
  std::vector<std::string> problems;
  const std::regex torch(R"(^\s*#\s*include\s*<(torch|ATen|c10)/)");
  for (const Scanned& file : SourceFiles(src, "src")) {
    const fs::path& rel = file.rel;
    const std::string& where = file.where;
    if (rel.begin() == rel.end() || std::next(rel.begin()) == rel.end()) {
      problems.push_back(where + ": a source file outside every stage folder");
      continue;
    }
    const std::string stage = rel.begin()->string();
    const int rank = RankIn(kStages, stage);
    if (rank < 0) {
      problems.push_back(where + ": '" + stage + "' is not a stage of the architecture map");
      continue;
    }
    std::ifstream in(src / rel);
    int line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      std::smatch m;
      if (std::regex_search(line, m, torch))
        problems.push_back(where + ":" + std::to_string(line_no) + ": " +
                           "LibTorch belongs in validators/, not the library");
    }
    ForEachQuotedInclude(src / rel, where, [&](const std::string& at, const fs::path& header) {
      if (std::distance(header.begin(), header.end()) != 2) {
        problems.push_back(at + "include '" + header.string() + "' as \"stage/file.h\"");
        return;
      }
      const int target = RankIn(kStages, header.begin()->string());
      if (target < 0) {
        problems.push_back(at + "'" + header.string() + "' is in no stage");
      } else if (target > rank) {
        problems.push_back(at + stage + " may not include the later stage's '" + header.string() +
                           "'");
      }
    });
  }
  std::sort(problems.begin(), problems.end());
  return problems;
}

// The same rule for validators/: a part includes the library, its own part and earlier parts.
std::vector<std::string> ValidatorLayeringViolations(const fs::path& validators) {
  std::vector<std::string> problems;
  for (const Scanned& file : SourceFiles(validators, "validators")) {
    const bool is_main = file.rel == "main.cc";
    const std::string part = ValidatorPartOf(file.rel);
    const int rank =
        is_main ? static_cast<int>(kValidatorParts.size()) : RankIn(kValidatorParts, part);
    if (rank < 0) {
      problems.push_back(file.where + ": '" + part +
                         "' is not a part of the validator in the architecture map");
      continue;
    }
    ForEachQuotedInclude(validators / file.rel, file.where,
                         [&](const std::string& at, const fs::path& header) {
                           if (std::distance(header.begin(), header.end()) == 2 &&
                               RankIn(kStages, header.begin()->string()) >= 0)
                             return;  // the library: below every part
                           const std::string target_part = IncludedValidatorPart(header);
                           const int target = RankIn(kValidatorParts, target_part);
                           if (target < 0) {
                             problems.push_back(at + "'" + header.string() +
                                                "' is in no part; include it as \"part/file.h\"");
                           } else if (target > rank) {
                             problems.push_back(at + part + " may not include the later part's '" +
                                                header.string() + "'");
                           }
                         });
  }
  std::sort(problems.begin(), problems.end());
  return problems;
}

// The round trip's judging half (coordinator/roundtrip_checks.*) judges a value of what the
// processes did: it includes nothing that starts, reads or watches a process, so a check
// cannot reach past that value. One line per such include.
std::vector<std::string> JudgeReachingPastTheRuns(const fs::path& validators) {
  static const char* const kRunning[] = {"support/worker_process.h", "support/engine_transcript.h",
                                         "coordinator/engine_command.h",
                                         "coordinator/engine_process.h", "base/subprocess.h"};
  std::vector<std::string> problems;
  for (const char* file : {"coordinator/roundtrip_checks.h", "coordinator/roundtrip_checks.cc"}) {
    if (!fs::exists(validators / file)) {
      problems.push_back(std::string("validators/") + file + ": missing");
      continue;
    }
    ForEachQuotedInclude(validators / file, std::string("validators/") + file,
                         [&](const std::string& at, const fs::path& header) {
                           for (const char* running : kRunning)
                             if (header.generic_string() == running)
                               problems.push_back(at + "the judge includes '" + running + "'");
                         });
  }
  return problems;
}

// The run reaches the worker and the engines only as the engine spec (run/engine_spec.h), which
// the coordinator resolves from the project: nothing under validators/worker or
// validators/engines includes a project/ header, so no rule of what runs is written twice.
// One line per such include.
std::vector<std::string> ProjectReadBesideTheSpec(const fs::path& validators) {
  std::vector<std::string> problems;
  for (const char* part : {"worker", "engines"}) {
    if (!fs::exists(validators / part)) continue;
    for (const Scanned& file : SourceFiles(validators / part, std::string("validators/") + part)) {
      ForEachQuotedInclude(validators / part / file.rel, file.where,
                           [&](const std::string& at, const fs::path& header) {
                             if (header.begin()->string() == "project")
                               problems.push_back(at + "includes '" + header.generic_string() +
                                                  "': the run comes from the engine spec");
                           });
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

TEST(Layering, TheValidatorsPartsIncludeOnlyTheLibraryTheirOwnAndEarlierParts) {
  EXPECT_EQ(Joined(ValidatorLayeringViolations(testing::SourceDir() / "validators")), "");
}

TEST(Layering, TheRoundTripsChecksIncludeNothingThatRunsAProcess) {
  EXPECT_EQ(Joined(JudgeReachingPastTheRuns(testing::SourceDir() / "validators")), "");
}

TEST(Layering, AJudgeIncludingTheProcessRunnerIsRefused) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "coordinator/roundtrip_checks.h", "#pragma once\n");
  testing::WriteFile(dir.path() / "coordinator/roundtrip_checks.cc",
                     "#include \"coordinator/roundtrip_checks.h\"\n"
                     "#include \"support/worker_process.h\"\n");
  EXPECT_EQ(Joined(JudgeReachingPastTheRuns(dir.path())),
            "validators/coordinator/roundtrip_checks.cc:2: the judge includes "
            "'support/worker_process.h'\n");
}

TEST(Layering, TheWorkerAndTheEnginesReadTheRunOnlyFromTheEngineSpec) {
  EXPECT_EQ(Joined(ProjectReadBesideTheSpec(testing::SourceDir() / "validators")), "");
}

TEST(Layering, AnEngineIncludingTheProjectIsRefused) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "engines/native/trainer.cc",
                     "#include \"engines/native/trainer.h\"\n#include \"run/run_config.h\"\n"
                     "#include \"project/train_config.h\"\n");
  testing::WriteFile(dir.path() / "worker/worker.cc", "#include \"project/project.h\"\n");
  EXPECT_EQ(Joined(ProjectReadBesideTheSpec(dir.path())),
            "validators/engines/native/trainer.cc:3: includes 'project/train_config.h': the run "
            "comes from the engine spec\n"
            "validators/worker/worker.cc:1: includes 'project/project.h': the run comes from the "
            "engine spec\n");
}

TEST(Layering, AValidatorPartIncludingALaterPartIsRefused) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "engines/native/checkpoint.cc",
                     "#include \"engines/native/checkpoint.h\"\n#include \"base/sha256.h\"\n"
                     "#include \"coordinator/roundtrip.h\"\n");
  testing::WriteFile(dir.path() / "main.cc", "#include \"coordinator/validate.h\"\n");
  EXPECT_EQ(Joined(ValidatorLayeringViolations(dir.path())),
            "validators/engines/native/checkpoint.cc:3: engines/native may not include the later "
            "part's 'coordinator/roundtrip.h'\n");
}

TEST(Layering, AValidatorFileOutsideThePartsOrAFlatIncludeIsRefused) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "misc/util.cc", "int x;\n");
  testing::WriteFile(dir.path() / "loose.h", "#pragma once\n");
  testing::WriteFile(dir.path() / "ops/ops_check.cc", "#include \"ops_check.h\"\n");
  EXPECT_EQ(Joined(ValidatorLayeringViolations(dir.path())),
            "validators/loose.h: '' is not a part of the validator in the architecture map\n"
            "validators/misc/util.cc: 'misc' is not a part of the validator in the architecture "
            "map\n"
            "validators/ops/ops_check.cc:1: 'ops_check.h' is in no part; include it as "
            "\"part/file.h\"\n");
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
