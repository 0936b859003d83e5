// `trainlock watch --once`: the node's state for a person (its revocation record, the last
// revoking event, the re-validations asked for) and whether the gate would refuse the node's
// report, by the gate's own rule (report/gate.h's RevocationRefusal).
#pragma once

#include <filesystem>
#include <ostream>
#include <string>

namespace trainlock {

struct NodeStateQuery {
  std::filesystem::path state_dir;
  std::string node;
  std::filesystem::path reports_dir;  // "" when not given: no report is looked at
};

// What --once found: revoked is true when the record holds a revoking event that no report
// of the node started after.
struct NodeState {
  bool revoked = false;
  std::string text;  // the lines --once prints
};

// Reads the node's record (InputError, exit 2, for one that does not read) and its report.
NodeState DescribeNodeState(const NodeStateQuery& query);

}  // namespace trainlock
