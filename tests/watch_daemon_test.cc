// The long-running `trainlock watch`: following a kmsg-like FIFO or file (--kmsg), the node's
// record it keeps, SIGTERM, `--once`, and revoking through Kubernetes against a stand-in
// kubectl that records its arguments, with the circuit breaker tripping and not. Slurm's drain
// runs against the real slurmctld in node_gate_test.cc (SlurmNodeGate.Watch*).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "base/subprocess.h"
#include "test_support.h"
#include "watch/node_record.h"
#include "watch/revoke_action.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunResult;
using testing::WriteFile;

// Kernel time now (CLOCK_MONOTONIC, as printk stamps records), less `ago_s`.
int64_t KernelNowUs(int64_t ago_s = 0) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1000000 + now.tv_nsec / 1000 - ago_s * 1000000;
}

std::string KmsgRecord(int priority, int64_t time_us, const std::string& message) {
  static int sequence = 1000;
  return std::to_string(priority) + "," + std::to_string(++sequence) + "," +
         std::to_string(time_us) + ",-;" + message + "\n";
}

std::string Xid79(int64_t time_us) {
  return KmsgRecord(4, time_us,
                    "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off "
                    "the bus.") +
         " SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n";
}

class WatchDaemon : public ::testing::Test {
 protected:
  testing::TempDir tmp_;
  fs::path State() { return tmp_.path() / "watch"; }
  fs::path Log() { return tmp_.path() / "kmsg"; }
  fs::path Record() { return State() / "node-07.record"; }

  RunResult Watch(const std::vector<std::string>& extra = {},
                  const std::vector<std::string>& env = {}) {
    std::vector<std::string> args = {"watch",          "--kmsg", Log().string(), "--watch-state",
                                     State().string(), "--node", "node-07"};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::RunProgram("trainlock", args, env);
  }
  RunResult Once(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"watch",          "--once", "--watch-state",
                                     State().string(), "--node", "node-07"};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::RunTrainlock(args);
  }
  // A report of node-07 that started `ago_s` seconds ago, in REPORTS/node-07.json.
  fs::path Report(int64_t ago_s) {
    const fs::path reports = tmp_.path() / "reports";
    fs::create_directories(reports);
    const time_t started = time(nullptr) - ago_s;
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&started));
    std::string report = ReadFile(testing::SourceDir() / "tests/fixtures/reports/tiny-report.json");
    report.replace(report.find("2026-11-30T03:43:41Z"), 20, text);
    WriteFile(reports / "node-07.json", report);
    return reports;
  }
};

TEST_F(WatchDaemon, ARevokingRecordIsWrittenToTheNodesRecordWithItsUtcTime) {
  WriteFile(Log(), KmsgRecord(6, KernelNowUs(10), "usb 1-1: new device") + Xid79(KernelNowUs(3)));
  const int64_t before = time(nullptr);
  RunResult r = Watch();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("trainlock watch: node-07: revoke gpu 0000:3b:00 Xid 79 (fallen off the "
                       "bus) at "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(": recorded in " + Record().string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ended: 2 records, 1 NVIDIA events: 1 revoke, 0 revalidate"),
            std::string::npos)
      << r.out;
  const std::optional<NodeRecord> record = ReadNodeRecord(State(), "node-07");
  ASSERT_TRUE(record && record->revoked);
  EXPECT_EQ(record->revoked->code, 79);
  EXPECT_EQ(record->revoked->pci, "0000:3b:00");
  EXPECT_NE(record->revoked->kernel_line.find("GPU has fallen off the bus."), std::string::npos);
  // Logged three seconds before now: its UTC time is three seconds before the watch ran.
  const int64_t at_s = record->revoked->at_us / 1000000;
  EXPECT_GE(at_s, before - 5);
  EXPECT_LE(at_s, before - 1);
}

TEST_F(WatchDaemon, TheSameEventReadAgainAfterARestartChangesNothing) {
  WriteFile(Log(), Xid79(KernelNowUs(3)));
  ASSERT_EQ(Watch().exit_code, 0);
  const std::string first = ReadFile(Record());
  RunResult again = Watch();
  EXPECT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find(": already in " + Record().string()), std::string::npos) << again.out;
  EXPECT_EQ(ReadFile(Record()), first);
}

TEST_F(WatchDaemon, ARevalidateEventIsARequestNeverARevocation) {
  WriteFile(Log(), KmsgRecord(4, KernelNowUs(1),
                              "NVRM: Xid (PCI:0000:5e:00): 45, pid=1, name=python3, Ch 00000010"));
  ASSERT_EQ(Watch().exit_code, 0);
  const std::optional<NodeRecord> record = ReadNodeRecord(State(), "node-07");
  ASSERT_TRUE(record);
  EXPECT_FALSE(record->revoked);
  ASSERT_EQ(record->pending.size(), 1u);
  EXPECT_EQ(record->pending[0].code, 45);
}

TEST_F(WatchDaemon, AnXidWrittenByUserspaceRevokesNothing) {
  WriteFile(Log(), KmsgRecord(12, KernelNowUs(1),
                              "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off "
                              "the bus."));
  ASSERT_EQ(Watch().exit_code, 0);
  EXPECT_FALSE(fs::exists(Record()));
}

