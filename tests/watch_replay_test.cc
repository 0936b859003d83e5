// The replay suite of `trainlock watch`: every kernel-log trace under tests/fixtures/kmsg/
// (kmsg records or dmesg/journal lines, from public bug reports and NVIDIA's documentation; the
// folder's README names each source) is replayed through the shipped event table, and its
// revoke and revalidate decisions must be exactly the ones in the `.expected` file beside it:
// no false revocation, no missed one. Then the command itself: its lines, exit codes and JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compat/catalog.h"
#include "test_support.h"
#include "watch/replay.h"

namespace trainlock {
namespace {

// The table compiled into trainlock (lockfiles/compat/gpu-events.toml), kept for the whole run:
// a reference into a temporary Catalog would dangle.
const GpuEventTable& ShippedTable() {
  static const Catalog catalog = Catalog::Embedded();
  return catalog.gpu_events();
}

using testing::RunTrainlock;
using testing::SourceDir;

std::filesystem::path Traces() {
  return SourceDir() / "tests" / "fixtures" / "kmsg";
}

std::vector<std::filesystem::path> TraceFiles() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(Traces())) {
    const auto ext = entry.path().extension();
    if (ext == ".kmsg" || ext == ".log") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  }
  return lines;
}

// What a replay got wrong against an expectation: revocations (and re-validation requests)
// expected and not made, and made and not expected.
struct Mismatch {
  std::vector<std::string> missed;
  std::vector<std::string> unexpected;
  bool empty() const { return missed.empty() && unexpected.empty(); }
};

Mismatch Compare(const ReplayResult& result, const std::vector<std::string>& expected) {
  std::vector<std::string> made;
  for (const Decision& d : result.decisions) {
    if (d.event_class != EventClass::kInfo) made.push_back(DecisionLine(d));
  }
  Mismatch m;
  for (const std::string& line : expected) {
    if (std::find(made.begin(), made.end(), line) == made.end()) m.missed.push_back(line);
  }
  for (const std::string& line : made) {
    if (std::find(expected.begin(), expected.end(), line) == expected.end()) {
      m.unexpected.push_back(line);
    }
  }
  return m;
}

std::string Describe(const Mismatch& m) {
  std::string out;
  for (const std::string& line : m.missed) out += "  missed: " + line + "\n";
  for (const std::string& line : m.unexpected) out += "  not expected: " + line + "\n";
  return out;
}

TEST(WatchReplay, TheSuiteHoldsAtLeastTwentyTracesEachWithItsExpectedOutcome) {
  const auto files = TraceFiles();
  EXPECT_GE(files.size(), 20u);
  for (const auto& file : files) {
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(file).replace_extension(".expected")))
        << file;
  }
}

TEST(WatchReplay, EveryTraceGivesExactlyItsExpectedDecisions) {
  const GpuEventTable& table = ShippedTable();
  int revocations = 0;
  for (const auto& file : TraceFiles()) {
    const ReplayResult result = ReplayKernelLogFile(file, table);
    const auto expected =
        Lines(testing::ReadFile(std::filesystem::path(file).replace_extension(".expected")));
    const Mismatch m = Compare(result, expected);
    EXPECT_TRUE(m.empty()) << file.filename() << ":\n" << Describe(m);
    for (const Decision& d : result.decisions) revocations += d.event_class == EventClass::kRevoke;
  }
  EXPECT_GE(revocations, 15);  // the suite exercises revocations, not only quiet logs
}

// The comparison above can fail: a planted wrong expectation is caught both ways.
TEST(WatchReplay, AWrongExpectationIsReportedAsMissedAndUnexpected) {
  const ReplayResult result =
      ReplayKernelLogFile(Traces() / "xid79-multiline.kmsg", Catalog::Embedded().gpu_events());
  const Mismatch m =
      Compare(result, {"revoke gpu 0000:3b:00 Xid 48 (double-bit ECC error) at 12.345678 s"});
  ASSERT_EQ(m.missed.size(), 1u);
  ASSERT_EQ(m.unexpected.size(), 1u);
  EXPECT_EQ(m.unexpected[0], "revoke gpu 0000:3b:00 Xid 79 (fallen off the bus) at 12.345678 s");
}

