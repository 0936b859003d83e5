// The safetensors header check; see safetensors_header.h and the format description at
// huggingface.co/docs/safetensors.
#include "engines/native/safetensors_header.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "base/diagnostic.h"
#include "base/json_file.h"

namespace trainlock::validate {
namespace {

using nlohmann::json;

struct DtypeSize {
  const char* name;
  size_t bytes;
};

constexpr DtypeSize kDtypeSizes[] = {
    {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
    {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1},
};

// The 8-byte little-endian header length, checked against the file and the limit.
uint64_t HeaderLength(std::string_view file, const std::string& where) {
  if (file.size() < 8)
    throw SafetensorsError(where + ": truncated: shorter than the 8-byte header length");
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(file[i]);
  if (length > file.size() - 8) {
    throw SafetensorsError(where + ": header length " + std::to_string(length) +
                           " exceeds the file (" + std::to_string(file.size()) + " bytes)");
  }
  if (length > kMaxSafetensorsHeaderBytes) {
    throw SafetensorsError(where + ": header length " + std::to_string(length) +
                           " is over the limit of " + std::to_string(kMaxSafetensorsHeaderBytes) +
                           " bytes");
  }
  return length;
}

// The shape, with its element count in *elements; refuses dimensions that are not
// non-negative integers and products beyond kMaxSafetensorsElements, checked before each
// multiplication so that it cannot wrap.
std::vector<int64_t> ShapeOf(const json& shape, const std::string& at, uint64_t* elements) {
  if (shape.size() > kMaxSafetensorsRank)
    throw SafetensorsError(at + ": shape has more than " + std::to_string(kMaxSafetensorsRank) +
                           " dimensions");
  std::vector<int64_t> dims;
  uint64_t product = 1;
  for (const json& dim : shape) {
    if (!dim.is_number_unsigned())
      throw SafetensorsError(at + ": shape must hold non-negative integers");
    const auto n = dim.get<uint64_t>();
    if (n > kMaxSafetensorsElements || (n != 0 && product > kMaxSafetensorsElements / n))
      throw SafetensorsError(at + ": shape is too large (over 2^40 elements)");
    product *= n;
    dims.push_back(static_cast<int64_t>(n));
  }
  *elements = product;
  return dims;
}

// One entry of the header, checked against the data section's size.
SafetensorsEntry EntryOf(const std::string& name, const json& info, uint64_t data_size,
                         const std::string& where) {
  const std::string at = where + ": tensor " + Quoted(name);
  auto dtype = info.is_object() ? info.find("dtype") : info.end();
  auto shape = info.is_object() ? info.find("shape") : info.end();
  auto offsets = info.is_object() ? info.find("data_offsets") : info.end();
  if (!info.is_object() || dtype == info.end() || !dtype->is_string() || shape == info.end() ||
      !shape->is_array() || offsets == info.end() || !offsets->is_array() || offsets->size() != 2) {
    throw SafetensorsError(at + ": entry needs dtype, shape and data_offsets");
  }
  SafetensorsEntry entry;
  entry.name = name;
  entry.dtype = dtype->get<std::string>();
  const size_t element = SafetensorsElementSize(entry.dtype);
  if (element == 0) throw SafetensorsError(at + ": unsupported dtype " + Quoted(entry.dtype));
  uint64_t elements = 0;
  entry.shape = ShapeOf(*shape, at, &elements);
  if (!(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
    throw SafetensorsError(at + ": data_offsets must be non-negative integers");
  entry.begin = (*offsets)[0].get<uint64_t>();
  entry.end = (*offsets)[1].get<uint64_t>();
  if (entry.begin > entry.end || entry.end > data_size) {
    throw SafetensorsError(at + ": data_offsets [" + std::to_string(entry.begin) + ", " +
                           std::to_string(entry.end) + ") outside the " +
                           std::to_string(data_size) + "-byte data section (truncated file?)");
  }
  const uint64_t expected = elements * element;  // at most 2^40 * 8: no overflow
  if (entry.end - entry.begin != expected) {
    throw SafetensorsError(at + ": " + std::to_string(entry.end - entry.begin) + " bytes for a " +
                           entry.dtype + " tensor of shape " + shape->dump() + " that needs " +
                           std::to_string(expected));
  }
  return entry;
}

// The data section must be exactly the tensors' bytes, with no gaps or overlaps.
void CheckCoverage(std::vector<std::pair<uint64_t, uint64_t>> ranges, uint64_t data_size,
                   const std::string& where) {
  std::sort(ranges.begin(), ranges.end());
  uint64_t cursor = 0;
  for (const auto& [begin, end] : ranges) {
    if (begin != cursor) throw SafetensorsError(where + ": tensor data overlaps or leaves a gap");
    cursor = end;
  }
  if (cursor != data_size) {
    throw SafetensorsError(where + ": " + std::to_string(data_size - cursor) +
                           " bytes after the last tensor");
  }
}

}  // namespace

size_t SafetensorsElementSize(std::string_view dtype) {
  for (const DtypeSize& d : kDtypeSizes) {
    if (dtype == d.name) return d.bytes;
  }
  return 0;
}

SafetensorsHeader ParseSafetensorsHeader(std::string_view file, const std::string& where) {
  const uint64_t length = HeaderLength(file, where);
  std::string problem;
  std::optional<json> header = TryParseJsonText(file.substr(8, length), &problem);
  if (!header) throw SafetensorsError(where + ": header refused: " + problem);
  if (!header->is_object()) throw SafetensorsError(where + ": header is not a JSON object");

  SafetensorsHeader out;
  out.data_start = 8 + length;
  const uint64_t data_size = file.size() - out.data_start;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, info] : header->items()) {
    if (name == "__metadata__") continue;
    out.tensors.push_back(EntryOf(name, info, data_size, where));
    ranges.emplace_back(out.tensors.back().begin, out.tensors.back().end);
  }
  CheckCoverage(std::move(ranges), data_size, where);
  return out;
}

}  // namespace trainlock::validate
