// [golden.<key-sha256>] of a lock: the golden digests pinned per key (lockfile.h, GoldenPin;
// written by `trainlock lock --golden`, report/golden_pin.h). A manifest has none.
#include <nlohmann/json.hpp>

#include "base/sha256.h"
#include "project/lockfile_reader.h"

namespace trainlock {

std::string GoldenKeyIdOfMembers(const std::map<std::string, std::string>& members) {
  return Sha256Hex(nlohmann::json(members).dump());
}

void LockfileReader::ReadGoldenPins(const toml::table& t) {
  for (auto&& [name, node] : t) {
    const std::string key_sha256(name.str());
    const std::string where = "golden." + key_sha256;
    const toml::table* pin_table = node.as_table();
    if (!IsSha256Hex(key_sha256) || !pin_table) {
      diags_.Error(path_, PosOf(node),
                   "'" + where + "' must be a table named by its key's 64-hex SHA-256");
      continue;
    }
    GoldenPin pin;
    for (auto&& [member, value] : *pin_table) {
      const std::optional<std::string> text = value.value<std::string>();
      if (!text) {
        diags_.Error(path_, PosOf(value),
                     "'" + where + "." + std::string(member.str()) + "' must be a string");
      } else if (member.str() == "digest") {
        pin.digest = *text;
      } else {
        pin.key[std::string(member.str())] = *text;
      }
    }
    if (!IsSha256Hex(pin.digest))
      diags_.Error(path_, PosOf(node),
                   "'" + where + ".digest' must be 64 lower-case hex characters");
    // A pin is looked up by its name: one whose members were edited would hold a report of
    // another key to this digest, or none to it.
    const std::string named = GoldenKeyIdOfMembers(pin.key);
    if (named != key_sha256)
      diags_.Error(path_, PosOf(node),
                   "'" + where + "' is not named by its key: its members' SHA-256 is " + named +
                       "; pin the report again with `trainlock lock --golden REPORT`");
    spec_.golden[key_sha256] = std::move(pin);
  }
}

}  // namespace trainlock
