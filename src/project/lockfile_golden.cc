// [golden.<key-sha256>] of a lock: the golden digests pinned per key (lockfile.h, GoldenPin;
// written by `trainlock lock --golden`, report/golden_pin.h). A manifest has none.
#include "base/sha256.h"
#include "project/lockfile_reader.h"

namespace trainlock {

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
    spec_.golden[key_sha256] = std::move(pin);
  }
}

}  // namespace trainlock
