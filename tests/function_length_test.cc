// No product function is longer than 120 lines (docs/DESIGN.md, "How the code is written";
// issue [4/5]): a function that long mixes deciding, driving and running, which ninja's
// Plan / Builder / CommandRunner split keeps apart. This scans every .cc and .h under src/ and
// validators/ and measures each function body defined at namespace level, from the line of
// its opening brace to the line of its closing one; comments, string and character literals
// (raw strings included) are skipped so that their braces do not count.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxFunctionLines = 120;

// `text` with comments, preprocessor lines, string and character literals blanked (newlines kept,
// so that line numbers stay true).
std::string CodeWithoutLiterals(const std::string& text) {
  std::string out = text;
  size_t i = 0;
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < out.size(); ++k)
      if (out[k] != '\n') out[k] = ' ';
  };
  bool line_start = true;
  while (i < text.size()) {
    const bool at_line_start = line_start;
    line_start = text[i] == '\n' || (line_start && (text[i] == ' ' || text[i] == '\t'));
    if (at_line_start && text[i] == '#') {  // a preprocessor line and its continuations
      size_t end = i;
      while (end < text.size() && (text[end] != '\n' || (end > 0 && text[end - 1] == '\\'))) ++end;
      blank(i, end);
      i = end;
    } else if (text.compare(i, 2, "//") == 0) {
      size_t end = text.find('\n', i);
      end = end == std::string::npos ? text.size() : end;
      blank(i, end);
      i = end;
    } else if (text.compare(i, 2, "/*") == 0) {
      size_t end = text.find("*/", i + 2);
      end = end == std::string::npos ? text.size() : end + 2;
      blank(i, end);
      i = end;
    } else if (text.compare(i, 2, "R\"") == 0 && (i == 0 || !std::isalnum(text[i - 1]))) {
      const size_t open = text.find('(', i + 2);
      if (open == std::string::npos) break;
      const std::string close = ")" + text.substr(i + 2, open - i - 2) + "\"";
      size_t end = text.find(close, open);
      end = end == std::string::npos ? text.size() : end + close.size();
      blank(i, end);
      i = end;
    } else if (text[i] == '"' || (text[i] == '\'' && (i == 0 || !std::isxdigit(text[i - 1])))) {
      // A quote after a hex digit is a digit separator (1'000), not a character literal.
      const char quote = text[i];
      size_t k = i + 1;
      while (k < text.size() && text[k] != quote && text[k] != '\n') k += text[k] == '\\' ? 2 : 1;
      blank(i, k + 1);
      i = k + 1;
    } else {
      ++i;
    }
  }
  return out;
}

// What a brace opened at namespace level belongs to, judged by the text since the previous
// statement or block ("head"): a namespace or linkage block is transparent, a type or an
// initialiser is skipped whole, anything else is a function body.
enum class BraceBlock { kTransparent, kSkipped, kFunction };

BraceBlock KindOfBlock(const std::string& head) {
  static const std::regex transparent(R"((^|\s)(namespace|extern)\b)");
  static const std::regex type(R"((^|\s)(struct|class|union|enum)\b[^()]*$)");
  if (std::regex_search(head, transparent)) return BraceBlock::kTransparent;
  if (std::regex_search(head, type)) return BraceBlock::kSkipped;
  const size_t paren = head.find('(');
  const size_t equals = head.find('=');
  if (paren == std::string::npos) return BraceBlock::kSkipped;  // `= {` lists and the like
  if (equals != std::string::npos && equals < paren) return BraceBlock::kSkipped;
  return BraceBlock::kFunction;
}

