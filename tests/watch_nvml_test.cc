// `trainlock watch` with NVML beside the kernel log, against the stand-in libnvidia-ml.so.1
// (tests/nvml_standin): its GPUs, readings and queued events are scripted per test, and the
// watch loads it as it loads the driver's library (LD_LIBRARY_PATH; the product's dlopen is
// unchanged). A --kmsg file ends the watch after a last reading of NVML, so every test is
// deterministic: each queued event and each reading is judged before the summary.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/subprocess.h"
#include "test_support.h"
#include "watch/node_record.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunResult;
using testing::WriteFile;

// Kernel time now (CLOCK_MONOTONIC, as printk stamps records).
int64_t NvmlTestKernelNowUs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1000000 + now.tv_nsec / 1000;
}

std::string NvmlTestXidRecord(int xid, const std::string& text) {
  return "4,2001," + std::to_string(NvmlTestKernelNowUs()) +
         ",-;NVRM: Xid (PCI:0000:3b:00): " + std::to_string(xid) + ", pid=1234, name=python3, " +
         text + "\n";
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class WatchNvml : public ::testing::Test {
 protected:
  testing::TempDir tmp_;
  fs::path State() { return tmp_.path() / "watch"; }
  fs::path Log() { return tmp_.path() / "kmsg"; }
  fs::path Script() { return tmp_.path() / "nvml.txt"; }
  fs::path Reports() { return tmp_.path() / "reports"; }

  // The stand-in's script: one GPU at 0000:3b:00 with `gpu` keys, then `events` lines.
  void StandIn(const std::string& gpu, const std::string& events = "") {
    WriteFile(Script(), "gpu pci=0000:3b:00 " + gpu + "\n" + events);
  }
  std::vector<std::string> Env(bool script = true) {
    std::vector<std::string> env = {"LD_LIBRARY_PATH=" + std::string(TRAINLOCK_NVML_STANDIN_DIR)};
    if (script) env.push_back("TRAINLOCK_NVML_STANDIN=" + Script().string());
    return env;
  }
  RunResult Watch(const std::vector<std::string>& extra = {}, bool script = true) {
    if (!fs::exists(Log())) WriteFile(Log(), "");
    std::vector<std::string> args = {"watch",          "--kmsg", Log().string(), "--watch-state",
                                     State().string(), "--node", "node-07"};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::RunProgram("trainlock", args, Env(script));
  }
  RunResult WatchAgainstReport(const nlohmann::json& device) {
    Report(device);
    return Watch({"--reports-dir", Reports().string()});
  }
  // A passing report of node-07, started an hour ago, whose env.health measured GPU 0 as
  // `device` says (the watch's baseline).
  void Report(const nlohmann::json& device) {
    nlohmann::json report = nlohmann::json::parse(
        ReadFile(testing::SourceDir() / "tests/fixtures/reports/h200-pilot-report.json"));
    const time_t started = time(nullptr) - 3600;
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&started));
    report["started_at"] = text;
    for (nlohmann::json& check : report["checks"]) {
      if (check["id"] == "env.health") {
        nlohmann::json& gpu = check["metrics"]["devices"][0];
        gpu["pci"] = "0000:3b:00";
        gpu.update(device);
      }
    }
    fs::create_directories(Reports());
    WriteFile(Reports() / "node-07.json", report.dump());
  }
  std::optional<NodeRecord> Record() { return ReadNodeRecord(State(), "node-07"); }
};

TEST_F(WatchNvml, AnXidCriticalEventOfARevokingXidRevokes) {
  StandIn("", "event 0 xid 79\n");
  RunResult r = Watch();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("revoke gpu 0000:3b:00 Xid 79 (fallen off the bus) at "), std::string::npos)
      << r.out;
  const std::optional<NodeRecord> record = Record();
  ASSERT_TRUE(record && record->revoked) << r.out;
  EXPECT_EQ(record->revoked->kind, "xid");
  EXPECT_EQ(record->revoked->code, 79);
  EXPECT_EQ(record->revoked->kernel_line.rfind("NVML: XidCritical event, Xid 79", 0), 0u);
}

