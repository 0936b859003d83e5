// The one-error-type rule (docs/DESIGN.md, "Exit codes"): our own code under src/ and
// validators/ throws a Failure (base/failure.h, which carries its exit code) or an InputError
// (base/diagnostic.h, exit 2), never a bare standard exception, which RunWithExitCodes could
// only end as exit 3. This test enumerates every throw site and fails naming file:line; a
// planted fault proves that it can.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "test_support.h"

namespace trainlock {
namespace {
namespace fs = std::filesystem;

// `text` with comments, string and character literals blanked out (newlines kept, so that
// offsets still give line numbers): a throw in a comment or a message is not a throw site.
std::string CodeOnly(const std::string& text) {
  std::string out = text;
  enum { kCode, kLine, kBlock, kString, kChar } state = kCode;
  for (size_t i = 0; i < out.size(); ++i) {
    const char c = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    switch (state) {
      case kCode:
        if (c == '/' && next == '/')
          state = kLine;
        else if (c == '/' && next == '*')
          state = kBlock;
        else if (c == '"' && i > 0 && text[i - 1] == 'R') {
          // A raw string R"d(...)d": blanked to its end, whatever it holds.
          const size_t open = text.find('(', i);
          const std::string close =
              open == std::string::npos ? "" : ")" + text.substr(i + 1, open - i - 1) + "\"";
          const size_t end = close.empty() ? std::string::npos : text.find(close, open);
          const size_t stop = end == std::string::npos ? text.size() : end + close.size();
          for (size_t k = i; k < stop; ++k)
            if (out[k] != '\n') out[k] = ' ';
          i = stop - 1;
        } else if (c == '"')
          state = kString;
        else if (c == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(text[i - 1]))))
          state = kChar;  // not a digit separator (1'000)
        continue;
      case kLine:
        if (c == '\n') state = kCode;
        break;
      case kBlock:
        if (c == '*' && next == '/') {
          out[i] = out[i + 1] = ' ';
          ++i;
          state = kCode;
          continue;
        }
        break;
      case kString:
      case kChar:
        if (c == '\\') {
          out[i] = ' ';
          if (i + 1 < out.size() && out[i + 1] != '\n') out[++i] = ' ';
          continue;
        }
        if (c == (state == kString ? '"' : '\'')) {
          state = kCode;
          continue;
        }
        break;
    }
    if (out[i] != '\n') out[i] = ' ';
  }
  return out;
}

// A throw of a standard exception: `throw std::...`, or of one of the standard exception
// names however qualified (after a using-declaration, or std::filesystem::, fs::).
const std::regex& BareThrow() {
  static const std::regex re(
      R"(\bthrow\s+(std\s*::\s*\w+|(\w+\s*::\s*)*(exception|runtime_error|logic_error|)"
      R"(invalid_argument|out_of_range|domain_error|length_error|range_error|overflow_error|)"
      R"(underflow_error|system_error|filesystem_error|bad_alloc|bad_cast|ios_base\s*::\s*failure)\b))");
  return re;
}

// Classes deriving directly from a standard exception.
const std::regex& StdDerivedClass() {
  static const std::regex re(
      R"(\b(class|struct)\s+(\w+)\s*(final\s*)?:\s*(public\s+)?std\s*::\s*\w+(error|exception)\b)");
  return re;
}

// Standard exceptions thrown by design, as "path:line": none. Keep it that way; a std
// exception thrown and caught within one function would be listed here with why.
const std::map<std::string, std::string>& AllowedBareThrows() {
  static const std::map<std::string, std::string> allowed = {};
  return allowed;
}

// The exception classes that derive from a standard exception, and where each is caught by
// name. Failure and InputError are the two that reach RunWithExitCodes; every other one is
// internal to its module and turned into a Failure, an InputError or a check result where
// named, or (a library-level I/O or key problem escaping) ends as exit 3, an environment
// failure. A new class must be added here with the place that catches it.
const std::map<std::string, std::string>& KnownExceptionClasses() {
  static const std::map<std::string, std::string> known = {
      {"Failure", "base/failure.h: RunWithExitCodes maps it to its own exit code"},
      {"InputError", "base/diagnostic.h: RunWithExitCodes prints it and exits 2"},
      {"HttpError", "lock/: hf_hub.cc, python_index.cc, oci_registry.cc make it a Failure"},
      {"KeyError", "cmd_gate.cc, cmd_validate.cc make it an InputError; validate.cc a check"},
      {"ArtifactPathError", "lock_resolver.cc, checks/data_checks.cc, coordinator/roundtrip.cc"},
      {"StreamError", "lock_resolver.cc, checks/data_checks.cc; elsewhere an I/O failure, exit 3"},
      {"ModelLoadError", "worker/worker.cc RunWorker: the worker's error kind \"model\""},
      {"CheckpointError", "worker/worker.cc RunWorker: kWorkerCheckpointRefused"},
      {"SafetensorsError", "engines/native/model_loader.cc and checkpoint.cc"},
      {"NonFiniteLoss", "worker/worker.cc RunWorker: the worker's error kind non_finite_loss"},
      {"RankStoreError", "coordinator/validate.cc: failed comm checks"},
      {"SmokeProblem", "ops/custom_ops.cc SmokeTest: an ops.custom smoke_error"},
      {"CommFailure", "comm/collectives.cc RunCommChecks, by name: failed comm checks"},
  };
  return known;
}