// "file:line: N lines (at most 120)" for each function body of `file` longer than the limit.
std::vector<std::string> LongFunctions(const fs::path& file, const std::string& where) {
  const std::string code = CodeWithoutLiterals(testing::ReadFile(file));
  std::vector<std::string> problems;
  std::vector<BraceBlock> open;  // the kinds of the blocks enclosing the cursor
  std::string head;
  int line = 1, function_depth = 0, function_line = 0;
  for (char c : code) {
    if (c == '\n') ++line;
    if (function_depth > 0) {  // inside a function: count braces until it closes
      if (c == '{') ++function_depth;
      if (c == '}' && --function_depth == 0) {
        const int lines = line - function_line + 1;
        if (lines > kMaxFunctionLines)
          problems.push_back(where + ":" + std::to_string(function_line) + ": " +
                             std::to_string(lines) + " lines (at most " +
                             std::to_string(kMaxFunctionLines) + ")");
        head.clear();
      }
      continue;
    }
    if (c == '{') {
      const BraceBlock kind = KindOfBlock(head);
      if (kind == BraceBlock::kFunction) {
        function_depth = 1;
        function_line = line;
        continue;
      }
      open.push_back(kind);
      head.clear();
    } else if (c == '}') {
      if (!open.empty()) open.pop_back();
      head.clear();
    } else if (c == ';') {
      head.clear();
    } else if (!open.empty() && open.back() == BraceBlock::kSkipped) {
      // Inside a type: its member functions are defined inline and are short by habit; the
      // type as a whole is not a function.
      head.clear();
    } else {
      head += c;
    }
  }
  return problems;
}

std::vector<std::string> LongFunctionsUnder(const fs::path& root, const std::string& display) {
  std::vector<std::string> problems;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
    const std::string where =
        (fs::path(display) / fs::relative(entry.path(), root)).generic_string();
    for (std::string& p : LongFunctions(entry.path(), where)) problems.push_back(std::move(p));
  }
  std::sort(problems.begin(), problems.end());
  return problems;
}

std::string OnePerLine(const std::vector<std::string>& lines) {
  std::string all;
  for (const std::string& line : lines) all += line + "\n";
  return all;
}

TEST(FunctionLength, NoFunctionOfTheLibraryIsLongerThan120Lines) {
  EXPECT_EQ(OnePerLine(LongFunctionsUnder(testing::SourceDir() / "src", "src")), "");
}

TEST(FunctionLength, NoFunctionOfTheValidatorIsLongerThan120Lines) {
  EXPECT_EQ(OnePerLine(LongFunctionsUnder(testing::SourceDir() / "validators", "validators")), "");
}

std::string BodyOfLines(int lines) {
  std::string body;
  for (int i = 0; i < lines - 2; ++i) body += "  x += 1;\n";
  return body;
}

TEST(FunctionLength, AFunctionOf121LinesIsFound) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "a.cc", "namespace n {\nint Long(int x) {\n" + BodyOfLines(121) +
                                              "}\n}  // namespace n\n");
  EXPECT_EQ(OnePerLine(LongFunctionsUnder(dir.path(), "src")),
            "src/a.cc:2: 121 lines (at most 120)\n");
}

TEST(FunctionLength, AFunctionOf120LinesPasses) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "a.cc", "int Short(int x) {\n" + BodyOfLines(120) + "}\n");
  EXPECT_EQ(OnePerLine(LongFunctionsUnder(dir.path(), "src")), "");
}

TEST(FunctionLength, BracesInCommentsStringsAndRawStringsDoNotCount) {
  testing::TempDir dir;
  // The function closes on line 5; the braces in the literals and comment would keep it open.
  testing::WriteFile(dir.path() / "a.cc",
                     "void F() {\n  // }\n  auto s = \"}\"; char c = '}';\n"
                     "  auto r = R\"x(})x\";\n}\nvoid G() {\n" +
                         BodyOfLines(121) + "}\n");
  EXPECT_EQ(OnePerLine(LongFunctionsUnder(dir.path(), "src")),
            "src/a.cc:6: 121 lines (at most 120)\n");
}

TEST(FunctionLength, ALongTypeOrTableIsNotAFunction) {
  testing::TempDir dir;
  std::string rows;
  for (int i = 0; i < 130; ++i) rows += "  {" + std::to_string(i) + ", 2},\n";
  testing::WriteFile(dir.path() / "a.cc", "const int kTable[][2] = {\n" + rows +
                                              "};\nstruct S {\n" + BodyOfLines(130) + "};\n");
  EXPECT_EQ(OnePerLine(LongFunctionsUnder(dir.path(), "src")), "");
}

}  // namespace
}  // namespace trainlock
