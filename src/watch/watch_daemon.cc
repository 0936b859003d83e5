// The long-running watch; see watch_daemon.h.
#include "watch/watch_daemon.h"

#include <signal.h>
#include <syslog.h>
#include <time.h>

#include <chrono>

#include "base/terminal_text.h"
#include "report/gate.h"
#include "watch/kmsg_follower.h"
#include "watch/replay.h"

namespace trainlock {
namespace {

// How long one poll waits: the longest a stop signal waits to be seen.
constexpr std::chrono::milliseconds kWatchPollTimeout{250};

volatile sig_atomic_t g_watch_stop_signal = 0;

void OnWatchStopSignal(int signal) {
  g_watch_stop_signal = signal;
}

// SIGTERM, SIGINT and SIGHUP end the watch between two polls (the record is only ever
// replaced whole, by rename); the previous actions come back with the scope.
class WatchStopSignals {
 public:
  WatchStopSignals() {
    g_watch_stop_signal = 0;
    struct sigaction action {};
    action.sa_handler = OnWatchStopSignal;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &action, &previous_[i]);
  }
  ~WatchStopSignals() {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &previous_[i], nullptr);
  }
  WatchStopSignals(const WatchStopSignals&) = delete;
  WatchStopSignals& operator=(const WatchStopSignals&) = delete;

 private:
  static constexpr int kSignals[3] = {SIGTERM, SIGINT, SIGHUP};
  struct sigaction previous_[3] = {};
};

int64_t ClockMicros(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return int64_t{now.tv_sec} * 1000000 + now.tv_nsec / 1000;
}

RecordedEvent RecordedEventOf(const Decision& d, const KernelRecord& record) {
  RecordedEvent event;
  event.at_us = EventUtcMicros(d.time_us);
  event.device = d.event.device == DeviceKind::kGpu ? "gpu" : "nvswitch";
  event.pci = d.event.pci;
  event.kind = d.event.sxid ? "sxid" : "xid";
  event.code = d.event.code;
  event.name = d.name;
  event.kernel_line = record.message.substr(0, kMaxKernelLineBytes);
  return event;
}

bool SameEvent(const RecordedEvent& a, const RecordedEvent& b) {
  const int64_t apart = a.at_us > b.at_us ? a.at_us - b.at_us : b.at_us - a.at_us;
  return apart <= kSameEventSlackUs && a.device == b.device && a.pci == b.pci && a.kind == b.kind &&
         a.code == b.code;
}

// One watch: the judge, the record and what each decision does.
class NodeWatch {
 public:
  NodeWatch(const WatchDaemonOptions& options, const GpuEventTable& table, std::ostream& out,
            std::ostream& err)
      : options_(options), judge_(table), out_(out), err_(err) {
    const std::string& node = options.revoke.node;
    record_ = ReadNodeRecord(options.state_dir, node).value_or(NodeRecord{node, {}, {}});
  }

  void Take(const KernelRecord& record) {
    std::optional<Decision> decision = judge_.Take(record, counts_);
    if (!decision) return;
    out_ << Prefix() << TerminalLine(DecisionLine(*decision));
    const RecordedEvent event = RecordedEventOf(*decision, record);
    if (decision->event_class == EventClass::kRevoke) {
      Revoke(event);
    } else if (decision->event_class == EventClass::kRevalidate) {
      Request(event);
    } else {
      out_ << std::endl;
    }
  }

  // The replay's summary line, over what the follower read.
  std::string Summary(const KernelLogCounts& log) const {
    ReplayResult result = counts_;
    result.log = log;
    result.suppressed = judge_.suppressed();
    return ReplaySummary(result);
  }

 private:
  std::string Prefix() const { return "trainlock watch: " + options_.revoke.node + ": "; }
  std::string RecordPath() const {
    return NodeRecordPath(options_.state_dir, options_.revoke.node).string();
  }

