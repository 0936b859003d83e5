// The node's revocation record (src/watch/node_record.h) and the gate that reads it: written
// and read back, every corruption one error naming the file and position (never "no
// revocation"), the write never following a link, and `trainlock gate --watch-state` refusing a
// report older than the node's last revoking event.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "base/diagnostic.h"
#include "test_support.h"
#include "watch/node_record.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::SourceDir;
using testing::WriteFile;

// 2026-12-07T19:02:39.123456Z
constexpr int64_t kEventUs = 1796670159123456;

NodeRecord RevokedRecord() {
  NodeRecord record;
  record.node = "node-07";
  RecordedEvent e;
  e.at_us = kEventUs;
  e.device = "gpu";
  e.pci = "0000:3b:00";
  e.kind = "xid";
  e.code = 79;
  e.name = "fallen off the bus";
  e.kernel_line = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3\\ \x01 off the bus.";
  record.revoked = e;
  RecordedEvent request{
      kEventUs + 5000000, "gpu", "0000:5e:00", "xid", 45, "preemptive channel removal", "", ""};
  record.pending.push_back(request);
  return record;
}

std::string ParseError(const std::string& text) {
  try {
    ParseNodeRecord(text, "node-07.record");
  } catch (const InputError& e) {
    return e.diagnostics().items().front().Format();
  }
  return "";
}

TEST(NodeRecord, UtcTimesAreWrittenToTheMicrosecondAndReadBack) {
  EXPECT_EQ(UtcMicrosText(kEventUs), "2026-12-07T19:02:39.123456Z");
  EXPECT_EQ(ParseUtcMicros("2026-12-07T19:02:39.123456Z"), kEventUs);
  EXPECT_FALSE(ParseUtcMicros("2026-02-31T19:02:39.123456Z"));  // no such day
  EXPECT_FALSE(ParseUtcMicros("2026-12-07T19:02:39Z"));
  EXPECT_FALSE(ParseUtcMicros("2026-12-07T19:02:39.12345xZ"));
}

