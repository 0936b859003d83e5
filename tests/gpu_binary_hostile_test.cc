// The GPU-code inspector on hostile ELF files (compat/gpu_binary.h): offsets and sizes that
// wrap around 2^64, a fat-binary entry whose size brings the scan back to where it was, an
// offload-bundle id longer than its section, a gfx target of control bytes and a FIFO in place
// of a library each end in a refusal or a finite result, never a wild read or a hang.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "compat/gpu_binary.h"
#include "test_support.h"

namespace trainlock {
namespace {

template <typename T>
void Put(std::string& bytes, size_t at, T value) {
  if (bytes.size() < at + sizeof(T)) bytes.resize(at + sizeof(T), '\0');
  std::memcpy(bytes.data() + at, &value, sizeof(T));
}

template <typename T>
std::string Bytes(T value) {
  std::string out;
  Put(out, 0, value);
  return out;
}

using Sections = std::vector<std::pair<std::string, std::string>>;

// A 64-bit little-endian ELF holding `sections` and a .shstrtab, its section table last.
std::string Elf(Sections sections) {
  std::string names(1, '\0');
  std::vector<uint32_t> name_at;
  for (const auto& [name, data] : sections) {
    name_at.push_back(static_cast<uint32_t>(names.size()));
    names += name + '\0';
  }
  name_at.push_back(static_cast<uint32_t>(names.size()));
  names += std::string(".shstrtab") + '\0';
  sections.emplace_back(".shstrtab", names);
  std::string elf(64, '\0');
  std::string table(64, '\0');  // the null section
  for (size_t i = 0; i < sections.size(); ++i) {
    elf.resize((elf.size() + 7) / 8 * 8, '\0');
    std::string header(64, '\0');
    Put<uint32_t>(header, 0, name_at[i]);
    Put<uint32_t>(header, 4, 1);  // SHT_PROGBITS
    Put<uint64_t>(header, 0x18, elf.size());
    Put<uint64_t>(header, 0x20, sections[i].second.size());
    table += header;
    elf += sections[i].second;
  }
  elf.resize((elf.size() + 7) / 8 * 8, '\0');
  std::memcpy(elf.data(),
              "\x7f"
              "ELF\x02\x01\x01",
              7);
  Put<uint64_t>(elf, 0x28, elf.size());  // e_shoff
  Put<uint16_t>(elf, 0x3A, 64);          // e_shentsize
  Put<uint16_t>(elf, 0x3C, static_cast<uint16_t>(sections.size() + 1));
  Put<uint16_t>(elf, 0x3E, static_cast<uint16_t>(sections.size()));  // .shstrtab
  return elf + table;
}

// A fat-binary entry header: kind (1 PTX, 2 SASS), arch, header size and padded payload size.
std::string FatbinEntry(uint16_t kind, uint32_t arch, uint64_t padded, const std::string& payload) {
  std::string entry(64, '\0');
  Put<uint16_t>(entry, 0, kind);
  Put<uint32_t>(entry, 4, 64);
  Put<uint64_t>(entry, 8, padded);
  Put<uint16_t>(entry, 26, 9);  // PTX ISA 9.0
  Put<uint32_t>(entry, 28, arch);
  return entry + payload;
}

std::string Fatbin(const std::string& entries) {
  std::string header(16, '\0');
  Put<uint32_t>(header, 0, 0xBA55ED50);
  Put<uint16_t>(header, 4, 1);
  Put<uint16_t>(header, 6, 16);
  Put<uint64_t>(header, 8, entries.size());
  return header + entries;
}

// An offload bundle of one entry with `id`, whose id length field says `id_length`.
std::string Bundle(const std::string& id, uint64_t id_length) {
  return "__CLANG_OFFLOAD_BUNDLE__" + Bytes<uint64_t>(1) + Bytes<uint64_t>(0) + Bytes<uint64_t>(0) +
         Bytes<uint64_t>(id_length) + id;
}

TEST(GpuBinaryHostile, TheBuilderMakesFilesTheInspectorReads) {
  GpuBinaryInfo info = InspectGpuBinaryBytes(
      Elf({{".nv_fatbin", Fatbin(FatbinEntry(2, 80, 8, "cubin...") + FatbinEntry(1, 90, 0, ""))},
           {".hip_fatbin", Bundle("hipv4-amdgcn-amd-amdhsa--gfx90a", 31)}}),
      "lib.so");
  EXPECT_EQ(info.sass, std::vector<int>{80});
  ASSERT_EQ(info.ptx.size(), 1u);
  EXPECT_EQ(info.ptx[0].arch, 90);
  EXPECT_EQ(info.gfx, std::vector<std::string>{"gfx90a"});
}

TEST(GpuBinaryHostile, ASectionTableOffsetThatWrapsPastTheEndIsRefused) {
  std::string elf = Elf({{".nv_fatbin", Fatbin(FatbinEntry(2, 80, 0, ""))}});
  Put<uint64_t>(elf, 0x28, UINT64_MAX - 63);  // + one 64-byte header wraps to 0
  try {
    InspectGpuBinaryBytes(elf, "lib.so");
    FAIL() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "lib.so: truncated or malformed ELF section table");
  }
}

TEST(GpuBinaryHostile, ASectionWhoseEndWrapsAroundIsSkipped) {
  std::string elf = Elf({{".nv_fatbin", Fatbin(FatbinEntry(2, 80, 0, ""))}});
  uint64_t table = 0;
  std::memcpy(&table, elf.data() + 0x28, sizeof table);
  Put<uint64_t>(elf, table + 64 + 0x20, UINT64_MAX);  // the fatbin section's size
  EXPECT_FALSE(InspectGpuBinaryBytes(elf, "lib.so").has_gpu_code());
}

TEST(GpuBinaryHostile, AFatbinEntrySizeThatWrapsBackToItselfEndsTheScan) {
  // header 64 + padded (2^64 - 64) is 0 modulo 2^64: the scan used to stay on this entry.
  GpuBinaryInfo info = InspectGpuBinaryBytes(
      Elf({{".nv_fatbin", Fatbin(FatbinEntry(2, 86, UINT64_MAX - 63, ""))}}), "lib.so");
  EXPECT_EQ(info.sass, std::vector<int>{86});
}

TEST(GpuBinaryHostile, AFatbinContainerSizeThatWrapsAroundEndsAtTheSection) {
  std::string fatbin = Fatbin(FatbinEntry(2, 80, 0, ""));
  Put<uint64_t>(fatbin, 8, UINT64_MAX - 8);
  GpuBinaryInfo info = InspectGpuBinaryBytes(Elf({{".nv_fatbin", fatbin}}), "lib.so");
  EXPECT_EQ(info.sass, std::vector<int>{80});
  EXPECT_EQ(info.fatbin_containers, 1);
}

TEST(GpuBinaryHostile, AnOffloadBundleIdLongerThanItsSectionEndsTheScan) {
  GpuBinaryInfo info = InspectGpuBinaryBytes(
      Elf({{".hip_fatbin", Bundle("hipv4-amdgcn-amd-amdhsa--gfx90a", UINT64_MAX - 10)}}), "lib.so");
  EXPECT_TRUE(info.gfx.empty());
}

TEST(GpuBinaryHostile, AGfxTargetOfControlBytesIsNotReported) {
  const std::string id = "hipv4-amdgcn-amd-amdhsa--gfx\x1b[2J\xff";
  GpuBinaryInfo info =
      InspectGpuBinaryBytes(Elf({{".hip_fatbin", Bundle(id, id.size())}}), "lib.so");
  EXPECT_TRUE(info.gfx.empty());
}

TEST(GpuBinaryHostile, AFifoIsRefusedWithoutWaitingForAWriter) {
  testing::TempDir dir;
  const auto fifo = dir.path() / "lib.so";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    InspectGpuBinary(fifo);
    FAIL() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), fifo.string() + ": not a regular file");
  }
}

}  // namespace
}  // namespace trainlock
