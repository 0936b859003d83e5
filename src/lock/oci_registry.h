// Resolving an image reference against an OCI distribution registry (the v2 API): a tag to the
// digest of its manifest or index, the body fetched and its SHA-256 checked against the
// registry's Docker-Content-Digest and any digest the reference pins, and for an index the
// manifest digest of every platform. Anonymous bearer tokens (401 + WWW-Authenticate), basic
// credentials from the environment or ~/.docker/config.json, plain HTTP for loopback hosts.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "base/failure.h"
#include "base/refs.h"

namespace trainlock {

struct RegistryOptions {
  long timeout_s = 30;
  int attempts = 4;
  // Where credentials come from: TRAINLOCK_REGISTRY_USERNAME / _PASSWORD, else the "auths"
  // of this docker config file (default ~/.docker/config.json; "" to skip).
  std::filesystem::path docker_config = DefaultDockerConfig();
  static std::filesystem::path DefaultDockerConfig();
};

struct ResolvedImage {
  std::string digest;      // "sha256:..." of the manifest or index the reference names
  std::string media_type;  // of that body
  std::map<std::string, std::string> platforms;  // index only: "linux/amd64" -> digest
};

// Throws a Failure (failure.h) saying why the reference could not be resolved: exit 3 when
// the registry could not answer (unreachable, 401, 404, server errors), 1 when it answered
// with content that does not match its digest (tampering or corruption).
ResolvedImage ResolveImage(const ImageRef& ref, const RegistryOptions& options = {});

// The API host and repository a reference addresses: docker.io (or no registry) is
// registry-1.docker.io, and a one-component Docker Hub name gets "library/".
std::string RegistryApiHost(const ImageRef& ref);
std::string RegistryRepository(const ImageRef& ref);

}  // namespace trainlock