TEST_F(WatchDaemon, ACorruptRecordStopsTheWatchAsBadInputNamingIt) {
  fs::create_directories(State());
  WriteFile(Record(), "trainlock.watch-record/1\nnode node-07\n");  // no end
  WriteFile(Log(), Xid79(KernelNowUs(1)));
  RunResult r = Watch();
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind(Record().string() + ":3:1: error: the record ends before", 0), 0u) << r.err;
}

// A FIFO stands in for /dev/kmsg: the watch judges each record as it arrives, and SIGTERM ends
// it between two polls with 128 + 15.
TEST_F(WatchDaemon, ItFollowsRecordsAsTheyArriveAndSigtermEndsIt) {
  ASSERT_EQ(::mkfifo(Log().c_str(), 0600), 0);
  SpawnOptions spawn;
  spawn.argv = {(testing::BinDir() / "trainlock").string(),
                "watch",
                "--kmsg",
                Log().string(),
                "--watch-state",
                State().string(),
                "--node",
                "node-07"};
  Subprocess watch(spawn);
  ASSERT_TRUE(watch.started()) << watch.start_error();
  std::ofstream writer(Log());  // the watch opened it without blocking; this open waits for none
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(fs::exists(Record()));
  writer << Xid79(KernelNowUs()) << std::flush;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!fs::exists(Record()) && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(fs::exists(Record()));
  EXPECT_EQ(watch.Stop(std::chrono::milliseconds(5000)), 128 + SIGTERM);
  EXPECT_NE(watch.tail().Text().find("stopped by signal 15"), std::string::npos)
      << watch.tail().Text();
}

TEST_F(WatchDaemon, OnceSaysNotRevokedWithoutARecord) {
  RunResult r = Once();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("node node-07: not revoked (no record "), std::string::npos) << r.out;
}