TEST(NodeRecord, ARecordReadsBackAsWritten) {
  const NodeRecord record = RevokedRecord();
  const std::string text = FormatNodeRecord(record);
  EXPECT_NE(text.find("\nrevoked-at 2026-12-07T19:02:39.123456Z\nclass revoke\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("name=python3\\x5c \\x01 off"), std::string::npos) << text;  // escaped
  const NodeRecord back = ParseNodeRecord(text, "r");
  ASSERT_TRUE(back.revoked);
  EXPECT_EQ(back.node, "node-07");
  EXPECT_EQ(back.revoked->at_us, kEventUs);
  EXPECT_EQ(back.revoked->code, 79);
  EXPECT_EQ(back.revoked->kernel_line, record.revoked->kernel_line);
  ASSERT_EQ(back.pending.size(), 1u);
  EXPECT_EQ(back.pending[0].name, "preemptive channel removal");
  EXPECT_EQ(back.pending[0].code, 45);
  EXPECT_EQ(FormatNodeRecord(back), text);
}

TEST(NodeRecord, AnNvmlConditionIsRecordedByItsNameAndReadBack) {
  NodeRecord record;
  record.node = "n";
  record.revoked = RecordedEvent{kEventUs,
                                 "gpu",
                                 "0000:3b:00",
                                 "nvml",
                                 0,
                                 "row remap failure",
                                 "NVML: GPU 0 0000:3b:00: remapped rows: a remap failed",
                                 "remap-failed"};
  const std::string text = FormatNodeRecord(record);
  EXPECT_NE(text.find("\ncode nvml remap-failed\n"), std::string::npos) << text;
  const NodeRecord back = ParseNodeRecord(text, "r");
  ASSERT_TRUE(back.revoked);
  EXPECT_EQ(back.revoked->condition, "remap-failed");
  EXPECT_EQ(RecordedEventText(*back.revoked).substr(0, 53),
            "gpu 0000:3b:00 NVML remap-failed (row remap failure) ");
}

TEST(NodeRecord, OnlyTheNewestRequestsAreKept) {
  NodeRecord record;
  record.node = "n";
  for (size_t i = 0; i < kMaxPendingRequests + 5; ++i)
    record.pending.push_back(
        {kEventUs + static_cast<int64_t>(i), "gpu", "0000:01:00", "xid", 45, "x", "", ""});
  const NodeRecord back = ParseNodeRecord(FormatNodeRecord(record), "r");
  ASSERT_EQ(back.pending.size(), kMaxPendingRequests);
  EXPECT_EQ(back.pending.front().at_us, kEventUs + 5);
}

TEST(NodeRecord, ARecordCutShortIsAnErrorNamingWhereItEnds) {
  std::string text = FormatNodeRecord(RevokedRecord());
  text.resize(text.find("end\n"));
  EXPECT_EQ(ParseError(text),
            "node-07.record:11:1: error: the record ends before its `end` line: cut short; "
            "`trainlock watch` writes this file; a record that does not read is never taken as "
            "no revocation: look at it, and remove it only once the node passed a new "
            "validation");
  text = FormatNodeRecord(RevokedRecord());
  text.resize(text.find("\nclass"));  // no newline at the end
  EXPECT_NE(ParseError(text).find("node-07.record:3:39: error: the last line has no newline"),
            std::string::npos)
      << ParseError(text);
}

TEST(NodeRecord, EachPlantedCorruptionIsRefusedAtItsPosition) {
  const std::string good = FormatNodeRecord(RevokedRecord());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    return ParseError(text);
  };
  EXPECT_NE(with("trainlock.watch-record/1", "trainlock.watch-record/2")
                .find("node-07.record:1:1: error: not a trainlock.watch-record/1 record"),
            std::string::npos);
  EXPECT_NE(with("revoked-at 2026-12-07T19:02:39.123456Z", "revoked-at 2026-12-07 19:02:39")
                .find("node-07.record:3:12: error: not a UTC time"),
            std::string::npos);
  EXPECT_NE(with("class revoke", "class info").find("node-07.record:4:7: error:"),
            std::string::npos);
  EXPECT_NE(with("device gpu", "device cpu").find("node-07.record:5:8: error: a device is gpu"),
            std::string::npos);
  EXPECT_NE(with("code xid 79", "code xid 7x").find("node-07.record:7:10: error: not a number"),
            std::string::npos);
  EXPECT_NE(with("\\x5c", "\\q").find("node-07.record:9:"), std::string::npos);
  EXPECT_NE(with("\\x5c", "\\q").find("a backslash that is no \\xNN escape"), std::string::npos);
  EXPECT_NE(with("name fallen", "nom fallen").find("node-07.record:8:1: error: expected `name"),
            std::string::npos);
  EXPECT_NE(with("revalidate 2026-12-07T19:02:44.123456Z gpu",
                 "revalidate 2026-12-07T19:02:44.123456Z cpu")
                .find("node-07.record:10:40: error: a device is gpu or nvswitch"),
            std::string::npos);
  EXPECT_NE(with("end\n", "end\nmore\n").find("node-07.record:12:1: error: text after the"),
            std::string::npos);
  EXPECT_NE(with("end\n", "ende\n").find("node-07.record:11:1: error: expected `end`"),
            std::string::npos);
}

class NodeRecordFile : public ::testing::Test {
 protected:
  testing::TempDir tmp_;
  fs::path State() { return tmp_.path() / "watch"; }
};

TEST_F(NodeRecordFile, NoDirectoryAndNoRecordAreNoRevocation) {
  EXPECT_FALSE(ReadNodeRecord(State(), "node-07"));
  fs::create_directories(State());
  EXPECT_FALSE(ReadNodeRecord(State(), "node-07"));
}

TEST_F(NodeRecordFile, AWrittenRecordIsReadBackFromItsNodesFile) {
  WriteNodeRecord(State(), RevokedRecord());
  EXPECT_TRUE(fs::is_regular_file(State() / "node-07.record"));
  const std::optional<NodeRecord> back = ReadNodeRecord(State(), "node-07");
  ASSERT_TRUE(back && back->revoked);
  EXPECT_EQ(back->revoked->at_us, kEventUs);
}

TEST_F(NodeRecordFile, TheWriteReplacesALinkAtTheRecordsNameNeverFollowingIt) {
  fs::create_directories(State());
  const fs::path victim = tmp_.path() / "victim";
  WriteFile(victim, "untouched\n");
  fs::create_symlink(victim, State() / "node-07.record");
  WriteNodeRecord(State(), RevokedRecord());
  EXPECT_EQ(ReadFile(victim), "untouched\n");
  EXPECT_FALSE(fs::is_symlink(State() / "node-07.record"));
  EXPECT_TRUE(ReadNodeRecord(State(), "node-07"));
}

TEST_F(NodeRecordFile, ALinkAtTheRecordsNameIsRefusedNotReadNorTakenAsNone) {
  fs::create_directories(State());
  const fs::path elsewhere = tmp_.path() / "elsewhere.record";
  WriteFile(elsewhere, FormatNodeRecord(RevokedRecord()));
  fs::create_symlink(elsewhere, State() / "node-07.record");
  EXPECT_THROW(ReadNodeRecord(State(), "node-07"), InputError);
}

TEST_F(NodeRecordFile, ARecordOfAnotherNodeOrOverTheCapIsRefused) {
  fs::create_directories(State());
  NodeRecord other = RevokedRecord();
  other.node = "node-08";
  WriteFile(State() / "node-07.record", FormatNodeRecord(other));
  EXPECT_THROW(ReadNodeRecord(State(), "node-07"), InputError);
  WriteFile(State() / "node-07.record", std::string(kMaxNodeRecordBytes + 1, 'x'));
  EXPECT_THROW(ReadNodeRecord(State(), "node-07"), InputError);
}

TEST_F(NodeRecordFile, ANodeNameThatIsNoFileNameIsRefused) {
  EXPECT_THROW(NodeRecordPath(State(), "../etc"), InputError);
  EXPECT_THROW(NodeRecordPath(State(), "a b"), InputError);
}

// --- trainlock gate --watch-state ------------------------------------------------------------

class GateWatchState : public ::testing::Test {
 protected:
  testing::TempDir tmp_;
  fs::path State() { return tmp_.path() / "watch"; }
  std::string Fixture() {  // started_at 2026-11-30T03:43:41Z
    return (SourceDir() / "tests/fixtures/reports/tiny-report.json").string();
  }
  testing::RunResult Gate() {
    return testing::RunProgram(
        "trainlock",
        {"gate", Fixture(), "--lock", (SourceDir() / "examples/tiny").string(), "--allow-unsigned",
         "--watch-state", State().string()},
        {"TRAINLOCK_NODE_NAME=node-07"});
  }
  void RecordEventAt(int64_t at_us) {
    NodeRecord record = RevokedRecord();
    record.revoked->at_us = at_us;
    WriteNodeRecord(State(), record);
  }
};

constexpr int64_t kReportStartUs = 1796010221000000;  // 2026-11-30T03:43:41Z

TEST_F(GateWatchState, NoStateDirectoryIsNoRevocation) {
  auto r = Gate();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(GateWatchState, AReportOlderThanTheNodesLastRevokingEventIsRefusedNamingIt) {
  RecordEventAt(kReportStartUs + 1000000);
  auto r = Gate();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("  - revoked: the node reported gpu 0000:3b:00 Xid 79 (fallen off the "
                       "bus) at 2026-11-30T03:43:42.000000Z (kernel: NVRM: Xid"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the report started 2026-11-30T03:43:41Z, not after it"), std::string::npos)
      << r.out;
}

TEST_F(GateWatchState, AnEventInTheReportsOwnStartSecondStillRefuses) {
  RecordEventAt(kReportStartUs + 999999);
  EXPECT_EQ(Gate().exit_code, 1);
}

TEST_F(GateWatchState, AReportStartedAfterTheEventClearsAndSaysSo) {
  RecordEventAt(kReportStartUs - 1);
  auto r = Gate();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("started after the node's last revoking event (gpu 0000:3b:00 Xid 79"),
            std::string::npos)
      << r.out;
}

TEST_F(GateWatchState, ARecordOfRequestsOnlyRevokesNothing) {
  NodeRecord record = RevokedRecord();
  record.revoked.reset();
  WriteNodeRecord(State(), record);
  EXPECT_EQ(Gate().exit_code, 0);
}

TEST_F(GateWatchState, ACorruptRecordIsBadInputNamingTheFileAndPositionNeverAPass) {
  RecordEventAt(kReportStartUs - 1);
  std::string text = ReadFile(State() / "node-07.record");
  text.replace(text.find("class revoke"), 12, "class revokx");
  WriteFile(State() / "node-07.record", text);
  auto r = Gate();
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind((State() / "node-07.record").string() + ":4:7: error: ", 0), 0u) << r.err;
}

TEST_F(GateWatchState, AStateDirectoryThatCannotBeReadIsAnErrorNotAPass) {
  WriteFile(State(), "not a directory\n");
  auto r = Gate();
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind(State().string() + ": error: cannot read the watch's state directory: ", 0),
            0u)
      << r.err;
}

}  // namespace
}  // namespace trainlock
