// Credentials are never printed. A URL's userinfo ("https://user:token@host/...") and the
// same in an image reference ("user:token@registry/repo:tag") become "***" in every message
// trainlock prints: diagnostics, failures, the network layer's errors (libcurl, registries,
// the Hub) and the URLs they name, text shown on a terminal or in markup (terminal_text.h),
// --json output (json_file.h) and every string of a report (an ext.command's output, an
// engine's stderr tail and error events). The one place that knows what a credential looks
// like: redact.cc's table kSecretPatterns lists every form of secret masked in printed text.
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
// may print are masked too: the value (8 characters or more) of every environment variable of
// this process whose name says it is a secret, and every form of kSecretPatterns: bearer
// credentials ("bearer", any case, then blanks), Authorization / X-Api-Key / Private-Token
// header values (a scheme word such as "Basic" or "Token" kept), Hub, GitHub, GitLab and Slack
// tokens by their prefixes ("hf_", "ghp_", "github_pat_", "glpat-", ...), and the value of
// NAME=VALUE whose NAME says it is a secret (DB_PASSWORD, MY_AUTH, SLACK_WEBHOOK_URL,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, "?token=" and "&access_token=" in a URL; not
// max_tokens, pad_token_id, missing_keys or the shell's PWD). The result is a fixed point:
// redacting it again changes nothing.
std::string RedactCredentials(std::string_view text);

}  // namespace trainlock
