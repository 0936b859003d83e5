// Dotted version parsing and comparison; see version.h.
#include "base/version.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace trainlock {

int Version::Compare(const Version& other) const {
  size_t n = std::max(parts.size(), other.parts.size());
  for (size_t i = 0; i < n; ++i) {
    int a = i < parts.size() ? parts[i] : 0;
    int b = i < other.parts.size() ? other.parts[i] : 0;
    if (a != b) return a < b ? -1 : 1;
  }
  return 0;
}

bool Version::MatchesPin(const Version& pin) const {
  return pin.parts.size() <= parts.size() &&
         std::equal(pin.parts.begin(), pin.parts.end(), parts.begin());
}

std::string Version::ToString() const {
  if (!text.empty()) return text;
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) s += ".";
    s += std::to_string(parts[i]);
  }
  if (!local.empty()) s += "+" + local;
  return s;
}

std::optional<Version> ParseVersion(std::string_view text) {
  Version v;
  v.text = std::string(text);
  if (size_t plus = text.find('+'); plus != std::string_view::npos) {
    v.local = std::string(text.substr(plus + 1));
    text = text.substr(0, plus);
    if (v.local.empty()) return std::nullopt;
    for (char c : v.local) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.') return std::nullopt;
    }
  }
  while (true) {
    size_t dot = text.find('.');
    std::string_view part = text.substr(0, dot);
    if (part.empty() || part.size() > 9) return std::nullopt;
    int value = 0;
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (ec != std::errc() || ptr != part.data() + part.size()) return std::nullopt;
    v.parts.push_back(value);
    if (v.parts.size() > 4) return std::nullopt;
    if (dot == std::string_view::npos) break;
    text = text.substr(dot + 1);
  }
  return v;
}

std::string TorchRelease(const std::string& version) {
  size_t end = 0;
  while (end < version.size() &&
         (std::isdigit(static_cast<unsigned char>(version[end])) || version[end] == '.'))
    ++end;
  std::string release = version.substr(0, end);
  while (!release.empty() && release.back() == '.') release.pop_back();
  return release;
}

}  // namespace trainlock
