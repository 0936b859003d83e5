// PEP 508 requirements and markers; see pep508.h. A small recursive-descent parser over the
// marker grammar (or / and / parentheses / comparisons), evaluated as pypa/packaging does:
// version operators compare as PEP 440 versions when both sides are versions, else as
// strings (where an ordering, unlike packaging's error, is simply false).
#include "lock/pep508.h"
#include "base/failure.h"
#include "base/strings.h"

#include <cctype>
#include <regex>
#include <stdexcept>
#include <vector>

namespace trainlock {
namespace {

const std::set<std::string>& MarkerVariables() {
  static const std::set<std::string> kVariables = {
      "python_version", "python_full_version", "os_name", "sys_platform", "platform_release",
      "platform_system", "platform_version", "platform_machine", "platform_python_implementation",
      "implementation_name", "implementation_version", "extra",
      // Legacy spellings (PEP 345) that old wheels still carry.
      "os.name", "sys.platform", "platform.version", "platform.machine",
      "platform.python_implementation", "python_implementation"};
  return kVariables;
}

struct Token {
  enum Kind { kName, kString, kOp, kOpen, kClose, kEnd } kind = kEnd;
  std::string text;
};

class MarkerParser {
 public:
  MarkerParser(std::string_view text, const MarkerEnvironment& env,
               const std::set<std::string>& extras)
      : text_(text), env_(env), extras_(extras) {
    Advance();
  }

  bool Parse() {
    const bool value = Or();
    if (token_.kind != Token::kEnd) Fail("unexpected '" + token_.text + "'");
    return value;
  }

 private:
  [[noreturn]] void Fail(const std::string& why) {
    throw Failure("marker '" + std::string(text_) + "': " + why, kExitBadInput);
  }

  void Advance() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    token_ = {};
    if (pos_ >= text_.size()) return;
    const char c = text_[pos_];
    if (c == '(' || c == ')') {
      token_ = {c == '(' ? Token::kOpen : Token::kClose, std::string(1, c)};
      ++pos_;
    } else if (c == '\'' || c == '"') {
      const size_t end = text_.find(c, pos_ + 1);
      if (end == std::string_view::npos) Fail("unterminated string");
      token_ = {Token::kString, std::string(text_.substr(pos_ + 1, end - pos_ - 1))};
      pos_ = end + 1;
    } else if (std::string_view("<>=!~").find(c) != std::string_view::npos) {
      size_t end = pos_;
      while (end < text_.size() &&
             std::string_view("<>=!~").find(text_[end]) != std::string_view::npos)
        ++end;
      token_ = {Token::kOp, std::string(text_.substr(pos_, end - pos_))};
      pos_ = end;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = pos_;
      while (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) ||
                                    text_[end] == '_' || text_[end] == '.'))
        ++end;
      token_ = {Token::kName, std::string(text_.substr(pos_, end - pos_))};
      pos_ = end;
    } else {
      Fail(std::string("unexpected character '") + c + "'");
    }
  }

  bool Or() {
    bool value = And();
    while (token_.kind == Token::kName && token_.text == "or") {
      Advance();
      value = And() || value;
    }
    return value;
  }

  bool And() {
    bool value = Atom();
    while (token_.kind == Token::kName && token_.text == "and") {
      Advance();
      value = Atom() && value;
    }
    return value;
  }

  bool Atom() {
    if (token_.kind == Token::kOpen) {
      Advance();
      const bool value = Or();
      if (token_.kind != Token::kClose) Fail("missing ')'");
      Advance();
      return value;
    }
    const Token lhs = Value();
    std::string op;
    if (token_.kind == Token::kOp) {
      op = token_.text;
      Advance();
    } else if (token_.kind == Token::kName && token_.text == "in") {
      op = "in";
      Advance();
    } else if (token_.kind == Token::kName && token_.text == "not") {
      Advance();
      if (token_.kind != Token::kName || token_.text != "in") Fail("expected 'in' after 'not'");
      op = "not in";
      Advance();
    } else {
      Fail("expected a comparison operator");
    }
    const Token rhs = Value();
    return Compare(lhs, op, rhs);
  }

  Token Value() {
    if (token_.kind == Token::kString) {
      Token t = token_;
      Advance();
      return t;
    }
    if (token_.kind == Token::kName && MarkerVariables().count(token_.text)) {
      Token t = token_;
      Advance();
      return t;
    }
    Fail(token_.kind == Token::kEnd ? "unexpected end"
                                    : "unknown marker variable '" + token_.text + "'");
  }

  std::string Resolve(const Token& t) {
    if (t.kind == Token::kString) return t.text;
    std::string name = t.text;
    for (char& c : name) c = c == '.' ? '_' : c;
    if (name == "python_implementation") name = "platform_python_implementation";
    auto it = env_.find(name);
    return it == env_.end() ? "" : it->second;
  }

  bool Compare(const Token& lhs, const std::string& op, const Token& rhs) {
    const bool lhs_extra = lhs.kind == Token::kName && lhs.text == "extra";
    const bool rhs_extra = rhs.kind == Token::kName && rhs.text == "extra";
    if (lhs_extra || rhs_extra) {
      const bool named = extras_.count(NormalizePackageName(lhs_extra ? rhs.text : lhs.text)) > 0;
      if (op == "==") return named;
      if (op == "!=") return !named;
      Fail("'extra' compares only with == and !=");
    }
    const std::string a = Resolve(lhs), b = Resolve(rhs);
    if (op != "in" && op != "not in") {
      std::string error;
      auto spec = PySpecifierSet::Parse(op + b, &error);
      auto version = ParsePyVersion(a);
      if (spec && version) return spec->Contains(*version);
    }
    if (op == "==" || op == "===") return a == b;
    if (op == "!=") return a != b;
    if (op == "in") return b.find(a) != std::string::npos;
    if (op == "not in") return b.find(a) == std::string::npos;
    return false;  // an ordering of values that are not versions holds for none
  }

  std::string_view text_;
  const MarkerEnvironment& env_;
  const std::set<std::string>& extras_;
  size_t pos_ = 0;
  Token token_;
};

}  // namespace

