// See state_file.h. The file is mapped, its header checked by the same parser that guards the
// validator's model reads (safetensors_header.h, fuzzed), and its tensors digested on several
// threads: a pilot's state is about 16 GB and is read from the page cache it was just written to.
#include "coordinator/state_file.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "base/failure.h"
#include "base/mapped_file.h"
#include "base/sha256.h"
#include "engines/native/safetensors_header.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

// No state near this: a pilot's is 16 GB, an 8B model's with AdamW about 100 GB.
constexpr uint64_t kMaxStateFileBytes = uint64_t{1} << 40;

const MapLimits kStateLimits{kMaxStateFileBytes, "larger than 1 TiB; not a training state",
                             /*follow_symlink=*/false};

std::string DigestHead(const SafetensorsEntry& t) {
  std::string head = t.dtype + "|";
  for (size_t i = 0; i < t.shape.size(); ++i) head += (i ? "," : "") + std::to_string(t.shape[i]);
  return head + "|";
}

std::string DigestTensor(std::string_view data, const SafetensorsEntry& t) {
  Sha256 hash;
  hash.Update(DigestHead(t));
  hash.Update(data.substr(t.begin, t.end - t.begin));
  return hash.HexDigest();
}

// One element of dtype `dtype` at `p`, as a double (BOOL and integers exactly up to 2^53).
double Element(std::string_view dtype, const char* p) {
  auto load = [p](auto value) {
    std::memcpy(&value, p, sizeof value);
    return value;
  };
  if (dtype == "F64") return load(double{});
  if (dtype == "F32") return load(float{});
  if (dtype == "BF16") {
    const uint32_t bits = uint32_t{load(uint16_t{})} << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
  if (dtype == "F16") {
    const uint16_t h = load(uint16_t{});
    const int exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (exponent == 0x1F)
      return mantissa ? std::numeric_limits<double>::quiet_NaN()
                      : sign * std::numeric_limits<double>::infinity();
    if (exponent == 0) return sign * std::ldexp(mantissa, -24);
    return sign * std::ldexp(mantissa + 1024, exponent - 25);
  }
  if (dtype == "I64") return static_cast<double>(load(int64_t{}));
  if (dtype == "I32") return load(int32_t{});
  if (dtype == "I16") return load(int16_t{});
  if (dtype == "I8") return load(int8_t{});
  return static_cast<unsigned char>(*p);  // U8, BOOL
}

// max |a - b| over two tensors of one dtype and shape; NaN on either side counts as infinity.
double MaxAbsDifference(std::string_view a, std::string_view b, std::string_view dtype) {
  const size_t width = SafetensorsElementSize(dtype);
  double worst = 0;
  for (size_t i = 0; i + width <= a.size(); i += width) {
    if (std::memcmp(a.data() + i, b.data() + i, width) == 0) continue;
    const double d = std::fabs(Element(dtype, a.data() + i) - Element(dtype, b.data() + i));
    worst = std::max(worst, std::isnan(d) ? std::numeric_limits<double>::infinity() : d);
  }
  return worst;
}

struct ReadState {
  std::unique_ptr<MappedFile> file;
  SafetensorsHeader header;
};

ReadState Open(const fs::path& file) {
  ReadState s;
  s.file = std::make_unique<MappedFile>(file, kStateLimits);
  s.header = ParseSafetensorsHeader(s.file->view(), file.string());
  return s;
}

std::string_view Bytes(const ReadState& s, const SafetensorsEntry& t) {
  return s.file->view().substr(s.header.data_start + t.begin, t.end - t.begin);
}

}  // namespace

StateDigest DigestStateFile(const fs::path& file, unsigned threads) {
  StateDigest out;
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec))) {
    out.problem = file.string() + " was not written";
    return out;
  }
  try {
    const ReadState s = Open(file);
    const std::string_view data = s.file->view().substr(s.header.data_start);
    std::vector<std::string> digests(s.header.tensors.size());
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < digests.size(); i = next++)
        digests[i] = DigestTensor(data, s.header.tensors[i]);
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < std::max(1u, threads); ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
    for (size_t i = 0; i < digests.size(); ++i)
      out.tensors[s.header.tensors[i].name] = std::move(digests[i]);
    out.bytes = s.file->view().size();
  } catch (const Failure& e) {
    out.problem = e.what();
  } catch (const SafetensorsError& e) {
    out.problem = e.what();
  }
  return out;
}

std::optional<double> MaxAbsStateDifference(const fs::path& a, const fs::path& b,
                                            std::string* first_different) {
  try {
    const ReadState sa = Open(a), sb = Open(b);
    std::map<std::string, const SafetensorsEntry*> in_b;
    for (const SafetensorsEntry& t : sb.header.tensors) in_b[t.name] = &t;
    double worst = 0;
    for (const SafetensorsEntry& t : sa.header.tensors) {
      const auto it = in_b.find(t.name);
      double d = std::numeric_limits<double>::infinity();
      if (it != in_b.end() && it->second->dtype == t.dtype && it->second->shape == t.shape)
        d = MaxAbsDifference(Bytes(sa, t), Bytes(sb, *it->second), t.dtype);
      if (d != 0 && first_different && first_different->empty()) *first_different = t.name;
      worst = std::max(worst, d);
    }
    return worst;
  } catch (const Failure&) {
    return std::nullopt;
  } catch (const SafetensorsError&) {
    return std::nullopt;
  }
}

}  // namespace trainlock::validate
