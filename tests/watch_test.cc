// The pieces of `trainlock watch`: the GPU event table (lockfiles/compat/gpu-events.toml) and
// its loader, the kernel log reader (kmsg records, dmesg and journal lines, bounded), the NVIDIA
// line parser and the judge that folds storms. The replay suite is watch_replay_test.cc.
#include <gtest/gtest.h>

#include <limits>

#include "base/diagnostic.h"
#include "compat/catalog.h"
#include "test_support.h"
#include "watch/event_judge.h"
#include "watch/kernel_log.h"
#include "watch/nvidia_event.h"

namespace trainlock {
namespace {

// The table compiled into trainlock (lockfiles/compat/gpu-events.toml), kept for the whole run:
// a reference into a temporary Catalog would dangle.
const GpuEventTable& ShippedTable() {
  static const Catalog catalog = Catalog::Embedded();
  return catalog.gpu_events();
}

GpuEventTable TableFrom(const std::string& text) {
  return GpuEventTable::Parse(text, "gpu-events.toml");
}

std::string LoadError(const std::string& text) {
  try {
    TableFrom(text);
  } catch (const InputError& e) {
    return e.diagnostics().items().front().Format();
  }
  return "";
}

constexpr const char* kDefaults =
    "[defaults]\nxid = \"revalidate\"\nsxid-fatal = \"revoke\"\nsxid-non-fatal = \"info\"\n"
    "revalidate-window-s = 60\n";

// --- the table -------------------------------------------------------------------------------

TEST(GpuEventTable, TheShippedTableRevokesOnHardwareFaultsAndAsksAgainOnApplicationOnes) {
  const GpuEventTable& table = ShippedTable();
  for (int code : {48, 62, 64, 74, 79, 92, 95, 119, 120, 140, 154}) {
    EXPECT_EQ(table.Xid(code, "").event_class, EventClass::kRevoke) << code;
  }
  for (int code : {8, 13, 31, 43, 45, 94}) {
    EXPECT_EQ(table.Xid(code, "").event_class, EventClass::kRevalidate) << code;
  }
  EXPECT_EQ(table.Xid(63, "").event_class, EventClass::kInfo);
}

TEST(GpuEventTable, AnUnlistedXidTakesTheDocumentedDefaultRevalidate) {
  EventMeaning m = Catalog::Embedded().gpu_events().Xid(99999, "");
  EXPECT_EQ(m.event_class, EventClass::kRevalidate);
  EXPECT_FALSE(m.listed);
  EXPECT_EQ(m.name, "not in the event table");
}

TEST(GpuEventTable, ARecoveryActionBackToNoneIsInformation) {
  const GpuEventTable& table = ShippedTable();
  EXPECT_EQ(
      table.Xid(154, "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)")
          .event_class,
      EventClass::kInfo);
  EXPECT_EQ(
      table.Xid(154, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)")
          .event_class,
      EventClass::kRevoke);
}

TEST(GpuEventTable, AnSXidIsJudgedByTheSeverityItsLineStates) {
  const GpuEventTable& table = ShippedTable();
  EXPECT_EQ(table.SXid(20034, true).event_class, EventClass::kRevoke);
  EXPECT_EQ(table.SXid(12028, false).event_class, EventClass::kInfo);
}

TEST(GpuEventTable, AnUnknownClassIsRefusedAtItsLine) {
  EXPECT_EQ(
      LoadError(std::string(kDefaults) + "[[xid]]\ncode = 79\nname = \"x\"\nclass = \"drain\"\n"),
      "gpu-events.toml:9:9: error: 'xid.class' is 'drain'; one of revoke, revalidate, info");
}

TEST(GpuEventTable, AnXidListedTwiceIsRefusedNamingTheFirst) {
  const std::string entry = "[[xid]]\ncode = 79\nname = \"x\"\nclass = \"revoke\"\n";
  EXPECT_EQ(LoadError(std::string(kDefaults) + entry + entry),
            "gpu-events.toml:11:8: error: xid 79 is listed twice (first at line 7)");
}

TEST(GpuEventTable, AMissingNameOrDefaultsIsRefused) {
  EXPECT_NE(LoadError(std::string(kDefaults) + "[[xid]]\ncode = 79\nclass = \"revoke\"\n")
                .find("missing required key 'name' in [xid]"),
            std::string::npos);
  EXPECT_NE(LoadError("[[xid]]\ncode = 79\nname = \"x\"\nclass = \"revoke\"\n").find("defaults"),
            std::string::npos);
}

TEST(GpuEventTable, TheShippedTableSaysWhatEachNvmlConditionMeans) {
  const GpuEventTable& table = ShippedTable();
  for (NvmlCondition c :
       {NvmlCondition::kDbeEvent, NvmlCondition::kUncorrectedEccRise, NvmlCondition::kRemapFailed,
        NvmlCondition::kRecoveryActionReset, NvmlCondition::kRecoveryActionReboot,
        NvmlCondition::kRecoveryActionDrainP2p, NvmlCondition::kRecoveryActionDrainReset,
        NvmlCondition::kGpuLost}) {
    EXPECT_EQ(table.Nvml(c).event_class, EventClass::kRevoke) << NvmlConditionName(c);
  }
  EXPECT_EQ(table.Nvml(NvmlCondition::kRemapPending).event_class, EventClass::kRevalidate);
  EXPECT_EQ(table.Nvml(NvmlCondition::kSbeEvent).event_class, EventClass::kInfo);
  EXPECT_EQ(table.Nvml(NvmlCondition::kCorrectedEccRise).event_class, EventClass::kInfo);
}

TEST(GpuEventTable, AnUnknownNvmlConditionIsRefusedAtItsLine) {
  const std::string text = std::string(kDefaults) +
                           "[[xid]]\ncode = 79\nname = \"x\"\nclass = \"revoke\"\n"
                           "[[nvml]]\ncondition = \"ecc-storm\"\nname = \"x\"\nclass = \"info\"\n";
  EXPECT_EQ(LoadError(text).rfind("gpu-events.toml:11:13: error: 'nvml.condition' is 'ecc-storm'; "
                                  "one of dbe-event, sbe-event, ...",
                                  0),
            0u)
      << LoadError(text);
}

TEST(GpuEventTable, AnNvmlConditionLeftOutIsRefusedNamingIt) {
  const std::string text =
      std::string(kDefaults) +
      "[[xid]]\ncode = 79\nname = \"x\"\nclass = \"revoke\"\n"
      "[[nvml]]\ncondition = \"dbe-event\"\nname = \"x\"\nclass = \"revoke\"\n";
  EXPECT_NE(LoadError(text).find("nvml condition sbe-event is not listed"), std::string::npos)
      << LoadError(text);
}

TEST(GpuEventTable, AnUnknownKeyAndACodeOutOfRangeAreRefused) {
  EXPECT_NE(LoadError(std::string(kDefaults) +
                      "[[xid]]\ncode = 79\nname = \"x\"\nclass = \"revoke\"\nseverity = 1\n")
                .find("severity"),
            std::string::npos);
  EXPECT_NE(
      LoadError(std::string(kDefaults) + "[[xid]]\ncode = 0\nname = \"x\"\nclass = \"info\"\n")
          .find("'xid.code'"),
      std::string::npos);
}

TEST(GpuEventTable, ACatalogDirectoryWithoutTheTableIsRefusedNamingTheFile) {
  testing::TempDir dir;
  for (const auto& entry :
       std::filesystem::directory_iterator(testing::SourceDir() / "lockfiles/compat")) {
    if (entry.path().filename() != "gpu-events.toml" && entry.path().extension() == ".toml") {
      std::filesystem::copy_file(entry.path(), dir.path() / entry.path().filename());
    }
  }
  try {
    Catalog::FromDirectory(dir.path());
    FAIL() << "loaded without gpu-events.toml";
  } catch (const InputError& e) {
    EXPECT_NE(e.diagnostics().items().front().Format().find("gpu-events.toml"), std::string::npos);
  }
}

// --- the kernel log reader -------------------------------------------------------------------

std::vector<KernelRecord> Read(std::string_view text, KernelLogCounts* out = nullptr) {
  std::vector<KernelRecord> records;
  KernelLogCounts counts;
  ReadKernelLog(
      text, [&](KernelRecord&& r) { records.push_back(std::move(r)); }, counts);
  if (out) *out = counts;
  return records;
}

TEST(KernelLog, AKmsgRecordGivesItsTimeMessageAndContinuationLines) {
  auto records = Read(
      "4,1234,12345678,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
      " SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].time_us, 12345678);
  EXPECT_EQ(records[0].message, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.");
  ASSERT_EQ(records[0].dict.size(), 2u);
  EXPECT_EQ(records[0].dict[1].first, "DEVICE");
  EXPECT_EQ(records[0].dict[1].second, "+pci:0000:3b:00.0");
  EXPECT_TRUE(records[0].from_kernel);
}

TEST(KernelLog, KmsgEscapesAreUnescaped) {
  auto records = Read("6,1,5,-;a\\x09b\\x5cc\n");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].message, "a\tb\\c");
}

TEST(KernelLog, ARecordWrittenByUserspaceIsNotTheKernels) {
  auto records = Read("12,1,5,-;NVRM: Xid (PCI:0000:3b:00): 79, forged\n");  // facility 1
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].from_kernel);
}

