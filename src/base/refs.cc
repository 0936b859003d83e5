// Image reference grammar (distribution/reference), digests and commit ids; see refs.h.
#include "base/refs.h"

#include <regex>

#include "base/sha256.h"

namespace trainlock {

std::string ImageRef::Name() const {
  return registry.empty() ? repository : registry + "/" + repository;
}

std::string ImageRef::ToString() const {
  std::string s = Name();
  if (!tag.empty()) s += ":" + tag;
  if (!digest.empty()) s += "@" + digest;
  return s;
}

static bool LooksLikeRegistry(std::string_view component) {
  return component.find('.') != std::string_view::npos ||
         component.find(':') != std::string_view::npos || component == "localhost";
}

bool IsLoopbackRegistry(std::string_view registry) {
  std::string_view host = registry;
  if (host.starts_with("[")) {
    host = host.substr(0, host.find(']') + 1);
  } else if (size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  return host == "localhost" || host.starts_with("127.") || host == "[::1]";
}

std::optional<ImageRef> ParseImageRef(std::string_view text, std::string* error) {
  auto fail = [&](std::string why) -> std::optional<ImageRef> {
    if (error) *error = std::move(why);
    return std::nullopt;
  };
  if (text.empty()) return fail("empty image reference");
  if (text.size() > 4096) return fail("image reference longer than 4096 characters");
  ImageRef ref;
  std::string rest(text);
  if (size_t at = rest.find('@'); at != std::string::npos) {
    ref.digest = rest.substr(at + 1);
    rest.resize(at);
    if (std::string why = DigestProblem(ref.digest); !why.empty()) return fail(why);
  }
  size_t slash = rest.find('/');
  if (slash != std::string::npos && LooksLikeRegistry(std::string_view(rest).substr(0, slash))) {
    ref.registry = rest.substr(0, slash);
    rest = rest.substr(slash + 1);
    // A host name or IPv4 address, or an IPv6 address in brackets ([::1]:5000).
    static const std::regex kRegistry(R"(^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\])(:[0-9]{1,5})?$)");
    if (!std::regex_match(ref.registry, kRegistry)) {
      return fail("invalid registry host '" + ref.registry + "'");
    }
  }
  if (size_t colon = rest.rfind(':'); colon != std::string::npos) {
    ref.tag = rest.substr(colon + 1);
    rest.resize(colon);
    static const std::regex kTag(R"(^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$)");
    if (!std::regex_match(ref.tag, kTag)) return fail("invalid tag '" + ref.tag + "'");
  }
  static const std::regex kRepository(
      R"(^[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*$)");
  if (rest.empty() || !std::regex_match(rest, kRepository)) {
    return fail("invalid repository name '" + rest +
                "' (lower-case letters, digits, '.', '_', '-' and '/')");
  }
  ref.repository = rest;
  return ref;
}

bool IsDigest(std::string_view s) {
  return DigestProblem(s).empty();
}

std::string DigestProblem(std::string_view s) {
  constexpr std::string_view kPrefix = "sha256:";
  if (s.substr(0, kPrefix.size()) != kPrefix) {
    return "malformed digest: expected 'sha256:' followed by 64 lower-case hex characters";
  }
  std::string_view hex = s.substr(kPrefix.size());
  bool upper = hex.find_first_of("ABCDEF") != std::string_view::npos;
  if (hex.size() == 64 && upper) {
    return "malformed digest: hex after 'sha256:' must be lower-case";
  }
  if (!IsSha256Hex(hex)) {
    return "malformed digest: expected 64 lower-case hex characters after 'sha256:', got " +
           std::to_string(hex.size()) + " characters";
  }
  return {};
}

bool IsCommitId(std::string_view s) {
  if (s.size() != 40) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace trainlock