  void Revoke(const RecordedEvent& event) {
    if (IsRecordedAgain(record_, event)) {
      out_ << ": already in " << TerminalLine(RecordPath()) << std::endl;
      return;
    }
    record_.revoked = event;
    WriteNodeRecord(options_.state_dir, record_);
    out_ << ": recorded in " << TerminalLine(RecordPath()) << std::endl;
    // The gate's rule: a report that started after the event (an old event read again from the
    // kernel's buffer, its record lost) already clears it, and nothing is drained for it.
    const NodeReport report = ReadNodeReport(options_.revoke.reports_dir, options_.revoke.node);
    const GateRevocation revocation{event.at_us / 1000000, RecordedEventText(event),
                                    event.kernel_line, RecordPath()};
    if (report.present && RevocationRefusal(revocation, report.started_at).empty()) {
      out_ << Prefix() << "the node's report " << TerminalLine(report.path.string())
           << " started after the event: nothing to revoke" << std::endl;
      return;
    }
    const RevokeOutcome outcome =
        RevokeThroughScheduler(options_.revoke, event, ClockMicros(CLOCK_REALTIME));
    if (outcome.message.empty()) return;
    out_ << Prefix() << TerminalLine(outcome.message) << std::endl;
    if (outcome.breaker_tripped) {
      err_ << Prefix() << TerminalLine(outcome.message) << std::endl;
      const std::string line = Prefix() + outcome.message;
      syslog(LOG_USER | LOG_CRIT, "%s", line.c_str());
    }
  }

  void Request(const RecordedEvent& event) {
    for (const RecordedEvent& pending : record_.pending) {
      if (SameEvent(pending, event)) {
        out_ << ": already requested" << std::endl;
        return;
      }
    }
    record_.pending.push_back(event);
    if (record_.pending.size() > kMaxPendingRequests)
      record_.pending.erase(record_.pending.begin());
    WriteNodeRecord(options_.state_dir, record_);
    out_ << ": requested in " << TerminalLine(RecordPath()) << std::endl;
  }

  const WatchDaemonOptions& options_;
  RecordJudge judge_;
  NodeRecord record_;
  ReplayResult counts_;
  std::ostream& out_;
  std::ostream& err_;
};

}  // namespace

int64_t EventUtcMicros(std::optional<int64_t> kernel_time_us) {
  const int64_t now = ClockMicros(CLOCK_REALTIME);
  if (!kernel_time_us) return now;
  const int64_t ago = ClockMicros(CLOCK_MONOTONIC) - *kernel_time_us;
  return ago > 0 ? now - ago : now;
}

bool IsRecordedAgain(const NodeRecord& record, const RecordedEvent& event) {
  if (!record.revoked) return false;
  return SameEvent(*record.revoked, event) || event.at_us < record.revoked->at_us;
}

int RunWatchDaemon(const WatchDaemonOptions& options, const GpuEventTable& table, std::ostream& out,
                   std::ostream& err) {
  NodeWatch watch(options, table, out, err);
  KmsgFollower follower(options.kmsg);
  WatchStopSignals stop;
  out << "trainlock watch: " << TerminalLine(options.revoke.node) << ": following "
      << TerminalLine(options.kmsg.string()) << std::endl;
  while (g_watch_stop_signal == 0) {
    const FollowState state =
        follower.Poll(kWatchPollTimeout, [&](KernelRecord&& record) { watch.Take(record); });
    if (state == FollowState::kEnded) {
      out << "trainlock watch: " << TerminalLine(options.kmsg.string())
          << " ended: " << watch.Summary(follower.counts()) << std::endl;
      return 0;
    }
  }
  const int signal = g_watch_stop_signal;
  out << "trainlock watch: stopped by signal " << signal << ": " << watch.Summary(follower.counts())
      << "; " << follower.overwritten() << " reads found records overwritten" << std::endl;
  return 128 + signal;
}

}  // namespace trainlock