TEST_F(WatchNvml, TheSameXidInTheKernelLogAndFromNvmlIsOneRevocation) {
  StandIn("", "event 0 xid 79\n");
  WriteFile(Log(), NvmlTestXidRecord(79, "GPU has fallen off the bus."));
  RunResult r = Watch();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Occurrences(r.out, "revoke gpu 0000:3b:00 Xid 79"), 1u) << r.out;
  EXPECT_NE(r.out.find("2 NVIDIA events: 1 revoke, 0 revalidate, 0 info, 1 repeats folded"),
            std::string::npos)
      << r.out;
}

TEST_F(WatchNvml, AnXidCriticalEventOfAnApplicationXidAsksForARevalidationOnly) {
  StandIn("", "event 0 xid 45\n");
  RunResult r = Watch();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::optional<NodeRecord> record = Record();
  ASSERT_TRUE(record) << r.out;
  EXPECT_FALSE(record->revoked);
  ASSERT_EQ(record->pending.size(), 1u);
  EXPECT_EQ(record->pending[0].code, 45);
}

TEST_F(WatchNvml, ADoubleBitEccEventRevokes) {
  StandIn("", "event 0 dbe\n");
  RunResult r = Watch();
  EXPECT_NE(r.out.find("revoke gpu 0000:3b:00 NVML dbe-event (double-bit ECC error)"),
            std::string::npos)
      << r.out;
  const std::optional<NodeRecord> record = Record();
  ASSERT_TRUE(record && record->revoked) << r.out;
  EXPECT_EQ(RecordedEventCode(*record->revoked), "nvml dbe-event");
}

