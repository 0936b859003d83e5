// The JSON that resolving an image reads from outside, read without trusting it: the
// registry's manifest or index body, a token service's answer and the credentials of a
// docker config.json. Each is parsed with the limits of base/json_limits.h and checked member
// by member, so that a hostile registry gets a refusal, never a library exception, and never
// puts a malformed digest into the lock or a line break into a request header.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace trainlock {

// What a manifest or index body says.
struct ManifestAnswer {
  std::string media_type;                        // its mediaType, else `content_type`
  std::map<std::string, std::string> platforms;  // index only: "linux/amd64" -> digest
};

// Reads a manifest or index body. Index entries without a platform, and attestation entries
// ("unknown/unknown"), are skipped. nullopt, with *problem saying why, when the body is not a
// JSON object within the limits, its mediaType is not a string, or an entry with a platform
// has a digest that is not sha256:<64 hex> or an os, architecture or variant that is not a
// plain name.
std::optional<ManifestAnswer> ReadManifestAnswer(std::string_view body,
                                                 const std::string& content_type,
                                                 std::string* problem);

// The bearer token of a token service's answer ({"token": ...}, else {"access_token": ...});
// "" when there is none usable: not JSON, not a string, or holding a byte an HTTP header
// cannot carry.
std::string BearerTokenOf(std::string_view body);

// "user:password" for registry `host` from the "auths" of a docker config.json's text
// ("https://host/v1/", "host", and docker.io's aliases for registry-1.docker.io), or "" when
// none is usable.
std::string DockerConfigCredentials(std::string_view config_text, const std::string& host);

}  // namespace trainlock
