// Credentials are never printed. A URL's userinfo ("https://user:token@host/...") and the
// same in an image reference ("user:token@registry/repo:tag") become "***" in every message
// trainlock prints: diagnostics, failures, the network layer's errors (libcurl, registries,
// the Hub) and the URLs they name. The one place that knows what a credential looks like.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace trainlock {

// `url` with its userinfo, if any, replaced: "http://***@host:port/path".
std::string RedactUrl(std::string_view url);

// `text` with the userinfo of every URL and image reference in it replaced by "***". Image
// references with tags and digests ("ubuntu:22.04@sha256:...", "reg/repo@sha256:...") are
// left alone: their '@' comes after the repository, not before the registry.
std::string RedactCredentials(std::string_view text);

// Every string value in `value` (at any depth; keys are names, not data) redacted as above:
// a report carries a command's argv and output tail, and it is shared and kept.
void RedactJsonStrings(nlohmann::json& value);

}  // namespace trainlock