struct Finding {
  std::string where;  // path:line, relative to the scanned root
  std::string what;
};

int LineOf(const std::string& text, size_t offset) {
  return 1 +
         static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
}

// Every bare standard-exception throw and every unknown std-derived exception class in the
// C++ sources under root/src and root/validators.
std::vector<Finding> ScanThrowSites(const fs::path& root) {
  std::vector<Finding> findings;
  for (const char* top : {"src", "validators"}) {
    if (!fs::exists(root / top)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cc" && ext != ".h" && ext != ".cu")) continue;
      const std::string rel = fs::relative(entry.path(), root).generic_string();
      const std::string code = CodeOnly(testing::ReadFile(entry.path()));
      for (std::sregex_iterator it(code.begin(), code.end(), BareThrow()), end; it != end; ++it) {
        const std::string where = rel + ":" + std::to_string(LineOf(code, it->position()));
        if (!AllowedBareThrows().contains(where))
          findings.push_back({where, "bare " + it->str(1) + " (throw a Failure or InputError)"});
      }
      for (std::sregex_iterator it(code.begin(), code.end(), StdDerivedClass()), end; it != end;
           ++it) {
        if (!KnownExceptionClasses().contains((*it)[2].str())) {
          findings.push_back({rel + ":" + std::to_string(LineOf(code, it->position())),
                              "exception class " + (*it)[2].str() +
                                  " is not in KnownExceptionClasses (say where it is caught)"});
        }
      }
    }
  }
  return findings;
}

// "src/lock" for src/lock/hf_hub.cc: the module a file belongs to.
std::string ModuleOf(const fs::path& root, const fs::path& file) {
  const fs::path rel = fs::relative(file, root);
  auto it = rel.begin();
  const std::string top = it->string();
  return ++it == rel.end() ? top : top + "/" + it->string();
}

// Each exception class of our own that is caught by name outside the module declaring it:
// class -> the modules that catch it there.
std::map<std::string, std::set<std::string>> CrossModuleExceptions(const fs::path& root) {
  static const std::regex caught(R"(\bcatch\s*\(\s*const\s+(\w+)\s*&)");
  std::map<std::string, std::string> declared_in = {{"Failure", "src/base"},
                                                    {"InputError", "src/base"}};
  std::map<std::string, std::set<std::string>> catchers;
  for (const char* top : {"src", "validators"}) {
    if (!fs::exists(root / top)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
      const std::string code = CodeOnly(testing::ReadFile(entry.path()));
      const std::string module = ModuleOf(root, entry.path());
      for (auto it = std::sregex_iterator(code.begin(), code.end(), StdDerivedClass());
           it != std::sregex_iterator(); ++it)
        declared_in[(*it)[2].str()] = module;
      for (auto it = std::sregex_iterator(code.begin(), code.end(), caught);
           it != std::sregex_iterator(); ++it)
        catchers[(*it)[1].str()].insert(module);
    }
  }
  std::map<std::string, std::set<std::string>> crossing;
  for (const auto& [name, modules] : catchers) {
    const auto home = declared_in.find(name);
    if (home == declared_in.end()) continue;  // a library's exception
    for (const std::string& m : modules)
      if (m != home->second) crossing[name].insert(m);
  }
  return crossing;
}

// The exception classes DESIGN.md's "Exit codes" names as the ones that travel across
// modules: every `Name` in backquotes in the paragraph from "Across modules" to its end.
std::set<std::string> DesignNamedExceptions(const std::string& design) {
  std::set<std::string> names;
  const size_t start = design.find("Across modules");
  if (start == std::string::npos) return names;
  const size_t end = design.find("\n\n", start);
  const std::string paragraph = design.substr(start, end - start);
  static const std::regex named(R"(`([A-Z]\w+)`)");
  for (auto it = std::sregex_iterator(paragraph.begin(), paragraph.end(), named);
       it != std::sregex_iterator(); ++it)
    names.insert((*it)[1].str());
  return names;
}

