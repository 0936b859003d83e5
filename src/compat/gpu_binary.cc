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

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>

namespace trainlock {
namespace {

constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr std::string_view kBundleMagic = "__CLANG_OFFLOAD_BUNDLE__";

template <typename T>
T Read(std::string_view data, size_t at) {
  T value{};
  if (at + sizeof(T) <= data.size()) std::memcpy(&value, data.data() + at, sizeof(T));
  return value;
}

struct Section {
  std::string name;
  uint64_t offset = 0, size = 0;
};

std::vector<Section> ElfSections(std::string_view data, const std::string& where) {
  if (data.size() < 64 || data.substr(0, 4) !=
                              "\x7f"
                              "ELF") {
    throw std::runtime_error(where + ": not an ELF file");
  }
  if (data[4] != 2 || data[5] != 1)
    throw std::runtime_error(where + ": not a 64-bit little-endian ELF file");
  const uint64_t shoff = Read<uint64_t>(data, 0x28);
  const uint16_t shentsize = Read<uint16_t>(data, 0x3A), shnum = Read<uint16_t>(data, 0x3C),
                 shstrndx = Read<uint16_t>(data, 0x3E);
  if (shentsize < 64 || shoff + uint64_t{shnum} * shentsize > data.size() || shstrndx >= shnum) {
    throw std::runtime_error(where + ": truncated or malformed ELF section table");
  }
  auto header = [&](uint16_t i) { return shoff + uint64_t{i} * shentsize; };
  const uint64_t strtab = Read<uint64_t>(data, header(shstrndx) + 0x18);
  std::vector<Section> sections;
  for (uint16_t i = 0; i < shnum; ++i) {
    Section s;
    uint32_t name = Read<uint32_t>(data, header(i));
    if (strtab + name < data.size()) {
      std::string_view rest = data.substr(strtab + name);
      s.name = std::string(rest.substr(0, rest.find('\0')));
    }
    uint32_t type = Read<uint32_t>(data, header(i) + 4);
    s.offset = Read<uint64_t>(data, header(i) + 0x18);
    s.size = Read<uint64_t>(data, header(i) + 0x20);
    if (type == 8 /* SHT_NOBITS */ || s.offset > data.size() || s.size > data.size() - s.offset)
      continue;
    sections.push_back(s);
  }
  return sections;
}

void ReadFatbins(std::string_view data, const Section& s, GpuBinaryInfo& info, std::set<int>& sass,
                 std::set<std::pair<int, int>>& ptx_isa) {
  const uint64_t end = s.offset + s.size;
  uint64_t at = s.offset;
  while (at + 16 <= end) {
    if (Read<uint32_t>(data, at) != kFatbinMagic) {
      at += 8;  // containers are 8-byte aligned; skip padding between them
      continue;
    }
    ++info.fatbin_containers;
    const uint64_t container_end = std::min(end, at + 16 + Read<uint64_t>(data, at + 8));
    uint64_t entry = at + Read<uint16_t>(data, at + 6);
    while (entry + 32 <= container_end) {
      const uint16_t kind = Read<uint16_t>(data, entry);
      const uint32_t header = Read<uint32_t>(data, entry + 4);
      const uint64_t padded = Read<uint64_t>(data, entry + 8);
      const int minor = Read<uint16_t>(data, entry + 24), major = Read<uint16_t>(data, entry + 26);
      const int arch = static_cast<int>(Read<uint32_t>(data, entry + 28));
      if (header == 0) break;
      if (kind == 1) {
        ptx_isa.insert({arch, major * 100 + minor});
      } else if (kind == 2 || kind == 0x10) {
        sass.insert(arch);
      }
      entry += header + padded;
    }
    at = std::max(container_end, at + 16);
  }
}

void ReadOffloadBundle(std::string_view data, const Section& s, std::set<std::string>& gfx) {
  uint64_t at = s.offset;
  const uint64_t end = s.offset + s.size;
  while (at + kBundleMagic.size() + 8 <= end) {
    if (data.substr(at, kBundleMagic.size()) != kBundleMagic) {
      at += 1;
      continue;
    }
    const uint64_t bundle = at;
    uint64_t count = Read<uint64_t>(data, at + kBundleMagic.size());
    uint64_t p = at + kBundleMagic.size() + 8;
    uint64_t bundle_end = bundle;
    for (uint64_t i = 0; i < count && p + 24 <= end; ++i) {
      uint64_t offset = Read<uint64_t>(data, p), size = Read<uint64_t>(data, p + 8);
      uint64_t id_length = Read<uint64_t>(data, p + 16);
      if (p + 24 + id_length > end) break;
      std::string id(data.substr(p + 24, id_length));
      p += 24 + id_length;
      bundle_end = std::max(bundle_end, bundle + offset + size);
      if (size_t dashes = id.rfind("--");
          dashes != std::string::npos && id.find("amdgcn") != std::string::npos) {
        gfx.insert(id.substr(dashes + 2));
      }
    }
    at = std::max(bundle_end, p);
  }
}

}  // namespace

// A read-only memory map of a whole regular file (LibTorch's CUDA library is over a gigabyte;
// no library is near kMaxBytes). Opened without blocking, so that a FIFO is refused, not
// waited on; a device or a /proc file has no size to map and is refused too.
class MappedFile {
 public:
  static constexpr uint64_t kMaxBytes = uint64_t{16} << 30;

  explicit MappedFile(const std::filesystem::path& file) {
    int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(file.string() + ": cannot read: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<uint64_t>(st.st_size) > kMaxBytes) {
      ::close(fd);
      throw std::runtime_error(file.string() + (S_ISREG(st.st_mode)
                                                    ? ": larger than 16 GiB; not a library"
                                                    : ": not a regular file"));
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (data_ == MAP_FAILED) data_ = nullptr;
    }
    ::close(fd);
    if (size_ > 0 && !data_) throw std::runtime_error(file.string() + ": cannot map");
  }
  ~MappedFile() {
    if (data_) ::munmap(data_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view view() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

GpuBinaryInfo InspectGpuBinary(const std::filesystem::path& file) {
  MappedFile mapped(file);
  const std::string_view data = mapped.view();
  GpuBinaryInfo info;
  std::set<int> sass;
  std::set<std::pair<int, int>> ptx;
  std::set<std::string> gfx;
  for (const Section& s : ElfSections(data, file.string())) {
    if (s.name == ".nv_fatbin" || s.name == "__nv_relfatbin") ReadFatbins(data, s, info, sass, ptx);
    if (s.name == ".hip_fatbin") ReadOffloadBundle(data, s, gfx);
  }
  info.sass.assign(sass.begin(), sass.end());
  for (const auto& [arch, isa] : ptx) info.ptx.push_back({arch, isa / 100, isa % 100});
  info.gfx.assign(gfx.begin(), gfx.end());
  return info;
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
