// Finding rendering; see finding.h.
#include "compat/finding.h"

namespace trainlock {

std::string Finding::Format() const {
  std::string out = path;
  if (pos.known()) out += ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column);
  out += ": finding [" + id + "]: " + message;
  if (!remedy.empty()) out += "; remedy: " + remedy;
  return out;
}

nlohmann::json Finding::ToJson() const {
  nlohmann::json j = {{"id", id}, {"file", path}, {"message", message}, {"remedy", remedy}};
  j["line"] = pos.known() ? nlohmann::json(pos.line) : nlohmann::json(nullptr);
  j["column"] = pos.known() ? nlohmann::json(pos.column) : nlohmann::json(nullptr);
  return j;
}

}  // namespace trainlock