TEST(KernelLog, DmesgAndJournalLinesGiveTheirMessageAndBracketedTime) {
  auto records = Read(
      "[  269.516977] NVRM: Xid (0000:01:00): 3, C 00000005\n"
      "Jan 18 11:38:05 node1 kernel: [ 1.5] NVRM: x\n"
      "May 18 19:02:39 kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.\n"
      "May 18 19:02:40 node1 python3[12]: NVRM: Xid (PCI:0000:2b:00): 79, printed by a program\n");
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].time_us, 269516977);
  EXPECT_EQ(records[0].message, "NVRM: Xid (0000:01:00): 3, C 00000005");
  EXPECT_EQ(records[1].time_us, 1500000);
  EXPECT_EQ(records[1].message, "NVRM: x");
  EXPECT_FALSE(records[2].time_us.has_value());
  EXPECT_TRUE(records[2].message.starts_with("NVRM: Xid"));
  EXPECT_FALSE(records[3].message.starts_with("NVRM"));  // not the kernel's line
}

TEST(KernelLog, AnOverlongLineIsCutAtTheCapAndSaidSo) {
  KernelLogCounts counts;
  auto records = Read("NVRM: " + std::string(1 << 20, 'a') + "\n", &counts);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].message.size(), kMaxRecordBytes);
  EXPECT_TRUE(records[0].truncated);
  EXPECT_EQ(counts.truncated, 1u);
}

