// The long-running watch; see watch_daemon.h.
#include "watch/watch_daemon.h"

#include <signal.h>
#include <syslog.h>
#include <time.h>

#include <chrono>

#include <map>
#include <memory>
#include <set>
#include <utility>

#include "base/exit_code.h"
#include "base/failure.h"
#include "base/terminal_text.h"
#include "report/gate.h"
#include "watch/kmsg_follower.h"
#include "watch/nvml_source.h"
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

RecordedEvent RecordedEventOf(const Decision& d, const std::string& line) {
  RecordedEvent event;
  event.at_us = EventUtcMicros(d.time_us);
  event.device = d.event.device == DeviceKind::kGpu ? "gpu" : "nvswitch";
  event.pci = d.event.pci;
  event.kind = d.event.sxid ? "sxid" : "xid";
  event.code = d.event.code;
  event.name = d.name;
  event.kernel_line = line.substr(0, kMaxKernelLineBytes);
  return event;
}

bool SameEvent(const RecordedEvent& a, const RecordedEvent& b) {
  const int64_t apart = a.at_us > b.at_us ? a.at_us - b.at_us : b.at_us - a.at_us;
  return apart <= kSameEventSlackUs && a.device == b.device && a.pci == b.pci && a.kind == b.kind &&
         a.code == b.code && a.condition == b.condition;
}

// One watch: the judge, the record and what each decision does.
class NodeWatch {
 public:
  NodeWatch(const WatchDaemonOptions& options, const GpuEventTable& table, std::ostream& out,
            std::ostream& err)
      : options_(options), table_(table), judge_(table), out_(out), err_(err) {
    const std::string& node = options.revoke.node;
    record_ = ReadNodeRecord(options.state_dir, node).value_or(NodeRecord{node, {}, {}});
  }

  void Take(const KernelRecord& record) {
    std::optional<Decision> decision = judge_.Take(record, counts_);
    if (!decision) return;
    Act(decision->event_class, DecisionLine(*decision), RecordedEventOf(*decision, record.message));
  }

  // What NVML showed: an Xid through the kernel log's judge, a condition by the table's
  // [[nvml]] entry.
  void TakeNvml(const NvmlObservation& o) {
    const int64_t now_us = ClockMicros(CLOCK_MONOTONIC);  // printk's clock: the kernel log's
    if (o.xid) {
      // An Xid whose meaning is in its line's text (154: changed to what?) is left to the
      // kernel log's line and NVML's recovery-action reading; the event carries no text.
      if (table_.XidNeedsText(o.code)) return;
      NvidiaEvent event;
      event.pci = o.pci;
      event.code = o.code;
      std::optional<Decision> decision = judge_.TakeEvent(event, now_us, counts_);
      if (decision)
        Act(decision->event_class, DecisionLine(*decision) + " (NVML)",
            RecordedEventOf(*decision, o.detail));
      return;
    }
    const EventMeaning meaning = table_.Nvml(o.condition);
    ++counts_.events;
    if (FoldNvml(o, meaning.event_class, now_us)) return;
    ++counts_.by_class[static_cast<int>(meaning.event_class)];
    RecordedEvent event{ClockMicros(CLOCK_REALTIME),
                        "gpu",
                        o.pci,
                        "nvml",
                        0,
                        meaning.name,
                        o.detail,
                        std::string(NvmlConditionName(o.condition))};
    Act(meaning.event_class,
        std::string(EventClassName(meaning.event_class)) + " gpu " + o.pci + " NVML " +
            event.condition + " (" + meaning.name + "): " + o.detail,
        event);
  }

  // The replay's summary line, over what the follower read.
  std::string Summary(const KernelLogCounts& log) const {
    ReplayResult result = counts_;
    result.log = log;
    result.suppressed = judge_.suppressed() + nvml_folded_;
    return ReplaySummary(result);
  }

 private:
  std::string Prefix() const { return "trainlock watch: " + options_.revoke.node + ": "; }
  std::string RecordPath() const {
    return NodeRecordPath(options_.state_dir, options_.revoke.node).string();
  }

  void Act(EventClass event_class, const std::string& line, const RecordedEvent& event) {
    out_ << Prefix() << TerminalLine(line);
    if (event_class == EventClass::kRevoke) {
      Revoke(event);
    } else if (event_class == EventClass::kRevalidate) {
      Request(event);
    } else {
      out_ << std::endl;
    }
  }

  // An NVML condition repeating one already decided, as the kernel log's judge folds: a
  // revocation once per GPU and condition, the rest once per GPU and condition per window.
  bool FoldNvml(const NvmlObservation& o, EventClass event_class, int64_t now_us) {
    const std::pair<std::string, int> key{o.pci, static_cast<int>(o.condition)};
    bool folded = false;
    if (event_class == EventClass::kRevoke) {
      folded = !nvml_revoked_.insert(key).second;
    } else {
      auto last = nvml_last_us_.find(key);
      folded = last != nvml_last_us_.end() && now_us - last->second < table_.revalidate_window_us();
      if (!folded) nvml_last_us_[key] = now_us;
    }
    nvml_folded_ += folded;
    return folded;
  }

