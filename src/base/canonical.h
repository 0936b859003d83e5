// Canonical serialization of a TOML document and the identities built on it.
//
// The canonical form is compact JSON with keys sorted by byte order, integers in decimal,
// floats in their shortest round-trip form, dates and times as ISO 8601 strings, arrays in
// order. It depends only on the values: comments, whitespace, key order, quoting style,
// inline-vs-standard tables and number spellings (0x10 vs 16) do not change it.
#pragma once

#include <toml++/toml.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace trainlock {

// Canonical JSON of a table, leaving out the named top-level keys.
std::string CanonicalJson(const toml::table& table,
                          std::initializer_list<std::string_view> exclude_top_level = {});

// manifest-sha256: SHA-256 of the manifest's canonical form.
std::string ManifestSha256(const toml::table& manifest);

// lock-sha256, the lock's identity: SHA-256 of the lock's whole canonical form, [images]
// included, so that no field of the lock (a required check, a tolerance, a built image's
// table) can change without changing it. `image build --push` therefore changes it.
std::string LockSha256(const toml::table& lock);

// The lock's build identity: lock-sha256 of the lock without [images], the table of images
// built *from* it, and without [golden], the digests pinned from reports validated in them.
// Images, their labels and the reports validated in them carry this one: an image cannot
// contain its own digest, nor a report's key the digest pinned under it. For a lock without
// either it equals lock-sha256.
std::string LockBuildSha256(const toml::table& lock);

}  // namespace trainlock
