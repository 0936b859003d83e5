// What GPU code a shared library carries: the SASS architectures and PTX versions in its
// CUDA fat binaries (.nv_fatbin) and the gfx targets in its HIP offload bundles
// (.hip_fatbin), read from the ELF sections directly (no cuobjdump, no driver).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace trainlock {

struct PtxEntry {
  int arch = 0;       // compute_90 -> 90
  int isa_major = 0;  // PTX ISA version, e.g. 9.0 (CUDA 13.0)
  int isa_minor = 0;
};

struct GpuBinaryInfo {
  std::vector<int> sass;         // sm numbers with machine code, sorted, unique
  std::vector<PtxEntry> ptx;     // sorted by arch, unique
  std::vector<std::string> gfx;  // HIP targets ("gfx90a", "gfx942:xnack-"), sorted, unique
  int fatbin_containers = 0;
  bool has_gpu_code() const { return !sass.empty() || !ptx.empty() || !gfx.empty(); }
};

// Throws std::runtime_error naming the file when it is unreadable or not a 64-bit
// little-endian ELF file.
GpuBinaryInfo InspectGpuBinary(const std::filesystem::path& file);

// InspectGpuBinary over bytes already in memory; `where` names them in errors. Every offset
// and size in the bytes is checked against their end before use, so any input ends in a
// result or a std::runtime_error, never a read outside them or an endless loop.
GpuBinaryInfo InspectGpuBinaryBytes(std::string_view data, const std::string& where);

// Whether a device of compute capability `sm` (90 for 9.0) can run this code: SASS of the same
// major and a minor no higher (arch-specific "a" cubins are not told apart here), or PTX for
// `sm` or older that the driver (its CUDA version, 13000 for 13.0) can JIT. `why` explains.
bool CudaCodeRunsOn(const GpuBinaryInfo& info, int sm, int driver_cuda_version, std::string* why);

// The CUDA release that introduced a PTX ISA version (ISA 9.0 -> 13000, 8.8 -> 12090).
int CudaVersionForPtxIsa(int major, int minor);

}  // namespace trainlock