TEST(KernelLog, AKmsgHeaderWhoseNumbersOverflowIsRefusedAndCounted) {
  KernelLogCounts counts;
  auto records =
      Read("4,1,99999999999999999999999,-;NVRM: Xid (PCI:0000:3b:00): 79, x\nok\n", &counts);
  EXPECT_EQ(counts.refused, 1u);
  ASSERT_EQ(counts.refused_lines.size(), 1u);
  EXPECT_EQ(counts.refused_lines[0], 1u);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].message, "ok");
}

TEST(KernelLog, ContinuationLinesBeyondTheCapAreDropped) {
  std::string text = "4,1,5,-;m\n";
  for (int i = 0; i < 10000; ++i) text += " KEY=" + std::string(100, 'v') + "\n";
  auto records = Read(text);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].truncated);
  EXPECT_LT(records[0].dict.size(), 100u);
}

// --- NVIDIA lines ----------------------------------------------------------------------------

TEST(NvidiaLine, AnXidLineGivesTheGpuAndCode) {
  NvidiaLine line = ParseNvidiaLine(
      "NVRM: Xid (PCI:0000:3B:00): 79, pid=1234, name=python3, GPU has fallen off the bus.");
  ASSERT_EQ(line.kind, LineKind::kEvent);
  EXPECT_EQ(line.event.pci, "0000:3b:00");
  EXPECT_EQ(line.event.code, 79);
  EXPECT_FALSE(line.event.sxid);
  EXPECT_EQ(line.event.text, "pid=1234, name=python3, GPU has fallen off the bus.");
}

TEST(NvidiaLine, TheNewerUnknownPidFormAndTheOldAddressFormParse) {
  EXPECT_EQ(ParseNvidiaLine("NVRM: Xid (PCI:0000:65:00): 119, pid='<unknown>', name=<unknown>, "
                            "Timeout waiting for RPC from GSP")
                .event.code,
            119);
  EXPECT_EQ(ParseNvidiaLine("NVRM: Xid (0000:03:00): 14, Channel 00000001").event.pci,
            "0000:03:00");
}

TEST(NvidiaLine, AFallenOffTheBusLineWithoutXidIsXid79OfItsGpu) {
  for (const char* text : {"NVRM: GPU at 0000:01:00.0 has fallen off the bus.",
                           "NVRM: GPU at PCI:0000:01:00.0 has fallen off the bus.",
                           "NVRM: GPU 0000:01:00.0: GPU has fallen off the bus."}) {
    NvidiaLine line = ParseNvidiaLine(text);
    ASSERT_EQ(line.kind, LineKind::kEvent) << text;
    EXPECT_EQ(line.event.code, 79);
    EXPECT_EQ(line.event.pci, "0000:01:00");
  }
}