  // Whether the node's report started after `event` (the gate's rule: it clears the event).
  bool ReportPostdates(const RecordedEvent& event) const {
    const NodeReport report = ReadNodeReport(options_.revoke.reports_dir, options_.revoke.node);
    const GateRevocation revocation{event.at_us / 1000000, RecordedEventText(event),
                                    event.kernel_line, RecordPath()};
    return report.present && RevocationRefusal(revocation, report.started_at).empty();
  }

  // An NVML condition the record already revoked for (same GPU and condition) and no report
  // has cleared since: read again after a restart, it is the same fault, not a new one.
  bool NvmlConditionRecorded(const RecordedEvent& event) const {
    if (event.kind != "nvml" || !record_.revoked) return false;
    const RecordedEvent& recorded = *record_.revoked;
    return recorded.kind == "nvml" && recorded.pci == event.pci &&
           recorded.condition == event.condition && !ReportPostdates(recorded);
  }

  void Revoke(const RecordedEvent& event) {
    if (IsRecordedAgain(record_, event) || NvmlConditionRecorded(event)) {
      out_ << ": already in " << TerminalLine(RecordPath()) << std::endl;
      return;
    }
    record_.revoked = event;
    WriteNodeRecord(options_.state_dir, record_);
    out_ << ": recorded in " << TerminalLine(RecordPath()) << std::endl;
    // The gate's rule: a report that started after the event (an old event read again from the
    // kernel's buffer, its record lost) already clears it, and nothing is drained for it.
    if (ReportPostdates(event)) {
      const NodeReport report = ReadNodeReport(options_.revoke.reports_dir, options_.revoke.node);
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
      // An NVML condition still asked for is the same request, however long ago it was made.
      const bool same_condition = event.kind == "nvml" && pending.kind == "nvml" &&
                                  pending.pci == event.pci && pending.condition == event.condition;
      if (SameEvent(pending, event) || same_condition) {
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
  const GpuEventTable& table_;
  RecordJudge judge_;
  std::set<std::pair<std::string, int>> nvml_revoked_;
  std::map<std::pair<std::string, int>, int64_t> nvml_last_us_;
  uint64_t nvml_folded_ = 0;
  NodeRecord record_;
  ReplayResult counts_;
  std::ostream& out_;
  std::ostream& err_;
};

// NVML as --nvml asks: nullptr when off, or (auto) when it cannot be used, said once on `err`.
std::unique_ptr<NvmlSource> StartNvmlSource(const WatchDaemonOptions& options,
                                            const std::string& prefix, std::ostream& out,
                                            std::ostream& err) {
  if (options.nvml == NvmlMode::kOff) return nullptr;
  auto nvml = std::make_unique<NvmlSource>();
  if (const std::string& why = nvml->unavailable_reason(); !why.empty()) {
    if (options.nvml == NvmlMode::kRequire)
      throw Failure("--nvml require: " + why, kExitEnvironment);
    err << prefix << "NVML not used: " << why << "; following the kernel log only" << std::endl;
    return nullptr;
  }
  const NvmlBaseline baseline = ReadNvmlBaseline(options.revoke.reports_dir, options.revoke.node);
  nvml->Start(options.nvml_interval, baseline);
  out << prefix << "NVML: " << nvml->gpu_count() << " GPU(s), events and readings every "
      << options.nvml_interval.count() / 1000.0 << " s against "
      << TerminalLine(baseline.present ? "the passing report " + baseline.source
                                       : "no baseline (" + baseline.source + ")")
      << std::endl;
  for (const std::string& note : nvml->notes())
    out << prefix << "NVML: " << TerminalLine(note) << std::endl;
  return nvml;
}

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
  const std::string prefix = "trainlock watch: " + TerminalLine(options.revoke.node) + ": ";
  std::unique_ptr<NvmlSource> nvml = StartNvmlSource(options, prefix, out, err);
  WatchStopSignals stop;
  out << prefix << "following " << TerminalLine(options.kmsg.string()) << std::endl;
  const auto take_nvml = [&](NvmlObservation&& o) { watch.TakeNvml(o); };
  while (g_watch_stop_signal == 0) {
    const FollowState state = follower.Poll(
        kWatchPollTimeout, [&](KernelRecord&& record) { watch.Take(record); },
        nvml ? nvml->wake_fd() : -1);
    if (nvml) {
      for (NvmlObservation& o : nvml->Take()) take_nvml(std::move(o));
    }
    if (state == FollowState::kEnded) {
      if (nvml) nvml->Finish(take_nvml);
      out << "trainlock watch: " << TerminalLine(options.kmsg.string())
          << " ended: " << watch.Summary(follower.counts()) << std::endl;
      return 0;
    }
  }
  if (nvml) nvml->Stop();
  const int signal = g_watch_stop_signal;
  out << "trainlock watch: stopped by signal " << signal << ": " << watch.Summary(follower.counts())
      << "; " << follower.overwritten() << " reads found records overwritten" << std::endl;
  return 128 + signal;
}

}  // namespace trainlock
