// [images.<t>] of a lock: the images built from it (ref, digest, source-date-epoch and, for a cpu
// image with a prebuilt validator, validator-sha256). A manifest has none.
#include "project/lockfile_reader.h"

#include <limits>

#include "base/refs.h"
#include "base/sha256.h"
#include "base/strings.h"

namespace trainlock {

void LockfileReader::ReadImages(const toml::table& t) {
  for (auto&& [key, node] : t) {
    std::string target(key.str());
    const auto* image = node.as_table();
    if (!image) {
      diags_.Error(path_, PosOf(node), "'images." + target + "' must be a table");
      continue;
    }
    TomlFields f = Fields(*image, "images." + target);
    BuiltImage built;
    built.ref = f.String("ref", Need::kRequired).value_or("");
    if (auto digest = f.String("digest", Need::kRequired)) {
      if (std::string problem = DigestProblem(*digest); !problem.empty()) {
        f.Error(f.Pos("digest"), "'images." + target + ".digest': " + problem);
      }
      built.digest = *digest;
    }
    built.source_date_epoch =
        f.Integer("source-date-epoch", Need::kOptional, 0, std::numeric_limits<int64_t>::max());
    if (auto sha = f.String("validator-sha256", Need::kOptional)) {
      if (!IsSha256Hex(*sha)) {
        f.Error(f.Pos("validator-sha256"),
                "'images." + target + ".validator-sha256' is not 64 lower-case hex characters");
      }
      built.validator_sha256 = *sha;
    }
    f.Finish();
    if (!spec_.targets.count(target)) {
      f.Error(PosOf(key.source()), "[images." + target + "] names a target the lock does not have");
    }
    spec_.images[target] = built;
  }
}

}  // namespace trainlock
