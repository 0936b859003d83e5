// The bad-input corpus: every message trainlock gives for a broken manifest, lock or training
// config, pinned.
//
// tests/bad-input/ holds one mistake per file: <case>.toml (a manifest), <case>.lock (a lock) or
// <case>.yaml (a training config), each beside <case>.<ext>.expected, the one line the loader
// must report first, with FILE in place of the path. Every case is checked twice: through the
// library loader, and end to end through `trainlock check` on a copy of examples/tiny with that
// file swapped in (exit code 2, every stderr line `path[:line:column]: error: ...`).
// Inputs too big to commit (10 MB values and keys, 10000 levels of nesting, tens of thousands of
// keys) are generated here; they must be refused with short one-line messages, never a crash.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <optional>
#include <ostream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostic.h"
#include "base/subprocess.h"
#include "project/lockfile_loader.h"
#include "project/train_config.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::SourceDir;
using testing::WriteFile;

constexpr size_t kMinCorpusCases = 40;
constexpr size_t kMaxLineLength = 500;

// Which loader reads a file, and where it lives in a project directory.
enum class InputKind { kManifest, kLock, kConfig };

struct KindInfo {
  InputKind kind;
  const char* extension;
  const char* project_file;  // relative to the project directory of examples/tiny
};

constexpr KindInfo kKinds[] = {
    {InputKind::kManifest, ".toml", "trainlock.toml"},
    {InputKind::kLock, ".lock", "trainlock.lock"},
    {InputKind::kConfig, ".yaml", "configs/tiny.yaml"},
};

const KindInfo& Info(InputKind kind) {
  return *std::find_if(std::begin(kKinds), std::end(kKinds),
                       [&](const KindInfo& k) { return k.kind == kind; });
}

fs::path CorpusDir() {
  return SourceDir() / "tests" / "bad-input";
}

struct CorpusCase {
  std::string test_name;  // the file name with every other character than [A-Za-z0-9] as '_'
  fs::path file;
  InputKind kind = InputKind::kManifest;
};

// gtest prints parameters on failure; name the file rather than dumping the struct's bytes.
void PrintTo(const CorpusCase& c, std::ostream* out) {
  *out << c.file.filename().string();
}

std::string SanitizedName(const std::string& file_name) {
  std::string name = file_name;
  for (char& c : name) {
    bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum) c = '_';
  }
  return name;
}

// Every corpus file, sorted by name; .expected files and anything else are not cases.
std::vector<CorpusCase> LoadCorpus() {
  std::vector<CorpusCase> cases;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(CorpusDir(), ec)) {
    std::string ext = entry.path().extension().string();
    for (const KindInfo& k : kKinds) {
      if (ext == k.extension) {
        std::string file_name = entry.path().filename().string();
        cases.push_back({SanitizedName(file_name), entry.path(), k.kind});
      }
    }
  }
  std::sort(cases.begin(), cases.end(),
            [](const CorpusCase& a, const CorpusCase& b) { return a.file < b.file; });
  return cases;
}

