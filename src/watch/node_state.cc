// The node's state for `trainlock watch --once`; see node_state.h.
#include "watch/node_state.h"

#include "report/gate.h"
#include "watch/node_record.h"
#include "watch/revoke_action.h"

namespace trainlock {
namespace {

// Whether the node's report clears the revocation, in the gate's words.
std::string ReportLine(const NodeStateQuery& query, const RecordedEvent& event,
                       const std::string& record_path, bool& cleared) {
  cleared = false;
  if (query.reports_dir.empty()) return "  report: none looked at (no --reports-dir)\n";
  const NodeReport report = ReadNodeReport(query.reports_dir, query.node);
  if (!report.present) return "  report: no readable report " + report.path.string() + "\n";
  const GateRevocation revocation{event.at_us / 1000000, RecordedEventText(event),
                                  event.kernel_line, record_path};
  const std::string refusal = RevocationRefusal(revocation, report.started_at);
  cleared = refusal.empty();
  return "  report: " + report.path.string() + " (started " + report.started_at + "): " +
         (cleared ? std::string("started after the event, the gate takes it")
                  : "the gate refuses it: " + refusal) +
         "\n";
}

}  // namespace

NodeState DescribeNodeState(const NodeStateQuery& query) {
  NodeState state;
  const std::string record_path = NodeRecordPath(query.state_dir, query.node).string();
  const std::optional<NodeRecord> record = ReadNodeRecord(query.state_dir, query.node);
  if (!record) {
    state.text = "node " + query.node + ": not revoked (no record " + record_path + ")\n";
    return state;
  }
  std::string requests;
  for (const RecordedEvent& e : record->pending)
    requests += "  re-validation asked: " + RecordedEventText(e) + "\n";
  if (!record->revoked) {
    state.text = "node " + query.node + ": not revoked (" + record_path + ")\n" + requests;
    return state;
  }
  const RecordedEvent& event = *record->revoked;
  bool cleared = false;
  const std::string report = ReportLine(query, event, record_path, cleared);
  state.revoked = !cleared;
  state.text = "node " + query.node + ": " +
               (cleared ? "revoked, then validated again" : "revoked") + ": " +
               RecordedEventText(event) + "\n  kernel: " + event.kernel_line +
               "\n  record: " + record_path + "\n" + requests + report +
               (cleared ? ""
                        : "  a report started before " + UtcMicrosText(event.at_us) +
                              " is refused: only a new signed pass restores the node\n");
  return state;
}

}  // namespace trainlock