TEST_F(WatchDaemon, OnceSaysRevokedAndThatAnOlderReportIsRefused) {
  WriteFile(Log(), Xid79(KernelNowUs(3)));
  ASSERT_EQ(Watch().exit_code, 0);
  RunResult r = Once({"--reports-dir", Report(3600).string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("node node-07: revoked: gpu 0000:3b:00 Xid 79 (fallen off the bus) at "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the gate refuses it: revoked: the node reported"), std::string::npos)
      << r.out;
}

TEST_F(WatchDaemon, OnceSaysANewerReportRestoresTheNode) {
  WriteFile(Log(), Xid79(KernelNowUs(30)));
  ASSERT_EQ(Watch().exit_code, 0);
  RunResult r = Once({"--reports-dir", Report(5).string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("revoked, then validated again"), std::string::npos) << r.out;
}

TEST_F(WatchDaemon, OnceRefusesACorruptRecordAsBadInput) {
  fs::create_directories(State());
  WriteFile(Record(), "garbage\n");
  RunResult r = Once();
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind(Record().string() + ":1:1: error: not a trainlock.watch-record/1", 0), 0u)
      << r.err;
}

// --- the systemd unit ------------------------------------------------------------------------

TEST_F(WatchDaemon, TheSystemdUnitRunsThisWatchWithTheOptionsGiven) {
  RunResult r = testing::RunTrainlock({"watch", "--print-systemd-unit", "--revoke", "slurm",
                                       "--node", "gpu-017", "--reports-dir", "/shared/reports"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nExecStart=" + (testing::BinDir() / "trainlock").string() +
                       " watch --watch-state /var/lib/trainlock/watch --revoke slurm --node "
                       "gpu-017 --reports-dir /shared/reports --breaker-fraction 0.5 "
                       "--breaker-window 5m\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nStateDirectory=trainlock/watch\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nSuccessExitStatus=143\n"), std::string::npos) << r.out;
  if (!testing::HaveProgram("systemd-analyze")) GTEST_SKIP() << "no systemd-analyze";
  const fs::path unit = tmp_.path() / "trainlock-watch.service";
  WriteFile(unit, r.out);
  RunResult verify = testing::RunCommand({"systemd-analyze", "verify", unit.string()});
  EXPECT_EQ(verify.err.find("trainlock-watch.service:"), std::string::npos) << verify.err;
}

TEST_F(WatchDaemon, TheUnitRefusesAValueSystemdWouldReadOtherwise) {
  for (const char* node : {"gpu 017", "gpu%n", "gpu$HOME"}) {
    RunResult r = testing::RunTrainlock({"watch", "--print-systemd-unit", "--node", node});
    EXPECT_EQ(r.exit_code, 2) << node << r.out;
  }
  RunResult r = testing::RunTrainlock({"watch", "--print-systemd-unit", "--reports-dir", "/a b"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("--print-systemd-unit: error: a value the unit cannot carry as one plain "
                       "word: '/a b'"),
            std::string::npos)
      << r.err;
}

// --- revoking through Kubernetes, against a stand-in kubectl ---------------------------------

class WatchKubernetes : public WatchDaemon {
 protected:
  // `nodes` is what `kubectl get nodes -o jsonpath=...` prints: NAME<TAB>REVOKED-AT<TAB>GPUS.
  void StandIn(const std::string& nodes) {
    const fs::path bin = tmp_.path() / "bin";
    fs::create_directories(bin);
    WriteFile(tmp_.path() / "nodes.txt", nodes);
    WriteFile(bin / "kubectl", "#!/bin/sh\nprintf '%s\\n' \"$*\" >> " +
                                   (tmp_.path() / "kubectl.log").string() +
                                   "\nif [ \"$1\" = get ]; then cat " +
                                   (tmp_.path() / "nodes.txt").string() + "; fi\n");
    fs::permissions(bin / "kubectl", fs::perms::owner_all);
  }
  RunResult WatchK8s(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--revoke", "k8s"};
    args.insert(args.end(), extra.begin(), extra.end());
    const char* path = std::getenv("PATH");
    return Watch(
        args, {"PATH=" + (tmp_.path() / "bin").string() + ":" + (path ? path : "/usr/bin:/bin")});
  }
  std::string Calls() {
    const fs::path log = tmp_.path() / "kubectl.log";
    return fs::exists(log) ? ReadFile(log) : "";
  }
};

TEST_F(WatchKubernetes, ARevocationLabelsAndTaintsTheNode) {
  StandIn("node-07\t\t8\nnode-08\t\t8\nnode-09\t\t8\nnode-10\t\t8\n");
  WriteFile(Log(), Xid79(KernelNowUs(1)));
  RunResult r = WatchK8s();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string calls = Calls();
  EXPECT_NE(calls.find("label node node-07 --overwrite trainlock.io/validated=revoked "
                       "trainlock.io/revoked-at=20"),
            std::string::npos)
      << calls;
  EXPECT_NE(calls.find("taint node node-07 --overwrite trainlock.io/gate=revoked:NoSchedule\n"),
            std::string::npos)
      << calls;
  EXPECT_NE(r.out.find("labelled and tainted (0 of 4 GPU nodes already revoked"), std::string::npos)
      << r.out;
}

TEST_F(WatchKubernetes, TheBreakerTripsPastTheFractionAndSaysSoLoudly) {
  // One of two GPU nodes revoked a minute ago: a second passes 0.5.
  const time_t minute_ago = time(nullptr) - 60;
  char label[32];
  std::strftime(label, sizeof label, "%Y%m%dT%H%M%SZ", std::gmtime(&minute_ago));
  StandIn("node-07\t\t8\nnode-08\t" + std::string(label) + "\t8\ncpu-01\t\t\n");
  WriteFile(Log(), Xid79(KernelNowUs(1)));
  RunResult r = WatchK8s();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Calls().find("label node"), std::string::npos) << Calls();
  EXPECT_EQ(Calls().find("taint node"), std::string::npos) << Calls();
  EXPECT_NE(r.err.find("CIRCUIT BREAKER: not revoked through the scheduler: 1 of 2 GPU nodes "
                       "already revoked"),
            std::string::npos)
      << r.err;
  // The record is written anyway: the gate still refuses the node's old report.
  EXPECT_TRUE(ReadNodeRecord(State(), "node-07"));
}

TEST_F(WatchKubernetes, ARevocationOutsideTheWindowDoesNotCount) {
  StandIn("node-07\t\t8\nnode-08\t20200101T000000Z\t8\n");
  WriteFile(Log(), Xid79(KernelNowUs(1)));
  RunResult r = WatchK8s({"--breaker-window", "10m"});
  EXPECT_NE(Calls().find("taint node node-07"), std::string::npos) << Calls() << r.err;
}

TEST_F(WatchKubernetes, ASchedulerThatCannotBeCountedRevokesNothing) {
  StandIn("");
  WriteFile(Log(), Xid79(KernelNowUs(1)));
  RunResult r = WatchK8s();
  EXPECT_EQ(Calls().find("taint node"), std::string::npos) << Calls();
  EXPECT_NE(r.err.find("the circuit breaker cannot count the revoked nodes"), std::string::npos)
      << r.err;
}

TEST(RevokeBreaker, TripsOnlyPastTheFraction) {
  EXPECT_FALSE(BreakerTrips(10, 4, 0.5));  // 5 of 10
  EXPECT_TRUE(BreakerTrips(10, 5, 0.5));   // 6 of 10
  EXPECT_FALSE(BreakerTrips(1, 0, 1.0));
  EXPECT_TRUE(BreakerTrips(1, 0, 0.5));
}

TEST(RevokeReason, NamesTheEventAndTheReportDigest) {
  RecordedEvent e{1796670159123456, "gpu", "0000:3b:00", "xid", 79, "fallen off the bus", "", ""};
  NodeReport none;
  EXPECT_EQ(RevocationReason(e, none),
            "trainlock: revoked gpu 0000:3b:00 Xid 79 (fallen off the bus) at "
            "2026-12-07T19:02:39.123456Z report none");
  NodeReport report;
  report.sha256 = std::string(64, 'a');
  EXPECT_NE(RevocationReason(e, report).find(" report sha256:aaaa"), std::string::npos);
}

}  // namespace
}  // namespace trainlock