fs::path ExpectedFile(const CorpusCase& c) {
  return c.file.string() + ".expected";
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The one line of a .expected file, without its newline.
std::string ExpectedLine(const CorpusCase& c) {
  std::vector<std::string> lines = Lines(ReadFile(ExpectedFile(c)));
  return lines.empty() ? std::string() : lines.front();
}

std::string WithPath(const std::string& expected, const std::string& path) {
  return expected.rfind("FILE", 0) == 0 ? path + expected.substr(4) : expected;
}

// Runs the loader for `kind`; the diagnostics it threw, or nullopt when it accepted the text.
std::optional<Diagnostics> Load(InputKind kind, std::string_view text, const std::string& path) {
  try {
    switch (kind) {
      case InputKind::kManifest:
        LoadLockfile(text, path, LockfileKind::kManifest);
        break;
      case InputKind::kLock:
        LoadLockfile(text, path, LockfileKind::kLock);
        break;
      case InputKind::kConfig:
        LoadTrainConfig(text, path);
        break;
    }
  } catch (const InputError& e) {
    return e.diagnostics();
  }
  return std::nullopt;
}

// `path[:line:column]: error: ...`, the one shape every bad-input line has.
bool IsDiagnosticLine(const std::string& line) {
  // std::regex recurses per character; a runaway line is not a diagnostic anyway.
  if (line.size() > 64 * 1024) return false;
  static const std::regex kLine("^[^:]+(:[0-9]+:[0-9]+)?: error: .*");
  return std::regex_match(line, kLine);
}

// A hang is a bug like a crash: the CLI gets this long, then SIGALRM ends it.
constexpr unsigned kCheckDeadlineSeconds = 120;
constexpr int kKilledByDeadline = 128 + SIGALRM;

struct CheckRun {
  int exit_code = -1;  // 128 + signal when a signal ended it
  std::vector<std::string> err_lines;
  std::string display_path;  // the swapped file as the CLI names it
};

// `trainlock check DIR` without a shell (DIR is passed as one argv entry), stderr to a file.
CheckRun RunCheck(const fs::path& dir) {
  testing::TempDir capture;
  const std::string err_path = (capture.path() / "stderr").string();
  const std::string binary = (testing::BinDir() / "trainlock").string();
  const std::string dir_arg = dir.string();
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int null = ::open("/dev/null", O_RDWR);
    if (err < 0 || null < 0) ::_exit(126);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(err, 2);
    ::alarm(kCheckDeadlineSeconds);  // survives exec; its default action ends the process
    const char* argv[] = {binary.c_str(), "check", dir_arg.c_str(), nullptr};
    ::execv(binary.c_str(), const_cast<char* const*>(argv));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  CheckRun run;
  run.exit_code = ExitCodeOf(status);
  run.err_lines = Lines(ReadFile(err_path));
  return run;
}

// `trainlock check` on a copy of examples/tiny whose `kind` file holds `text`.
CheckRun RunCheckWith(InputKind kind, const std::string& text) {
  testing::TempDir dir;
  testing::CopyExample("tiny", dir.path());
  fs::path file = dir.path() / Info(kind).project_file;
  WriteFile(file, text);
  CheckRun run = RunCheck(dir.path());
  EXPECT_NE(run.exit_code, kKilledByDeadline)
      << "trainlock check hung for " << kCheckDeadlineSeconds << " s";
  run.display_path = file.lexically_normal().string();
  return run;
}

// ---------------------------------------------------------------------------------------------
// The committed corpus.

class BadInputCorpus : public ::testing::TestWithParam<CorpusCase> {};

TEST_P(BadInputCorpus, LoaderReportsTheExpectedLineFirst) {
  const CorpusCase& c = GetParam();
  const std::string path = c.file.string();
  std::optional<Diagnostics> diags = Load(c.kind, ReadFile(c.file), path);
  ASSERT_TRUE(diags.has_value()) << "the loader accepted " << path;
  ASSERT_FALSE(diags->empty());
  std::string first = diags->items().front().Format();
  ASSERT_EQ(first.rfind(path, 0), 0u) << first;
  EXPECT_EQ("FILE" + first.substr(path.size()), ExpectedLine(c));
}

TEST_P(BadInputCorpus, LoaderGivesEveryDiagnosticAsOneShortLineNamingTheFile) {
  const CorpusCase& c = GetParam();
  const std::string path = c.file.string();
  std::optional<Diagnostics> diags = Load(c.kind, ReadFile(c.file), path);
  ASSERT_TRUE(diags.has_value()) << "the loader accepted " << path;
  for (const Diagnostic& d : diags->items()) {
    std::string line = d.Format();
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    EXPECT_LT(line.size(), kMaxLineLength + path.size()) << line;
    EXPECT_EQ(d.path, path);
    EXPECT_TRUE(IsDiagnosticLine(line)) << line;
  }
}

TEST_P(BadInputCorpus, CheckExitsTwoAndPrintsTheExpectedLine) {
  const CorpusCase& c = GetParam();
  CheckRun run = RunCheckWith(c.kind, ReadFile(c.file));
  EXPECT_EQ(run.exit_code, 2);
  ASSERT_FALSE(run.err_lines.empty());
  for (const std::string& line : run.err_lines) {
    EXPECT_TRUE(IsDiagnosticLine(line)) << line;
  }
  std::string expected = WithPath(ExpectedLine(c), run.display_path);
  EXPECT_NE(std::find(run.err_lines.begin(), run.err_lines.end(), expected), run.err_lines.end())
      << "expected: " << expected << "\nstderr:\n"
      << ::testing::PrintToString(run.err_lines);
}

std::string CaseName(const ::testing::TestParamInfo<CorpusCase>& param_info) {
  return param_info.param.test_name;
}

INSTANTIATE_TEST_SUITE_P(Files, BadInputCorpus, ::testing::ValuesIn(LoadCorpus()), CaseName);

TEST(BadInputCorpusFiles, HoldAtLeastFortyCases) {
  EXPECT_GE(LoadCorpus().size(), kMinCorpusCases) << "in " << CorpusDir();
}

TEST(BadInputCorpusFiles, CoverManifestsLocksAndConfigs) {
  for (const KindInfo& k : kKinds) {
    std::vector<CorpusCase> all = LoadCorpus();
    EXPECT_TRUE(
        std::any_of(all.begin(), all.end(), [&](const CorpusCase& c) { return c.kind == k.kind; }))
        << "no " << k.extension << " case";
  }
}

TEST(BadInputCorpusFiles, EachCaseExpectsExactlyOneLineStartingWithFile) {
  for (const CorpusCase& c : LoadCorpus()) {
    ASSERT_TRUE(fs::exists(ExpectedFile(c))) << ExpectedFile(c);
    std::string text = ReadFile(ExpectedFile(c));
    EXPECT_EQ(Lines(text).size(), 1u) << ExpectedFile(c);
    EXPECT_EQ(text.rfind("FILE", 0), 0u) << ExpectedFile(c);
    EXPECT_TRUE(IsDiagnosticLine(Lines(text).front())) << ExpectedFile(c);
  }
}

TEST(BadInputCorpusFiles, EachExpectationHasItsCase) {
  for (const fs::directory_entry& entry : fs::directory_iterator(CorpusDir())) {
    if (entry.path().extension() != ".expected") continue;
    fs::path input = entry.path();
    input.replace_extension();
    EXPECT_TRUE(fs::exists(input)) << entry.path() << " has no case file";
  }
}

TEST(BadInputCorpusFiles, BinaryGarbageHoldsNulAndInvalidUtf8) {
  for (const char* name : {"binary-garbage.toml", "binary-garbage.yaml"}) {
    std::string bytes = ReadFile(CorpusDir() / name);
    EXPECT_NE(bytes.find('\0'), std::string::npos) << name;
    EXPECT_TRUE(std::any_of(bytes.begin(), bytes.end(),
                            [](char c) { return static_cast<unsigned char>(c) >= 0xf8; }))
        << name << " has no byte that can never appear in UTF-8";
  }
}

// ---------------------------------------------------------------------------------------------
// Inputs generated here because they are too large to commit.

const std::string& TinyManifest() {
  static const std::string text = ReadFile(SourceDir() / "examples/tiny/trainlock.toml");
  return text;
}
const std::string& TinyConfig() {
  static const std::string text = ReadFile(SourceDir() / "examples/tiny/configs/tiny.yaml");
  return text;
}
constexpr size_t kTenMegabytes = size_t{10} << 20;
constexpr int kDeep = 10000;

std::string Replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string Repeat(const std::string& s, size_t times) {
  std::string out;
  out.reserve(s.size() * times);
  for (size_t i = 0; i < times; ++i) out += s;
  return out;
}

// The library and `trainlock check` both refuse `text`: every diagnostic one well-formed line
// under kMaxLineLength characters, the first one about this file containing `first_contains`.
void ExpectRefusedInShortLines(InputKind kind, const std::string& text,
                               const std::string& first_contains) {
  const std::string path = std::string("generated") + Info(kind).extension;
  std::optional<Diagnostics> diags = Load(kind, text, path);
  ASSERT_TRUE(diags.has_value()) << "the loader accepted the generated input";
  ASSERT_FALSE(diags->empty());
  for (const Diagnostic& d : diags->items()) {
    std::string line = d.Format();
    ASSERT_EQ(line.find('\n'), std::string::npos);
    ASSERT_LT(line.size(), kMaxLineLength) << line.substr(0, kMaxLineLength);
  }
  EXPECT_NE(diags->items().front().Format().find(first_contains), std::string::npos)
      << diags->items().front().Format();

  CheckRun run = RunCheckWith(kind, text);
  EXPECT_EQ(run.exit_code, 2);
  ASSERT_FALSE(run.err_lines.empty());
  for (const std::string& line : run.err_lines) {
    ASSERT_LT(line.size(), kMaxLineLength + run.display_path.size()) << line.substr(0, 200);
    ASSERT_TRUE(IsDiagnosticLine(line)) << line;
  }
  auto first = std::find_if(run.err_lines.begin(), run.err_lines.end(), [&](const std::string& l) {
    return l.rfind(run.display_path + ":", 0) == 0;
  });
  ASSERT_NE(first, run.err_lines.end()) << "no line names " << run.display_path;
  EXPECT_NE(first->find(first_contains), std::string::npos) << *first;
}

TEST(BadInputGenerated, TenMegabyteStringValueIsQuotedShort) {
  std::string text = Replaced(TinyManifest(), "name = \"tiny\"",
                              "name = \"" + std::string(kTenMegabytes, 'a') + "\"");
  ExpectRefusedInShortLines(InputKind::kManifest, text, "error: 'project.name' = 'aaaaaaaaaa");
}

TEST(BadInputGenerated, TenMegabyteKeyIsQuotedShort) {
  std::string text = Replaced(TinyManifest(), "seed = 1234\n",
                              "seed = 1234\n" + std::string(kTenMegabytes, 'k') + " = 1\n");
  ExpectRefusedInShortLines(InputKind::kManifest, text, "error: unknown key 'kkkkkkkkkk");
}

TEST(BadInputGenerated, TenMegabyteTableNameIsQuotedShort) {
  std::string text = TinyManifest() + "\n[" + std::string(kTenMegabytes, 't') + "]\n";
  ExpectRefusedInShortLines(InputKind::kManifest, text, "error: unknown key 'tttttttttt");
}

TEST(BadInputGenerated, TenMegabyteYamlScalarIsQuotedShort) {
  std::string text = Replaced(TinyConfig(), "architecture: llama",
                              "architecture: " + std::string(kTenMegabytes, 'x'));
  ExpectRefusedInShortLines(InputKind::kConfig, text, "error: 'model.architecture' = 'xxxxxxxxxx");
}

TEST(BadInputGenerated, TenMegabyteYamlKeyIsRefused) {
  std::string text = TinyConfig() + std::string(kTenMegabytes, 'k') + ": 1\n";
  ExpectRefusedInShortLines(InputKind::kConfig, text, "error: invalid YAML: ");
}

TEST(BadInputGenerated, DeeplyNestedTomlArraysHitTheDepthLimit) {
  std::string text = "a = " + Repeat("[", kDeep) + Repeat("]", kDeep) + "\n" + TinyManifest();
  ExpectRefusedInShortLines(InputKind::kManifest, text,
                            "error: invalid TOML: Error while parsing value: exceeded maximum "
                            "nested value depth");
}

TEST(BadInputGenerated, DeeplyNestedTomlInlineTablesHitTheDepthLimit) {
  std::string text =
      "a = " + Repeat("{ b = ", kDeep) + "1" + Repeat(" }", kDeep) + "\n" + TinyManifest();
  ExpectRefusedInShortLines(InputKind::kManifest, text,
                            "error: invalid TOML: Error while parsing value: exceeded maximum "
                            "nested value depth");
}

TEST(BadInputGenerated, DeeplyNestedDottedKeysAreRefusedAtTheDepthLimit) {
  std::string text = "a" + Repeat(".a", kDeep) + " = 1\n" + TinyManifest();
  ExpectRefusedInShortLines(InputKind::kManifest, text,
                            ":1:514: error: invalid TOML: key nested deeper than 256 levels");
}

// toml++ 3.3 applies no depth limit to dotted keys and [a.a.a...] headers and recurses once
// per level, so from about 35000 levels the stack overflowed (SIGSEGV). ParseTomlDocument now
// bounds key depth before toml++ sees the text. Only the CLI runs it, so a regression cannot
// take the test binary down with it.
TEST(BadInputGenerated, VeryDeeplyNestedDottedKeysAreRefusedNotACrash) {
  for (const std::string& key :
       {"a" + Repeat(".a", 100000) + " = 1\n", "[a" + Repeat(".a", 100000) + "]\n"}) {
    CheckRun run = RunCheckWith(InputKind::kManifest, key + TinyManifest());
    std::string head;
    for (size_t i = 0; i < run.err_lines.size() && i < 3; ++i) head += run.err_lines[i] + "\n";
    EXPECT_EQ(run.exit_code, 2) << key.substr(0, 12) << "...: " << head;
    ASSERT_FALSE(run.err_lines.empty());
    EXPECT_TRUE(IsDiagnosticLine(run.err_lines.front())) << head;
    EXPECT_NE(run.err_lines.front().find("key nested deeper than 256 levels"), std::string::npos);
  }
}

TEST(BadInputGenerated, DeeplyNestedYamlFlowSequencesAreRefused) {
  std::string text = Repeat("[", kDeep) + Repeat("]", kDeep) + "\n";
  ExpectRefusedInShortLines(InputKind::kConfig, text, "error: invalid YAML: ");
}

TEST(BadInputGenerated, DeeplyNestedYamlFlowMappingsAreRefused) {
  std::string text = Repeat("{a: ", kDeep) + "1" + Repeat("}", kDeep) + "\n";
  ExpectRefusedInShortLines(InputKind::kConfig, text, "error: invalid YAML: ");
}

TEST(BadInputGenerated, DeeplyNestedYamlBlockSequencesAreRefused) {
  std::string text = Repeat("- ", kDeep) + "x\n";
  ExpectRefusedInShortLines(InputKind::kConfig, text, "error: invalid YAML: ");
}

TEST(BadInputGenerated, ManyKeysInAnUnknownTableAreOneDiagnostic) {
  std::string table = "\n[extra]\n";
  for (int i = 0; i < 50000; ++i)
    table += "k" + std::to_string(i) + " = " + std::to_string(i) + "\n";
  std::optional<Diagnostics> diags = Load(InputKind::kManifest, TinyManifest() + table, "m.toml");
  ASSERT_TRUE(diags.has_value());
  ASSERT_EQ(diags->size(), 1u);
  // [extra] sits after the manifest's last line and one blank line; column 2 names the key.
  size_t header_line =
      static_cast<size_t>(std::count(TinyManifest().begin(), TinyManifest().end(), '\n') + 2);
  EXPECT_EQ(diags->items().front().Format(), "m.toml:" + std::to_string(header_line) +
                                                 ":2: error: unknown key 'extra' at the top level");
}

TEST(BadInputGenerated, ManyUnknownTopLevelKeysAreEachOneLine) {
  std::string keys;
  for (int i = 0; i < 20000; ++i)
    keys += "k" + std::to_string(i) + " = " + std::to_string(i) + "\n";
  ExpectRefusedInShortLines(InputKind::kManifest, keys + TinyManifest(),
                            ":1:1: error: unknown key 'k0' at the top level");
}

TEST(BadInputGenerated, ManyUnknownYamlKeysAreEachOneLine) {
  std::string keys;
  for (int i = 0; i < 20000; ++i) keys += "k" + std::to_string(i) + ": " + std::to_string(i) + "\n";
  ExpectRefusedInShortLines(InputKind::kConfig, TinyConfig() + keys, "error: unknown key 'k0'");
}

TEST(BadInputGenerated, FileOverTheSizeLimitIsRefusedUnread) {
  testing::TempDir dir;
  testing::CopyExample("tiny", dir.path());
  // Sparse: the size is what is refused, so no 64 MB need be written.
  fs::resize_file(dir.path() / "trainlock.toml", (uintmax_t{64} << 20) + 1);
  CheckRun run = RunCheck(dir.path());
  EXPECT_EQ(run.exit_code, 2);
  ASSERT_FALSE(run.err_lines.empty());
  EXPECT_EQ(run.err_lines.front(), (dir.path() / "trainlock.toml").lexically_normal().string() +
                                       ": error: file is 67108865 bytes; refusing inputs over "
                                       "67108864 bytes");
}

}  // namespace
}  // namespace trainlock