std::optional<PyRequirement> ParsePyRequirement(std::string_view text, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<PyRequirement> {
    if (error) *error = "'" + std::string(text) + "' is not a requirement: " + why;
    return std::nullopt;
  };
  if (text.size() > 4096) return fail("too long");
  PyRequirement r;
  r.text = TrimBlanks(text);
  std::string body = r.text;
  if (const size_t semi = body.find(';'); semi != std::string::npos) {
    r.marker = TrimBlanks(std::string_view(body).substr(semi + 1));
    body = TrimBlanks(std::string_view(body).substr(0, semi));
    if (r.marker.empty()) return fail("an empty marker");
  }
  static const std::regex kHead(
      R"(^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(\[[^\]]*\])?\s*(.*)$)");
  std::smatch m;
  if (!std::regex_match(body, m, kHead)) return fail("no package name");
  r.name = NormalizePackageName(m[1].str());
  if (m[2].matched) {
    const std::string list = m[2].str().substr(1, m[2].length() - 2);
    size_t start = 0;
    while (start <= list.size()) {
      const size_t comma = list.find(',', start);
      const std::string extra = TrimBlanks(std::string_view(list).substr(start, comma - start));
      if (!extra.empty()) r.extras.insert(NormalizePackageName(extra));
      start = comma == std::string::npos ? list.size() + 1 : comma + 1;
    }
  }
  std::string rest = TrimBlanks(m[3].str());
  if (!rest.empty() && rest[0] == '@') {
    r.url = TrimBlanks(std::string_view(rest).substr(1));
    if (r.url.empty()) return fail("an empty URL");
  } else {
    if (!rest.empty() && rest.front() == '(') {
      if (rest.back() != ')') return fail("missing ')'");
      rest = rest.substr(1, rest.size() - 2);
    }
    std::string why;
    auto spec = PySpecifierSet::Parse(rest, &why);
    if (!spec) return fail(why);
    r.specifier = *spec;
  }
  if (!r.marker.empty()) {
    try {
      EvaluateMarker(r.marker, {}, {});
    } catch (const Failure& e) {
      return fail(e.what());
    }
  }
  return r;
}

bool EvaluateMarker(std::string_view marker, const MarkerEnvironment& env,
                    const std::set<std::string>& extras) {
  if (TrimBlanks(marker).empty()) return true;
  return MarkerParser(marker, env, extras).Parse();
}

}  // namespace trainlock
