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

// lock-sha256: SHA-256 of the lock's canonical form without [images], the table of images
// built *from* this lock (an output: including it would make every build change the identity
// that the image itself carries).
std::string LockSha256(const toml::table& lock);

}  // namespace trainlock
