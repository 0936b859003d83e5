// What the watch does through the scheduler when a node's validity is revoked: Slurm drains
// the node (`scontrol update NodeName=N State=DRAIN Reason="trainlock: revoked <event> report
// <digest>"`), Kubernetes labels the Node trainlock.io/validated=revoked and
// trainlock.io/revoked-at=<UTC>, and taints it trainlock.io/gate=revoked:NoSchedule (the key the
// node gate's taint has, its value the gate's refusal topic). Every command runs through the
// subprocess API (argv, no shell), bounded in time.
//
// A circuit breaker stands before either: when revoking this node would leave more than
// `breaker_fraction` of the scheduler's GPU nodes revoked by trainlock within
// `breaker_window_s`, a rule gone wrong (a driver update whose new Xid the table misreads)
// would be draining the fleet: it does not revoke, and says so loudly (stderr and syslog). The
// record is written either way, so the gate still refuses the node's old report.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "watch/node_record.h"

namespace trainlock {

enum class Scheduler { kNone, kSlurm, kKubernetes };

struct RevokeOptions {
  Scheduler scheduler = Scheduler::kNone;
  std::string node;
  std::filesystem::path reports_dir;  // the node's report is REPORTS/NODE.json; "" none
  double breaker_fraction = 0.5;
  int64_t breaker_window_s = 300;
  double command_timeout_s = 30;
};

// The node's last report as the revocation names it.
struct NodeReport {
  std::filesystem::path path;
  bool present = false;
  std::string sha256;      // "" when absent
  std::string started_at;  // as the report states it ("" when it cannot be read)
};

NodeReport ReadNodeReport(const std::filesystem::path& reports_dir, const std::string& node);

struct RevokeOutcome {
  bool revoked = false;  // the scheduler was told
  bool breaker_tripped = false;
  std::string message;  // one line: what was done, or why not
};

// The Slurm drain reason: "trainlock: revoked gpu 0000:3b:00 Xid 79 (fallen off the bus) at
// <UTC> report sha256:<hex>|none".
std::string RevocationReason(const RecordedEvent& event, const NodeReport& report);

// Revokes the node through its scheduler, unless the breaker trips or the scheduler cannot
// be asked how many nodes are revoked (then nothing is revoked: said in the message).
RevokeOutcome RevokeThroughScheduler(const RevokeOptions& options, const RecordedEvent& event,
                                     int64_t now_us);

// The breaker's arithmetic: revoking one more of `gpu_nodes` with `revoked_in_window` already
// revoked passes the fraction.
bool BreakerTrips(int64_t gpu_nodes, int64_t revoked_in_window, double fraction);

}  // namespace trainlock
