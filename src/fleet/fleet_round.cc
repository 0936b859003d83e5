// Which reports count in a fleet's round (fleet_round.h): the one rule `fleet summarize` applies
// to every report of the directory.
#include "fleet/fleet_round.h"

#include <algorithm>

#include "base/time_text.h"
#include "report/report_signing.h"

namespace trainlock {

bool FleetRound::Names(const std::string& node) const {
  return nodes.empty() || std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

int FleetRound::Expected() const {
  return std::max(expected_nodes, static_cast<int>(nodes.size()));
}

std::string UntrustedStartReason(const FleetRound& round, const std::string& report_text,
                                 bool is_signed) {
  if (round.public_key_pem) {
    if (!is_signed && round.allow_unsigned) return "";
    return VerifyReportSignature(report_text, *round.public_key_pem);
  }
  if (!round.since_s || round.allow_unsigned) return "";
  return "signature: no key to verify the start time it states (give --key, or --allow-unsigned "
         "to take unsigned reports at their word)";
}

std::string NotInRound(const FleetRound& round, const std::string& node,
                       const std::string& started_at, const std::string& untrusted) {
  if (!round.Names(node)) return "not in this round: the round does not name node " + node;
  if (!untrusted.empty()) return "not counted: its start time is not trusted: " + untrusted;
  if (!round.since_s) return "";
  if (started_at.empty()) return "not counted: it states no start time";
  const std::optional<int64_t> started = ParseRfc3339(started_at);
  if (!started) return "not counted: its started_at '" + started_at + "' is not RFC 3339";
  if (*started < *round.since_s)
    return "not in this round: started " + started_at + ", before the round began at " +
           round.since;
  return "";
}

}  // namespace trainlock
