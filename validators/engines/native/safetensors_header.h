// The safetensors header (an 8-byte little-endian length, then a JSON object of
// name -> {dtype, shape, data_offsets} and an optional __metadata__), read and checked without
// LibTorch, so that the fuzz build (which has no LibTorch) exercises exactly the code that
// guards the validator's reads of model and checkpoint files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace trainlock::validate {

// A malformed or unreadable file; what() names the file and the problem.
class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Headers larger than this are refused (the Rust implementation's limit is 100 MB).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = uint64_t{100} << 20;
// A tensor may have at most this many elements and this many dimensions.
inline constexpr uint64_t kMaxSafetensorsElements = uint64_t{1} << 40;
inline constexpr size_t kMaxSafetensorsRank = 64;

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // "F32", "BF16", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range within the data section
};

struct SafetensorsHeader {
  uint64_t data_start = 0;                // 8 + the header's length: where the data begins
  std::vector<SafetensorsEntry> tensors;  // in name order
};

// Bytes per element of a safetensors dtype ("F32" -> 4), 0 for one the validator does not
// read.
size_t SafetensorsElementSize(std::string_view dtype);

// Checks the header of `file`, a whole safetensors file's bytes: the length fits the file and
// the 100 MB limit; the header is a JSON object within base/json_limits.h's limits (so a name
// given twice is refused); each entry has a supported dtype, a shape of non-negative integers
// whose product fits kMaxSafetensorsElements, and data_offsets inside the data section that
// match dtype and shape; and the tensors cover the data section exactly, without gaps or
// overlaps. Throws SafetensorsError naming `where` and the problem.
SafetensorsHeader ParseSafetensorsHeader(std::string_view file, const std::string& where);

}  // namespace trainlock::validate
