// Container image references, content digests and git commit ids: parsing and the
// "is this pinned?" rules the lock enforces.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace trainlock {

// registry/repository[:tag][@sha256:<64 hex>], following the OCI distribution grammar.
struct ImageRef {
  std::string registry;    // "" when the reference names none (docker.io implied)
  std::string repository;  // "nvidia/cuda"
  std::string tag;         // "" when absent
  std::string digest;      // "sha256:<hex>" or ""

  bool pinned() const { return !digest.empty(); }
  // registry/repository, the name without tag or digest.
  std::string Name() const;
  std::string ToString() const;
};

// Parses a reference; on failure returns nullopt and sets `error` to a short reason.
std::optional<ImageRef> ParseImageRef(std::string_view text, std::string* error);

// True for a registry host[:port] on this machine (localhost, 127.0.0.0/8, [::1]): reached over
// plain HTTP, as docker does by default.
bool IsLoopbackRegistry(std::string_view registry);

// "sha256:" followed by 64 lower-case hex characters.
bool IsDigest(std::string_view s);
// Why `s` is not a digest (for messages), or "" when it is one.
std::string DigestProblem(std::string_view s);

// A full 40-hex git commit id (lower case), as Hugging Face revisions are pinned.
bool IsCommitId(std::string_view s);

}  // namespace trainlock
