// The Hugging Face Hub's revision answer ({"sha": commit, "siblings": [{"rfilename", "size",
// "lfs": {"sha256", "size"}}]}), read without trusting it: parsed with the limits of
// base/json_limits.h and checked member by member, so that a hostile or broken endpoint gets
// a refusal that says what is wrong, never a library exception, and never puts a malformed
// hash or a path that climbs out of the model directory into the lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace trainlock {

// One file of the revision.
struct HubSibling {
  std::string lfs_sha256;        // 64 lower-case hex for LFS files, "" for files kept in git
  std::optional<uint64_t> size;  // the LFS size, else the file's listed size, when given
};

struct HubRevisionAnswer {
  std::string commit;                          // 40 hex
  std::map<std::string, HubSibling> siblings;  // by rfilename
};

// Reads the answer. Sibling entries that are not objects with a string rfilename are skipped,
// as the Hub's own clients do. nullopt, with *problem saying why, when the body is not a JSON
// object within the limits, has no 40-hex "sha", its siblings are not an array, or a file
// has a path that is absolute or climbs through '..', is listed twice, has an LFS sha256
// that is not 64 lower-case hex, or a size that is not a non-negative integer.
std::optional<HubRevisionAnswer> ReadHubRevisionAnswer(std::string_view body, std::string* problem);

}  // namespace trainlock
