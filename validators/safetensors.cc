// safetensors reading and writing; see safetensors.h and the format description at
// huggingface.co/docs/safetensors.
#include "safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "sha256.h"

namespace trainlock::validate {
namespace {

// Headers larger than this are refused (the Rust implementation's limit is 100 MB).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct DtypeName {
  const char* name;
  at::ScalarType type;
};

constexpr DtypeName kDtypes[] = {
    {"F64", at::kDouble}, {"F32", at::kFloat}, {"F16", at::kHalf},  {"BF16", at::kBFloat16},
    {"I64", at::kLong},   {"I32", at::kInt},   {"I16", at::kShort}, {"I8", at::kChar},
    {"U8", at::kByte},    {"BOOL", at::kBool},
};

std::string Errno(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

class File {
 public:
  File(const std::filesystem::path& path, int flags) : path_(path) {
    fd_ = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error(Errno(path.string() + ": open"));
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  void WriteAll(const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      ssize_t n = ::write(fd_, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error(Errno(path_.string() + ": write"));
      p += n;
      size -= static_cast<size_t>(n);
    }
  }
  // Reads exactly `size` bytes at `offset`; false at a premature end of file.
  bool ReadAt(void* data, size_t size, uint64_t offset) {
    char* p = static_cast<char*>(data);
    while (size > 0) {
      ssize_t n = ::pread(fd_, p, std::min<size_t>(size, 1u << 30), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw SafetensorsError(Errno(path_.string() + ": read"));
      if (n == 0) return false;
      p += n;
      size -= static_cast<size_t>(n);
      offset += static_cast<uint64_t>(n);
    }
    return true;
  }
  void Sync() {
    if (::fsync(fd_) != 0) throw std::runtime_error(Errno(path_.string() + ": fsync"));
  }
  uint64_t Size() const {
    off_t end = ::lseek(fd_, 0, SEEK_END);
    if (end < 0) throw SafetensorsError(Errno(path_.string() + ": seek"));
    return static_cast<uint64_t>(end);
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

at::ScalarType ParseDtype(const std::string& name, const std::string& where) {
  for (const DtypeName& d : kDtypes) {
    if (name == d.name) return d.type;
  }
  throw SafetensorsError(where + ": unsupported dtype \"" + name + "\"");
}

}  // namespace

std::string SafetensorsDtype(at::ScalarType type) {
  for (const DtypeName& d : kDtypes) {
    if (type == d.type) return d.name;
  }
  throw std::runtime_error(std::string("safetensors cannot store dtype ") + c10::toString(type));
}

WrittenFile WriteSafetensors(const std::filesystem::path& file,
                             const std::vector<NamedTensor>& tensors,
                             const std::map<std::string, std::string>& metadata) {
  std::vector<const NamedTensor*> sorted;
  for (const NamedTensor& t : tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(),
            [](const NamedTensor* a, const NamedTensor* b) { return a->name < b->name; });

  std::vector<torch::Tensor> cpu;
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const NamedTensor* t : sorted) {
    torch::Tensor c = t->tensor.detach().to(torch::kCPU).contiguous();
    uint64_t bytes = static_cast<uint64_t>(c.numel()) * c.element_size();
    header[t->name] = {{"dtype", SafetensorsDtype(c.scalar_type())},
                       {"shape", c.sizes().vec()},
                       {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    cpu.push_back(std::move(c));
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // align the data to 8 bytes, as HF does
  uint64_t length = json.size();
  unsigned char prefix[8];
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<unsigned char>(length >> (8 * i));

  File out(file, O_WRONLY | O_CREAT | O_TRUNC);
  Sha256 hash;
  WrittenFile result;
  auto emit = [&](const void* data, size_t size) {
    out.WriteAll(data, size);
    hash.Update(data, size);
    result.bytes += size;
  };
  emit(prefix, sizeof prefix);
  emit(json.data(), json.size());
  for (const torch::Tensor& c : cpu)
    emit(c.data_ptr(), static_cast<size_t>(c.numel()) * c.element_size());
  out.Sync();
  result.sha256 = hash.HexDigest();
  return result;
}

std::map<std::string, torch::Tensor> ReadSafetensors(const std::filesystem::path& path) {
  const std::string where = path.string();
  std::optional<File> opened;
  try {
    opened.emplace(path, O_RDONLY);
  } catch (const std::runtime_error& e) {
    throw SafetensorsError(e.what());
  }
  File& in = *opened;
  const uint64_t file_size = in.Size();
  unsigned char prefix[8];
  if (file_size < 8 || !in.ReadAt(prefix, 8, 0)) {
    throw SafetensorsError(where + ": truncated: shorter than the 8-byte header length");
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | prefix[i];
  if (header_len > kMaxHeaderBytes || header_len > file_size - 8) {
    throw SafetensorsError(where + ": header length " + std::to_string(header_len) +
                           " exceeds the file (" + std::to_string(file_size) + " bytes)");
  }
  std::string text(header_len, '\0');
  in.ReadAt(text.data(), header_len, 8);
  nlohmann::json header = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) throw SafetensorsError(where + ": header is not a JSON object");

  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = file_size - data_start;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  std::map<std::string, torch::Tensor> tensors;
  for (auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    std::string at = where + ": tensor '" + name + "'";
    if (!info.is_object() || !info["dtype"].is_string() || !info["shape"].is_array() ||
        !info["data_offsets"].is_array() || info["data_offsets"].size() != 2) {
      throw SafetensorsError(at + ": entry needs dtype, shape and data_offsets");
    }
    at::ScalarType dtype = ParseDtype(info["dtype"].get<std::string>(), at);
    std::vector<int64_t> shape;
    uint64_t numel = 1;
    for (const auto& dim : info["shape"]) {
      if (!dim.is_number_unsigned() || dim.get<uint64_t>() > (uint64_t{1} << 40)) {
        throw SafetensorsError(at + ": shape must hold non-negative integers");
      }
      shape.push_back(dim.get<int64_t>());
      numel *= dim.get<uint64_t>();
      if (numel > (uint64_t{1} << 40)) throw SafetensorsError(at + ": shape is too large");
    }
    const auto& offsets = info["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
      throw SafetensorsError(at + ": data_offsets must be non-negative integers");
    }
    uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    uint64_t expected = numel * static_cast<uint64_t>(c10::elementSize(dtype));
    if (begin > end || end > data_size) {
      throw SafetensorsError(at + ": data_offsets [" + std::to_string(begin) + ", " +
                             std::to_string(end) + ") outside the " + std::to_string(data_size) +
                             "-byte data section (truncated file?)");
    }
    if (end - begin != expected) {
      throw SafetensorsError(at + ": " + std::to_string(end - begin) + " bytes for a " +
                             info["dtype"].get<std::string>() + " tensor of shape " +
                             info["shape"].dump() + " that needs " + std::to_string(expected));
    }
    torch::Tensor t = torch::empty(shape, torch::TensorOptions().dtype(dtype));
    if (!in.ReadAt(t.data_ptr(), expected, data_start + begin)) {
      throw SafetensorsError(at + ": truncated file");
    }
    ranges.emplace_back(begin, end);
    tensors.emplace(name, std::move(t));
  }
  // The data section must be exactly the tensors' bytes, with no gaps or overlaps.
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
  return tensors;
}

}  // namespace trainlock::validate
