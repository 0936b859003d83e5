// Probing what a rebuild fetches from; see rebuild_sources.h.
#include "image/rebuild_sources.h"

#include <future>
#include <set>

#include "base/failure.h"
#include "base/redact.h"
#include "base/refs.h"
#include "base/strings.h"
#include "image/container_tool.h"
#include "lock/http_client.h"
#include "lock/oci_registry.h"

namespace trainlock {

std::vector<RebuildSource> RebuildSources(const Target& target, bool base_is_local,
                                          bool tls_verify) {
  std::vector<RebuildSource> out;
  std::string error;
  const std::optional<ImageRef> base = ParseImageRef(target.base, &error);
  if (base && !base_is_local) {
    const std::string scheme = PlainHttpRegistry(target.base, tls_verify) ? "http://" : "https://";
    out.push_back({RebuildSource::Kind::kBaseRegistry, scheme + RegistryApiHost(*base) + "/v2/"});
  }
  // Each wheel names the simple root it was resolved from: the one pip fetches it from.
  std::set<std::string> indexes;
  if (target.wheels) {
    for (const PythonWheel& wheel : *target.wheels)
      if (!wheel.index.empty()) indexes.insert(wheel.index);
  }
  for (const std::string& index : indexes)
    out.push_back({RebuildSource::Kind::kPackageIndex, index});
  if (!target.debs.empty())
    out.push_back({RebuildSource::Kind::kDebianArchive, target.AptSourceUrl()});
  return out;
}

namespace {

const char* RebuildSourceName(RebuildSource::Kind kind) {
  switch (kind) {
    case RebuildSource::Kind::kBaseRegistry:
      return "the base's registry";
    case RebuildSource::Kind::kPackageIndex:
      return "the package index";
    case RebuildSource::Kind::kDebianArchive:
      return "the Debian archive";
  }
  return "";
}

}  // namespace

void RequireReachable(const std::vector<RebuildSource>& sources, long timeout_s) {
  std::vector<std::future<std::string>> probes;
  for (const RebuildSource& source : sources) {
    probes.push_back(std::async(std::launch::async, [&source, timeout_s] {
      return HttpConnectProblem(source.url, timeout_s);
    }));
  }
  std::vector<std::string> unreachable;
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string problem = probes[i].get();
    if (!problem.empty())
      unreachable.push_back(std::string(RebuildSourceName(sources[i].kind)) + " " +
                            RedactUrl(sources[i].url) + " (" + problem + ")");
  }
  if (unreachable.empty()) return;
  throw Failure("cannot reach what the rebuild fetches from: " + JoinStrings(unreachable, "; ") +
                    ". Nothing was built: run it where " +
                    (unreachable.size() == 1 ? "that host answers" : "those hosts answer"),
                kExitEnvironment);
}

}  // namespace trainlock
