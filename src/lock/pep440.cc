// PEP 440 versions and specifiers; see pep440.h. The ordering and the operators follow the
// specification and the reference implementation (pypa/packaging), which pip and uv share.
#include "lock/pep440.h"
#include "base/strings.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace trainlock {
namespace {

// At most 18 digits, so that every number fits an int64_t.
std::optional<int64_t> ReleaseNumber(const std::string& digits) {
  if (digits.empty()) return 0;
  if (digits.size() > 18) return std::nullopt;
  return std::stoll(digits);
}

int Sign(int64_t a, int64_t b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

// Release segments compare as if padded with zeros.
int CompareRelease(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < a.size() ? a[i] : 0, y = i < b.size() ? b[i] : 0;
    if (x != y) return Sign(x, y);
  }
  return 0;
}

// Local segments: numeric ones compare as numbers and sort after alphanumeric ones; a
// version with more segments sorts after one that is its prefix.
int CompareLocal(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return a.empty() == b.empty() ? 0 : a.empty() ? -1 : 1;
  auto split = [](const std::string& s) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t dot; (dot = s.find('.', start)) != std::string::npos; start = dot + 1)
      parts.push_back(s.substr(start, dot - start));
    parts.push_back(s.substr(start));
    return parts;
  };
  const auto x = split(a), y = split(b);
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    const bool xn = std::all_of(x[i].begin(), x[i].end(), ::isdigit);
    const bool yn = std::all_of(y[i].begin(), y[i].end(), ::isdigit);
    if (xn != yn) return xn ? 1 : -1;
    if (xn) {
      const std::string xs = x[i].substr(std::min(x[i].find_first_not_of('0'), x[i].size()));
      const std::string ys = y[i].substr(std::min(y[i].find_first_not_of('0'), y[i].size()));
      if (xs.size() != ys.size()) return xs.size() < ys.size() ? -1 : 1;
      if (xs != ys) return xs < ys ? -1 : 1;
    } else if (x[i] != y[i]) {
      return x[i] < y[i] ? -1 : 1;
    }
  }
  return Sign(static_cast<int64_t>(x.size()), static_cast<int64_t>(y.size()));
}

// The pre-release key: a dev release of a final version sorts before its pre-releases, a
// final version after them.
std::pair<int, int64_t> PreKey(const PyVersion& v) {
  if (v.pre_kind == 0)
    return v.post || !v.dev ? std::pair{3, int64_t{0}} : std::pair{-1, int64_t{0}};
  return {v.pre_kind == 'a' ? 0 : v.pre_kind == 'b' ? 1 : 2, v.pre};
}

bool PrefixMatches(const PyVersion& candidate, const PyVersion& prefix) {
  if (candidate.epoch != prefix.epoch) return false;
  for (size_t i = 0; i < prefix.release.size(); ++i) {
    const int64_t have = i < candidate.release.size() ? candidate.release[i] : 0;
    if (have != prefix.release[i]) return false;
  }
  return true;
}

}  // namespace

PyVersion PyVersion::Public() const {
  PyVersion v = *this;
  v.local.clear();
  return v;
}

PyVersion PyVersion::Base() const {
  PyVersion v;
  v.epoch = epoch;
  v.release = release;
  return v;
}

std::string PyVersion::ToString() const {
  std::string out = epoch ? std::to_string(epoch) + "!" : "";
  for (size_t i = 0; i < release.size(); ++i) out += (i ? "." : "") + std::to_string(release[i]);
  if (pre_kind)
    out += (pre_kind == 'c' ? std::string("rc") : std::string(1, pre_kind)) + std::to_string(pre);
  if (post) out += ".post" + std::to_string(*post);
  if (dev) out += ".dev" + std::to_string(*dev);
  if (!local.empty()) out += "+" + local;
  return out;
}

