// ELF section walking and the fatbin / offload-bundle formats; see gpu_binary.h.
//
// CUDA fat binary container (little-endian): a 16-byte header {u32 magic 0xBA55ED50,
// u16 version 1, u16 header size 16, u64 size of the entries that follow}, then entries
// {u16 kind (1 PTX, 2 ELF cubin), u16, u32 entry header size, u64 padded payload size,
// u32 payload size, u32, u16 version minor, u16 version major, u32 arch, ...} each followed
// by its payload. Containers follow one another in the section.
// HIP offload bundle: "__CLANG_OFFLOAD_BUNDLE__", u64 entry count, then per entry u64 offset,
// u64 size, u64 id length and the id ("hipv4-amdgcn-amd-amdhsa--gfx90a").
#include "compat/gpu_binary.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>
#include <tuple>

#include "base/failure.h"
#include "base/mapped_file.h"

namespace trainlock {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr std::string_view kBundleMagic = "__CLANG_OFFLOAD_BUNDLE__";

// Whether [offset, offset + size) lies inside `limit` bytes; never overflows, so a hostile
// offset near 2^64 cannot wrap around into range.
bool Within(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

// A little-endian value at `at`, or 0 when it does not lie inside `data`.
template <typename T>
T Read(std::string_view data, uint64_t at) {
  T value{};
  if (Within(at, sizeof(T), data.size())) std::memcpy(&value, data.data() + at, sizeof(T));
  return value;
}

// Architecture numbers outside this range are not real devices (garbage in a damaged file).
bool IsArchNumber(uint32_t arch) {
  return arch >= 10 && arch < 10000;
}

// The target of an offload-bundle id ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-" -> its part
// after "--"), or "" when the id is not an AMD GPU target of plain characters (it is printed
// and written to JSON, so a damaged file must not bring control bytes or invalid UTF-8).
std::string GfxTarget(std::string_view id) {
  const size_t dashes = id.rfind("--");
  if (dashes == std::string_view::npos || id.find("amdgcn") == std::string_view::npos) return "";
  std::string_view target = id.substr(dashes + 2);
  if (target.empty() || target.size() > 64) return "";
  for (unsigned char c : target) {
    if (!std::isalnum(c) && c != ':' && c != '+' && c != '-' && c != '_' && c != '.') return "";
  }
  return std::string(target);
}

struct Section {
  std::string name;
  uint64_t offset = 0, size = 0;
};

std::vector<Section> ElfSections(std::string_view data, const std::string& where) {
  if (data.size() < 64 || data.substr(0, 4) !=
                              "\x7f"
                              "ELF") {
    throw Failure(where + ": not an ELF file", kExitBadInput);
  }
  if (data[4] != 2 || data[5] != 1)
    throw Failure(where + ": not a 64-bit little-endian ELF file", kExitBadInput);
  const uint64_t shoff = Read<uint64_t>(data, 0x28);
  const uint16_t shentsize = Read<uint16_t>(data, 0x3A), shnum = Read<uint16_t>(data, 0x3C),
                 shstrndx = Read<uint16_t>(data, 0x3E);
  if (shentsize < 64 || !Within(shoff, uint64_t{shnum} * shentsize, data.size()) ||
      shstrndx >= shnum) {
    throw Failure(where + ": truncated or malformed ELF section table", kExitBadInput);
  }
  auto header = [&](uint16_t i) { return shoff + uint64_t{i} * shentsize; };
  // The section-name string table; names outside it stay empty.
  const uint64_t strtab_offset = Read<uint64_t>(data, header(shstrndx) + 0x18);
  const uint64_t strtab_size = Read<uint64_t>(data, header(shstrndx) + 0x20);
  const std::string_view strtab = Within(strtab_offset, strtab_size, data.size())
                                      ? data.substr(strtab_offset, strtab_size)
                                      : std::string_view();
  std::vector<Section> sections;
  for (uint16_t i = 0; i < shnum; ++i) {
    Section s;
    const uint32_t name = Read<uint32_t>(data, header(i));
    if (name < strtab.size()) {
      std::string_view rest = strtab.substr(name);
      s.name = std::string(rest.substr(0, rest.find('\0')));
    }
    const uint32_t type = Read<uint32_t>(data, header(i) + 4);
    s.offset = Read<uint64_t>(data, header(i) + 0x18);
    s.size = Read<uint64_t>(data, header(i) + 0x20);
    if (type == 8 /* SHT_NOBITS */ || !Within(s.offset, s.size, data.size())) continue;
    sections.push_back(s);
  }
  return sections;
}

// Every fat-binary container in a section. Offsets are relative to the section, each step
// moves forward by at least 8 bytes and every size is checked before it is added.
void ReadFatbins(std::string_view section, GpuBinaryInfo& info, std::set<int>& sass,
                 std::set<std::tuple<int, int, int>>& ptx) {
  uint64_t at = 0;
  while (Within(at, 16, section.size())) {
    if (Read<uint32_t>(section, at) != kFatbinMagic) {
      at += 8;  // containers are 8-byte aligned; skip padding between them
      continue;
    }
    ++info.fatbin_containers;
    const uint64_t body = std::min(Read<uint64_t>(section, at + 8), section.size() - at - 16);
    const uint64_t container_end = at + 16 + body;
    uint64_t entry = at + Read<uint16_t>(section, at + 6);
    while (entry > at && Within(entry, 32, container_end)) {
      const uint16_t kind = Read<uint16_t>(section, entry);
      const uint32_t header = Read<uint32_t>(section, entry + 4);
      const uint64_t padded = Read<uint64_t>(section, entry + 8);
      const int minor = Read<uint16_t>(section, entry + 24),
                major = Read<uint16_t>(section, entry + 26);
      const uint32_t arch = Read<uint32_t>(section, entry + 28);
      if (header < 32) break;  // an entry header holds at least the fields read above
      if (IsArchNumber(arch)) {
        if (kind == 1) ptx.insert({static_cast<int>(arch), major, minor});
        if (kind == 2 || kind == 0x10) sass.insert(static_cast<int>(arch));
      }
      if (!Within(entry, header, container_end) || padded > container_end - entry - header) break;
      entry += header + padded;
    }
    at = container_end;
  }
}

// Every offload bundle in a section: ids are read only where they lie inside it, and the
// scan resumes after the bundle's entries and any code objects inside the section.
void ReadOffloadBundles(std::string_view section, std::set<std::string>& gfx) {
  constexpr uint64_t kHeader = kBundleMagic.size() + 8;  // magic, entry count
  for (uint64_t at = section.find(kBundleMagic);
       at != std::string_view::npos && Within(at, kHeader, section.size());
       at = section.find(kBundleMagic, at)) {
    const uint64_t count = Read<uint64_t>(section, at + kBundleMagic.size());
    uint64_t p = at + kHeader, bundle_end = p;
    for (uint64_t i = 0; i < count && Within(p, 24, section.size()); ++i) {
      const uint64_t offset = Read<uint64_t>(section, p), size = Read<uint64_t>(section, p + 8);
      const uint64_t id_length = Read<uint64_t>(section, p + 16);
      if (!Within(p + 24, id_length, section.size())) break;
      if (std::string target = GfxTarget(section.substr(p + 24, id_length)); !target.empty())
        gfx.insert(target);
      p += 24 + id_length;
      if (Within(offset, size, section.size() - at))
        bundle_end = std::max(bundle_end, at + offset + size);
    }
    at = std::max(bundle_end, p);
  }
}

}  // namespace

GpuBinaryInfo InspectGpuBinaryBytes(std::string_view data, const std::string& where) {
  GpuBinaryInfo info;
  std::set<int> sass;
  std::set<std::tuple<int, int, int>> ptx;
  std::set<std::string> gfx;
  for (const Section& s : ElfSections(data, where)) {
    const std::string_view section = data.substr(s.offset, s.size);
    if (s.name == ".nv_fatbin" || s.name == "__nv_relfatbin") ReadFatbins(section, info, sass, ptx);
    if (s.name == ".hip_fatbin") ReadOffloadBundles(section, gfx);
  }
  info.sass.assign(sass.begin(), sass.end());
  for (const auto& [arch, major, minor] : ptx) info.ptx.push_back({arch, major, minor});
  info.gfx.assign(gfx.begin(), gfx.end());
  return info;
}

GpuBinaryInfo InspectGpuBinary(const std::filesystem::path& file) {
  // LibTorch's CUDA library is over a gigabyte; no library is near 16 GiB.
  const MappedFile mapped(file, {uint64_t{16} << 30, "larger than 16 GiB; not a library", true});
  return InspectGpuBinaryBytes(mapped.view(), file.string());
}

int CudaVersionForPtxIsa(int major, int minor) {
  // PTX ISA 7.x shipped with CUDA 11.x, 8.x with 12.x, 9.x with 13.x (same minor).
  if (major >= 7) return (major + 4) * 1000 + minor * 10;
  return 0;
}

bool CudaCodeRunsOn(const GpuBinaryInfo& info, int sm, int driver_cuda_version, std::string* why) {
  for (int s : info.sass) {
    if (s / 10 == sm / 10 && s <= sm) {
      if (why) *why = "SASS sm_" + std::to_string(s) + " runs on sm_" + std::to_string(sm);
      return true;
    }
  }
  std::string too_new;
  for (const PtxEntry& p : info.ptx) {
    if (p.arch > sm) continue;
    int needs = CudaVersionForPtxIsa(p.isa_major, p.isa_minor);
    if (driver_cuda_version == 0 || needs <= driver_cuda_version) {
      if (why)
        *why = "PTX compute_" + std::to_string(p.arch) + " (ISA " + std::to_string(p.isa_major) +
               "." + std::to_string(p.isa_minor) + ") JIT-compiles for sm_" + std::to_string(sm);
      return true;
    }
    too_new = "PTX compute_" + std::to_string(p.arch) + " needs a driver for CUDA " +
              std::to_string(needs / 1000) + "." + std::to_string(needs % 1000 / 10);
  }
  if (why) {
    std::string have;
    for (int s : info.sass) have += (have.empty() ? "" : ", ") + ("sm_" + std::to_string(s));
    for (const PtxEntry& p : info.ptx)
      have += (have.empty() ? "" : ", ") + ("compute_" + std::to_string(p.arch));
    *why = "no code for sm_" + std::to_string(sm) + " (has " +
           (have.empty() ? "no CUDA code" : have) + ")" + (too_new.empty() ? "" : "; " + too_new);
  }
  return false;
}

}  // namespace trainlock