TEST(NvidiaLine, AnSXidLineGivesTheSwitchCodeAndSeverity) {
  NvidiaLine line = ParseNvidiaLine(
      "nvidia-nvswitch3: SXid (PCI:0000:c6:00.0): 20034, Fatal, Link 30 LTSSM Fault Up");
  ASSERT_EQ(line.kind, LineKind::kEvent);
  EXPECT_TRUE(line.event.sxid);
  EXPECT_TRUE(line.event.fatal);
  EXPECT_EQ(line.event.device, DeviceKind::kNvSwitch);
  EXPECT_EQ(line.event.pci, "0000:c6:00");
  EXPECT_FALSE(ParseNvidiaLine("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, "
                               "Link 32 egress non-posted PRIV error")
                   .event.fatal);
  // The lines after the first continue its record.
  EXPECT_EQ(ParseNvidiaLine("nvidia-nvswitch3: SXid (PCI:0000:c6:00.0): 20034, Data {0x0}").kind,
            LineKind::kOther);
}

TEST(NvidiaLine, GarbledXidLinesAreRefusedNeverGuessed) {
  for (const char* text :
       {"NVRM: Xid (PCI:0000:3b:00): 99999999999999999999, x", "NVRM: Xid (PCI:zz:3b:00): 79, x",
        "NVRM: Xid (PCI:0000:3b:00): , x", "NVRM: Xid PCI:0000:3b:00: 79",
        "NVRM: Xid (PCI:0000:3b:00", "NVRM: GPU at nowhere has fallen off the bus."}) {
    EXPECT_EQ(ParseNvidiaLine(text).kind, LineKind::kRefused) << text;
  }
}

TEST(NvidiaLine, OtherLinesAreNoEvent) {
  for (const char* text : {"NVRM: GPU at PCI:0000:2b:00: GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae",
                           "NVRM: loading NVIDIA UNIX x86_64 Kernel Module", "usb 1-1: new device",
                           "", "Xid (PCI:0000:3b:00): 79, not the driver's"}) {
    EXPECT_EQ(ParseNvidiaLine(text).kind, LineKind::kOther) << text;
  }
}

// --- the judge -------------------------------------------------------------------------------

NvidiaEvent Xid(const std::string& pci, int64_t code) {
  NvidiaEvent e;
  e.pci = pci;
  e.code = code;
  return e;
}

TEST(EventJudge, AStormOfOneXidIsOneRequestPerGpuPerWindow) {
  const GpuEventTable& table = ShippedTable();
  EventJudge judge(table);
  int requests = 0;
  for (int i = 0; i < 500; ++i) {
    for (const char* gpu : {"0000:3b:00", "0000:5e:00"}) {
      requests += judge.Judge(Xid(gpu, 45), int64_t{1000000} + i * 10000, i + 1) ? 1 : 0;
    }
  }
  EXPECT_EQ(requests, 2);
  EXPECT_EQ(judge.suppressed(), 998u);
  // Past the window the same Xid asks again.
  EXPECT_TRUE(judge.Judge(Xid("0000:3b:00", 45), int64_t{1000000} + 61000000, 1001));
}

TEST(EventJudge, ARevocationIsMadeOnceAndNothingLaterClearsIt) {
  const GpuEventTable& table = ShippedTable();
  EventJudge judge(table);
  auto first = judge.Judge(Xid("0000:3b:00", 79), 5000000, 1);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->event_class, EventClass::kRevoke);
  EXPECT_FALSE(judge.Judge(Xid("0000:3b:00", 79), 999000000, 2));  // even hours later
  EXPECT_TRUE(judge.Judge(Xid("0000:5e:00", 79), 999000000, 3));   // another GPU
}

TEST(EventJudge, KernelTimeGoingBackIsANewBootAndWindowsStartOver) {
  const GpuEventTable& table = ShippedTable();
  EventJudge judge(table);
  EXPECT_TRUE(judge.Judge(Xid("0000:3b:00", 13), 50000000, 1));
  EXPECT_TRUE(judge.Judge(Xid("0000:3b:00", 13), 2000000, 2));
}

}  // namespace
}  // namespace trainlock