std::string Describe(const std::vector<Finding>& findings) {
  std::string out;
  for (const Finding& f : findings) out += f.where + ": " + f.what + "\n";
  return out;
}

TEST(ThrowSites, OurCodeThrowsNoBareStandardException) {
  const std::vector<Finding> findings = ScanThrowSites(testing::SourceDir());
  EXPECT_TRUE(findings.empty()) << Describe(findings);
}

TEST(ThrowSites, TheScanSeesTheThrowSitesItMustKnow) {
  // Guards against a scan that silently reads nothing (a moved folder, a broken regex).
  const std::string code =
      CodeOnly(testing::ReadFile(testing::SourceDir() / "src/base/file_io.cc"));
  EXPECT_NE(code.find("throw Failure("), std::string::npos);
}

TEST(ThrowSites, APlantedBareThrowIsFoundByFileAndLine) {
  testing::TempDir tmp;
  testing::WriteFile(tmp.path() / "src/base/planted.cc",
                     "// throw std::runtime_error in a comment is not a site\n"
                     "void F() {\n"
                     "  const char* s = \"throw std::logic_error\";\n"
                     "  throw std::runtime_error(\"x\");\n"
                     "}\n");
  testing::WriteFile(
      tmp.path() / "validators/x/planted.h",
      "using std::invalid_argument;\n"
      "inline void G() { throw invalid_argument(\"y\"); }\n"
      "inline void H() {\n  throw\n    std::filesystem::filesystem_error(\"z\", {});\n}\n"
      "class Mine : public std::runtime_error {};\n");
  const std::vector<Finding> findings = ScanThrowSites(tmp.path());
  const std::string text = Describe(findings);
  ASSERT_EQ(findings.size(), 4u) << text;
  EXPECT_NE(text.find("src/base/planted.cc:4: bare std::runtime_error"), std::string::npos) << text;
  EXPECT_NE(text.find("validators/x/planted.h:2: bare invalid_argument"), std::string::npos)
      << text;
  EXPECT_NE(text.find("validators/x/planted.h:4: bare std::filesystem"), std::string::npos) << text;
  EXPECT_NE(text.find("validators/x/planted.h:7: exception class Mine"), std::string::npos) << text;
}

TEST(ThrowSites, TheExceptionsThatCrossAModuleAreTheOnesDesignNames) {
  const std::set<std::string> named =
      DesignNamedExceptions(testing::ReadFile(testing::SourceDir() / "docs/DESIGN.md"));
  ASSERT_TRUE(named.count("Failure")) << "DESIGN.md's \"Across modules\" paragraph is gone";
  for (const auto& [name, modules] : CrossModuleExceptions(testing::SourceDir())) {
    std::string where;
    for (const std::string& m : modules) where += " " + m;
    EXPECT_TRUE(named.count(name)) << name << " is caught outside its module (" << where
                                   << ") but docs/DESIGN.md does not name it";
  }
}

TEST(ThrowSites, AnExceptionCaughtInAnotherModuleIsFound) {
  testing::TempDir tmp;
  testing::WriteFile(tmp.path() / "src/a/mine.h",
                     "struct MineError : public std::runtime_error { using runtime_error::"
                     "runtime_error; };\n");
  testing::WriteFile(tmp.path() / "src/a/own.cc",
                     "void F() { try {} catch (const MineError&) {} }\n");
  testing::WriteFile(tmp.path() / "src/b/other.cc",
                     "void G() { try {} catch (const MineError& e) {} catch (const "
                     "std::exception&) {} }\n");
  const auto crossing = CrossModuleExceptions(tmp.path());
  ASSERT_EQ(crossing.size(), 1u);
  EXPECT_EQ(crossing.at("MineError"), std::set<std::string>{"src/b"});
  EXPECT_FALSE(DesignNamedExceptions("Across modules only `Failure` travels.\n\n`MineError`")
                   .count("MineError"));
}

TEST(ThrowSites, FailureAndInputErrorAreFine) {
  testing::TempDir tmp;
  testing::WriteFile(tmp.path() / "src/a.cc",
                     "void F() { throw Failure(\"x\", kExitEnvironment); }\n"
                     "void G() { throw InputError(Diagnostic{\"f\", {}, \"bad\", {}}); }\n"
                     "void H() { try { F(); } catch (...) { throw; } }\n");
  EXPECT_TRUE(ScanThrowSites(tmp.path()).empty()) << Describe(ScanThrowSites(tmp.path()));
}

}  // namespace
}  // namespace trainlock