TEST(WatchReplay, AStormIsFoldedAndCounted) {
  const ReplayResult result =
      ReplayKernelLogFile(Traces() / "xid45-storm.kmsg", Catalog::Embedded().gpu_events());
  EXPECT_EQ(result.events, 400u);
  EXPECT_EQ(result.decisions.size(), 2u);
  EXPECT_EQ(result.suppressed, 398u);
}

TEST(WatchReplay, GarbledRecordsAreRefusedAndCountedNeverFatal) {
  const ReplayResult result =
      ReplayKernelLogFile(Traces() / "truncated-garbled.kmsg", Catalog::Embedded().gpu_events());
  EXPECT_EQ(result.log.refused + result.refused, 4u);
  EXPECT_EQ(result.log.truncated, 1u);
  EXPECT_TRUE(result.revoked());
}

TEST(WatchReplay, RecordsWrittenByUserspaceDecideNothing) {
  const ReplayResult result =
      ReplayKernelLogFile(Traces() / "forged-userspace.kmsg", Catalog::Embedded().gpu_events());
  EXPECT_EQ(result.not_from_kernel, 2u);
  EXPECT_TRUE(result.decisions.empty());
}

// --- the command -----------------------------------------------------------------------------

TEST(WatchCommand, ARevocationPrintsItsLineAndExitsOne) {
  auto r = RunTrainlock({"watch", "--replay", (Traces() / "xid79-multiline.kmsg").string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("revoke gpu 0000:3b:00 Xid 79 (fallen off the bus) at 12.345678 s\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("5 records, 2 NVIDIA events: 1 revoke"), std::string::npos) << r.out;
}

TEST(WatchCommand, OnlyReValidationRequestsExitZero) {
  auto r = RunTrainlock({"watch", "--replay", (Traces() / "xid45-storm.kmsg").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("398 repeats folded"), std::string::npos) << r.out;
}

TEST(WatchCommand, JsonListsTheDecisionsAndCounts) {
  auto r = RunTrainlock({"watch", "--json", "--replay", (Traces() / "sxid-fatal.kmsg").string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_TRUE(json["revoked"].get<bool>());
  ASSERT_EQ(json["decisions"].size(), 2u);
  EXPECT_EQ(json["decisions"][0]["device"], "nvswitch");
  EXPECT_EQ(json["decisions"][0]["kind"], "sxid");
  EXPECT_EQ(json["decisions"][0]["code"], 20034);
}

TEST(WatchCommand, AMissingFileIsBadInputNamingIt) {
  auto r = RunTrainlock({"watch", "--replay", "/nonexistent/kern.log"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("/nonexistent/kern.log: error: cannot read", 0), 0u) << r.err;
}

TEST(WatchCommand, BinaryDataIsBadInputNamingTheLine) {
  testing::TempDir dir;
  testing::WriteFile(dir.path() / "bin", std::string("ok\nno\0pe\n", 9));
  auto r = RunTrainlock({"watch", "--replay", (dir.path() / "bin").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind((dir.path() / "bin").string() + ":2:1: error: a NUL byte", 0), 0u) << r.err;
}

// Without --replay or --once the watch follows the kernel log (watch_daemon_test.cc): one it
// cannot open is an environment error naming it, never a watch that silently watches nothing.
TEST(WatchCommand, AKernelLogItCannotOpenIsAnEnvironmentErrorNamingIt) {
  auto r = RunTrainlock({"watch", "--kmsg", "/nonexistent/kmsg"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("/nonexistent/kmsg: cannot open the kernel log"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace trainlock
