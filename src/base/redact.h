// Credentials are never printed. A URL's userinfo ("https://user:token@host/...") and the
// same in an image reference ("user:token@registry/repo:tag") become "***" in every message
// trainlock prints: diagnostics, failures, the network layer's errors (libcurl, registries,
// the Hub) and the URLs they name, text shown on a terminal or in markup (terminal_text.h) and
// every string of a report. The one place that knows what a credential looks like.
#pragma once

#include <string>
#include <string_view>

namespace trainlock {

// `url` with its userinfo, if any, replaced: "http://***@host:port/path".
std::string RedactUrl(std::string_view url);

// `text` with the userinfo of every URL and image reference in it replaced by "***" (for a
// reference without a scheme, only "user:password@"; "name@commit/" is a name). Image
// references with tags and digests ("ubuntu:22.04@sha256:...", "reg/repo@sha256:...") are
// left alone: their '@' comes after the repository, not before the registry. Secrets a program
// may print are masked too: the value of every environment variable of this process whose name
// holds TOKEN, SECRET, PASSWORD, PASSWD, API_KEY, APIKEY, ACCESS_KEY, PRIVATE_KEY or CREDENTIAL
// (8 characters or more), the credential after "Bearer " or "Authorization: Basic ", and
// Hugging Face tokens ("hf_" and 30 or more letters and digits).
std::string RedactCredentials(std::string_view text);

}  // namespace trainlock