std::optional<PyVersion> ParsePyVersion(std::string_view text) {
  if (text.size() > 128) return std::nullopt;
  static const std::regex kVersion(R"(^v?(?:([0-9]+)!)?([0-9]+(?:\.[0-9]+)*))"
                                   R"((?:[-_.]?(a|b|c|rc|alpha|beta|pre|preview)[-_.]?([0-9]+)?)?)"
                                   R"((?:-([0-9]+)|[-_.]?(post|rev|r)[-_.]?([0-9]+)?)?)"
                                   R"((?:[-_.]?(dev)[-_.]?([0-9]+)?)?)"
                                   R"((?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?$)");
  const std::string lower = AsciiLower(TrimBlanks(text));
  std::smatch m;
  if (!std::regex_match(lower, m, kVersion)) return std::nullopt;
  PyVersion v;
  auto epoch = ReleaseNumber(m[1].str());
  if (!epoch) return std::nullopt;
  v.epoch = *epoch;
  const std::string release = m[2].str();
  size_t start = 0;
  while (true) {
    const size_t dot = release.find('.', start);
    auto n = ReleaseNumber(release.substr(start, dot - start));
    if (!n) return std::nullopt;
    v.release.push_back(*n);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (m[3].matched) {
    const std::string kind = m[3].str();
    v.pre_kind = kind == "a" || kind == "alpha" ? 'a' : kind == "b" || kind == "beta" ? 'b' : 'c';
    auto n = ReleaseNumber(m[4].str());
    if (!n) return std::nullopt;
    v.pre = *n;
  }
  if (m[5].matched || m[6].matched) {
    auto n = ReleaseNumber(m[5].matched ? m[5].str() : m[7].str());
    if (!n) return std::nullopt;
    v.post = *n;
  }
  if (m[8].matched) {
    auto n = ReleaseNumber(m[9].str());
    if (!n) return std::nullopt;
    v.dev = *n;
  }
  v.local = m[10].str();
  std::replace_if(
      v.local.begin(), v.local.end(), [](char c) { return c == '-' || c == '_'; }, '.');
  return v;
}

int ComparePyVersions(const PyVersion& a, const PyVersion& b) {
  if (a.epoch != b.epoch) return Sign(a.epoch, b.epoch);
  if (int c = CompareRelease(a.release, b.release)) return c;
  const auto pa = PreKey(a), pb = PreKey(b);
  if (pa != pb) return pa < pb ? -1 : 1;
  const int64_t post_a = a.post ? *a.post : -1, post_b = b.post ? *b.post : -1;
  if (post_a != post_b) return Sign(post_a, post_b);
  const int64_t dev_a = a.dev ? *a.dev : INT64_MAX, dev_b = b.dev ? *b.dev : INT64_MAX;
  if (dev_a != dev_b) return Sign(dev_a, dev_b);
  return CompareLocal(a.local, b.local);
}

std::optional<PySpecifierSet> PySpecifierSet::Parse(std::string_view text, std::string* error) {
  PySpecifierSet set;
  std::string rest = TrimBlanks(text);
  if (rest.empty()) return set;
  size_t start = 0;
  while (start <= rest.size()) {
    const size_t comma = rest.find(',', start);
    const std::string item = TrimBlanks(
        std::string_view(rest).substr(start, comma == std::string::npos ? comma : comma - start));
    start = comma == std::string::npos ? rest.size() + 1 : comma + 1;
    PySpecifier spec;
    for (const char* op : {"===", "~=", "==", "!=", "<=", ">=", "<", ">"}) {
      if (item.rfind(op, 0) == 0) {
        spec.op = op;
        break;
      }
    }
    spec.version = TrimBlanks(std::string_view(item).substr(spec.op.size()));
    bool valid = !spec.op.empty() && !spec.version.empty();
    if (valid && spec.op != "===") {
      const bool prefix = spec.version.size() > 2 && spec.version.ends_with(".*");
      const std::string v = prefix ? spec.version.substr(0, spec.version.size() - 2) : spec.version;
      auto parsed = ParsePyVersion(v);
      valid =
          parsed && (!prefix || ((spec.op == "==" || spec.op == "!=") && parsed->local.empty()));
      if (valid && spec.op == "~=") valid = parsed->release.size() >= 2 && parsed->local.empty();
    }
    if (!valid) {
      if (error) *error = "'" + item + "' is not a version specifier";
      return std::nullopt;
    }
    set.specs_.push_back(spec);
  }
  return set;
}

bool PySpecifierSet::Contains(const PyVersion& v) const {
  for (const PySpecifier& s : specs_) {
    if (s.op == "===") {
      if (AsciiLower(v.ToString()) != AsciiLower(s.version)) return false;
      continue;
    }
    const bool prefix = s.version.ends_with(".*");
    const PyVersion spec =
        *ParsePyVersion(prefix ? s.version.substr(0, s.version.size() - 2) : s.version);
    bool ok = true;
    if (s.op == "==" || s.op == "!=") {
      bool equal = prefix ? PrefixMatches(v.Public(), spec)
                          : ComparePyVersions(spec.local.empty() ? v.Public() : v, spec) == 0;
      ok = s.op == "==" ? equal : !equal;
    } else if (s.op == "<=") {
      ok = ComparePyVersions(v.Public(), spec) <= 0;
    } else if (s.op == ">=") {
      ok = ComparePyVersions(v.Public(), spec) >= 0;
    } else if (s.op == "<") {
      ok = ComparePyVersions(v, spec) < 0 && !(!spec.IsPreRelease() && v.IsPreRelease() &&
                                               ComparePyVersions(v.Base(), spec.Base()) == 0);
    } else if (s.op == ">") {
      const bool same_base = ComparePyVersions(v.Base(), spec.Base()) == 0;
      ok = ComparePyVersions(v, spec) > 0 && !(!spec.post && v.post && same_base) &&
           !(!v.local.empty() && same_base);
    } else if (s.op == "~=") {
      PyVersion head = spec.Base();
      head.release.pop_back();
      ok = ComparePyVersions(v.Public(), spec) >= 0 && PrefixMatches(v.Public(), head);
    }
    if (!ok) return false;
  }
  return true;
}

bool PySpecifierSet::AllowsPreReleases() const {
  for (const PySpecifier& s : specs_) {
    if (s.op == "!=" || s.version.ends_with(".*")) continue;
    auto v = ParsePyVersion(s.version);
    if (v && v->IsPreRelease()) return true;
  }
  return false;
}

std::string PySpecifierSet::ToString() const {
  std::string out;
  for (const PySpecifier& s : specs_) out += (out.empty() ? "" : ",") + s.op + s.version;
  return out;
}

}  // namespace trainlock