TEST_F(WatchNvml, ASingleBitEccEventIsInformation) {
  StandIn("", "event 0 sbe\n");
  RunResult r = Watch();
  EXPECT_NE(r.out.find("info gpu 0000:3b:00 NVML sbe-event (single-bit ECC error)"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(Record()) << r.out;
}

TEST_F(WatchNvml, ARemapFailureThePassDidNotHaveRevokes) {
  StandIn("remap=0,1,0,1");
  RunResult r = WatchAgainstReport({{"remap_failed", false}});
  EXPECT_NE(r.out.find("revoke gpu 0000:3b:00 NVML remap-failed (row remap failure)"),
            std::string::npos)
      << r.out;
  const std::optional<NodeRecord> record = Record();
  ASSERT_TRUE(record && record->revoked) << r.out;
  EXPECT_EQ(record->revoked->condition, "remap-failed");
}

TEST_F(WatchNvml, ARemapPendingAlreadyInTheBaselineIsNoEvent) {
  StandIn("remap=0,1,1,0");
  RunResult r = WatchAgainstReport({{"remap_pending", true}, {"remapped_rows_uncorrectable", 1}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("remap-pending"), std::string::npos) << r.out;
  EXPECT_FALSE(Record()) << r.out;
}

TEST_F(WatchNvml, AnUncorrectedAggregateCountAboveTheBaselineRevokes) {
  StandIn("ecc=0,3,0,0");
  RunResult r = WatchAgainstReport({{"ecc_uncorrected_aggregate", 2}});
  EXPECT_NE(r.out.find("revoke gpu 0000:3b:00 NVML uncorrected-ecc-rise"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("uncorrected ECC errors (aggregate) 3 (before: 2)"), std::string::npos)
      << r.out;
  EXPECT_TRUE(Record() && Record()->revoked) << r.out;
}

TEST_F(WatchNvml, AnUncorrectedAggregateCountEqualToTheBaselineIsNoEvent) {
  StandIn("ecc=0,2,0,0");
  RunResult r = WatchAgainstReport({{"ecc_uncorrected_aggregate", 2}});
  EXPECT_EQ(r.out.find("uncorrected-ecc-rise"), std::string::npos) << r.out;
  EXPECT_FALSE(Record()) << r.out;
}

TEST_F(WatchNvml, ARecoveryActionResetRevokes) {
  StandIn("recovery=1");
  RunResult r = Watch();
  EXPECT_NE(r.out.find("revoke gpu 0000:3b:00 NVML recovery-action-reset (GPU recovery action: "
                       "GPU reset)"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(Record() && Record()->revoked) << r.out;
}

TEST_F(WatchNvml, AConditionReadAgainAfterARestartIsTheRecordedRevocation) {
  StandIn("remap=0,1,0,1");
  ASSERT_EQ(Watch().exit_code, 0);
  const std::string first = ReadFile(State() / "node-07.record");
  RunResult again = Watch();
  EXPECT_NE(again.out.find("NVML remap-failed (row remap failure): NVML: GPU 0 0000:3b:00: "
                           "remapped rows: a remap failed: already in "),
            std::string::npos)
      << again.out;
  EXPECT_EQ(ReadFile(State() / "node-07.record"), first);
}

TEST_F(WatchNvml, NvmlOffLeavesNvmlAlone) {
  StandIn("recovery=1");
  RunResult r = Watch({"--nvml", "off"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("NVML"), std::string::npos) << r.out;
  EXPECT_FALSE(Record()) << r.out;
}

TEST_F(WatchNvml, TheSystemdUnitCarriesTheNvmlOptions) {
  RunResult r = testing::RunTrainlock(
      {"watch", "--print-systemd-unit", "--nvml", "require", "--nvml-interval", "30s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" --nvml require --nvml-interval 30s\n"), std::string::npos) << r.out;
  RunResult bad = testing::RunTrainlock({"watch", "--print-systemd-unit", "--nvml-interval", "0s"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.err.find("--nvml-interval: error: not a duration from 1s to 1h: '0s'"),
            std::string::npos)
      << bad.err;
}

// The NVML thread waits for events at most kNvmlEventWaitMs at a time: SIGTERM still ends the
// watch between two polls, 128 + 15, the thread joined.
TEST_F(WatchNvml, SigtermEndsTheWatchWithItsNvmlThread) {
  StandIn("");
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
  spawn.env = {{"LD_LIBRARY_PATH", TRAINLOCK_NVML_STANDIN_DIR},
               {"TRAINLOCK_NVML_STANDIN", Script().string()}};
  Subprocess watch(spawn);
  ASSERT_TRUE(watch.started()) << watch.start_error();
  std::ofstream writer(Log());  // the FIFO stays open: only the signal ends the watch
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (watch.tail().Text().find("following") == std::string::npos &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(watch.Stop(std::chrono::milliseconds(5000)), 128 + SIGTERM);
  EXPECT_NE(watch.tail().Text().find("NVML: 1 GPU(s), events and readings every 10 s"),
            std::string::npos)
      << watch.tail().Text();
  EXPECT_NE(watch.tail().Text().find("stopped by signal 15"), std::string::npos)
      << watch.tail().Text();
}

TEST_F(WatchNvml, WithoutNvmlAutoFollowsTheKernelLogOnly) {
  WriteFile(Log(), NvmlTestXidRecord(79, "GPU has fallen off the bus."));
  RunResult r = Watch({}, /*script=*/false);  // the stand-in's nvmlInit_v2 fails
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(Occurrences(r.err, "NVML not used: NVML failed to initialise"), 1u) << r.err;
  EXPECT_NE(r.err.find("following the kernel log only"), std::string::npos) << r.err;
  EXPECT_TRUE(Record() && Record()->revoked) << r.out;
}

TEST_F(WatchNvml, WithoutNvmlRequireIsAnEnvironmentFailure) {
  RunResult r = Watch({"--nvml", "require"}, /*script=*/false);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("--nvml require: NVML failed to initialise"), std::string::npos) << r.err;
}

TEST_F(WatchNvml, OnceShowsNvmlsReadingsAndWhatTheyShowAgainstTheBaseline) {
  StandIn("ecc=0,3,0,0 remap=0,0,0,0 recovery=0");
  Report({{"ecc_uncorrected_aggregate", 2}});
  RunResult r = testing::RunProgram("trainlock",
                                    {"watch", "--once", "--watch-state", State().string(), "--node",
                                     "node-07", "--reports-dir", Reports().string()},
                                    Env());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("  NVML: GPU 0 0000:3b:00: ECC uncorrected 0 volatile / 3 aggregate, "
                       "corrected 0 / 0; remapped rows 0 uncorrectable / 0 correctable, pending "
                       "no, failed no; recovery action none\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("    revoke uncorrected-ecc-rise ("), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("  NVML baseline: the passing report " + (Reports() / "node-07.json").string()),
      std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace trainlock
