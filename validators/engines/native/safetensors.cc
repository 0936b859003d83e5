// safetensors reading and writing; see safetensors.h and the format description at
// huggingface.co/docs/safetensors.
#include "engines/native/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/failure.h"
#include "base/sha256.h"

namespace trainlock::validate {
namespace {

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
    if (fd_ < 0) throw Failure(Errno(path.string() + ": open"), kExitEnvironment);
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
      if (n <= 0) throw Failure(Errno(path_.string() + ": write"), kExitEnvironment);
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
    if (::fsync(fd_) != 0) throw Failure(Errno(path_.string() + ": fsync"), kExitEnvironment);
  }
  // Asks the kernel to start writing [offset, offset + size) to disk now; a hint (errors
  // surface at the fsync), so a file system without it loses nothing.
  void StartWriteback(uint64_t offset, uint64_t size) {
    (void)::sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(size),
                            SYNC_FILE_RANGE_WRITE);
  }
  bool IsRegular() const {
    struct stat st {};
    return ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
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
  throw Failure(std::string("safetensors cannot store dtype ") + c10::toString(type),
                kExitEnvironment);
}

std::vector<const NamedTensor*> SortedByName(const std::vector<NamedTensor>& tensors) {
  std::vector<const NamedTensor*> sorted;
  for (const NamedTensor& t : tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(),
            [](const NamedTensor* a, const NamedTensor* b) { return a->name < b->name; });
  return sorted;
}

SafetensorsLayout LayOutSafetensors(const std::vector<const NamedTensor*>& sorted,
                                    const std::map<std::string, std::string>& metadata) {
  // The header needs only dtypes and shapes, never the tensors' bytes.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  // `"format": "pt"` always: older Hugging Face loaders (transformers' load_state_dict)
  // refuse a safetensors file whose metadata does not say it holds PyTorch tensors.
  std::map<std::string, std::string> with_format = metadata;
  with_format.emplace("format", "pt");
  header["__metadata__"] = with_format;
  uint64_t offset = 0;
  std::vector<uint64_t> relative;
  for (const NamedTensor* t : sorted) {
    uint64_t bytes = static_cast<uint64_t>(t->tensor.numel()) * t->tensor.element_size();
    header[t->name] = {{"dtype", SafetensorsDtype(t->tensor.scalar_type())},
                       {"shape", t->tensor.sizes().vec()},
                       {"data_offsets", {offset, offset + bytes}}};
    relative.push_back(offset);
    offset += bytes;
  }
  std::string header_text = header.dump();
  header_text.append((8 - header_text.size() % 8) % 8,
                     ' ');  // align the data to 8 bytes, as HF does
  const uint64_t length = header_text.size();
  SafetensorsLayout layout;
  for (int i = 0; i < 8; ++i) layout.prefix.push_back(static_cast<char>(length >> (8 * i)));
  layout.prefix += header_text;
  for (uint64_t at : relative) layout.data_at.push_back(layout.prefix.size() + at);
  layout.file_bytes = layout.prefix.size() + offset;
  return layout;
}

WrittenFile WriteSafetensors(const std::filesystem::path& file,
                             const std::vector<NamedTensor>& tensors,
                             const std::map<std::string, std::string>& metadata, bool durable,
                             const std::function<void()>& part_written) {
  // Tensors are copied to the host one at a time below, so a device-to-host copy overlaps the
  // writes of other files' threads.
  const std::vector<const NamedTensor*> sorted = SortedByName(tensors);
  const SafetensorsLayout layout = LayOutSafetensors(sorted, metadata);
  File out(file, O_WRONLY | O_CREAT | O_TRUNC);
  Sha256 hash;
  WrittenFile result;
  auto emit = [&](const void* data, size_t size) {
    // In chunks, each handed to the disk at once (sync_file_range), so writeback streams
    // while the rest is produced and the final fsync finds little left to do.
    constexpr size_t kChunk = 32u << 20;
    const auto* p = static_cast<const char*>(data);
    for (size_t done = 0; done < size; done += kChunk) {
      const size_t n = std::min(kChunk, size - done);
      out.WriteAll(p + done, n);
      if (durable) {
        hash.Update(p + done, n);
        out.StartWriteback(result.bytes, n);
      }
      result.bytes += n;
    }
  };
  emit(layout.prefix.data(), layout.prefix.size());
  if (part_written && sorted.size() < 2) part_written();
  for (const NamedTensor* t : sorted) {
    torch::Tensor c = t->tensor.detach().to(torch::kCPU).contiguous();
    emit(c.data_ptr(), static_cast<size_t>(c.numel()) * c.element_size());
    if (part_written && sorted.size() >= 2 && t == sorted.front()) part_written();
  }
  if (!durable) return result;
  out.Sync();
  result.sha256 = hash.HexDigest();
  return result;
}

namespace {

// The whole file in one CPU byte tensor, read in chunks and, when `hash` is given, hashed on
// the way (one pass over the bytes for verify-and-load). `follow_symlink` false for a
// checkpoint's files: a link there could point the restore at any file outside the checkpoint
// (pinned model files may be links, as a Hugging Face cache's are).
torch::Tensor ReadWholeFile(const std::filesystem::path& path, Sha256* hash,
                            bool follow_symlink = true) {
  std::optional<File> opened;
  try {
    // O_NONBLOCK: a FIFO in place of a file must not block the open; it is refused below.
    opened.emplace(path, O_RDONLY | O_NONBLOCK | (follow_symlink ? 0 : O_NOFOLLOW));
  } catch (const Failure& e) {
    std::error_code ec;
    if (!follow_symlink && std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec)))
      throw SafetensorsError(path.string() + ": is a symbolic link; refused");
    throw SafetensorsError(e.what());
  }
  if (!opened->IsRegular()) throw SafetensorsError(path.string() + ": not a regular file");
  const uint64_t size = opened->Size();
  torch::Tensor bytes = torch::empty({static_cast<int64_t>(size)}, torch::kUInt8);
  auto* data = bytes.data_ptr<uint8_t>();
  constexpr uint64_t kChunk = 16u << 20;  // hashed while still in the CPU cache's reach
  for (uint64_t offset = 0; offset < size; offset += kChunk) {
    const uint64_t n = std::min(kChunk, size - offset);
    if (!opened->ReadAt(data + offset, n, offset)) {
      throw SafetensorsError(path.string() + ": truncated while reading (file shrank)");
    }
    if (hash) hash->Update(data + offset, n);
  }
  return bytes;
}

// A tensor of `dtype` and `shape` over bytes [begin, end) of `file`: a view when aligned for
// the element type (files this validator writes always are), a copy otherwise.
torch::Tensor TensorFromBytes(const torch::Tensor& file, uint64_t begin, uint64_t end,
                              at::ScalarType dtype, const std::vector<int64_t>& shape) {
  const auto element = static_cast<uint64_t>(c10::elementSize(dtype));
  torch::Tensor slice =
      file.narrow(0, static_cast<int64_t>(begin), static_cast<int64_t>(end - begin));
  if (begin % element == 0) return slice.view(dtype).view(shape);
  torch::Tensor t = torch::empty(shape, torch::TensorOptions().dtype(dtype));
  std::memcpy(t.data_ptr(), slice.data_ptr(), end - begin);
  return t;
}

// The tensors of a file held in `file`, after ParseSafetensorsHeader has checked it; they
// share `file`'s memory.
std::map<std::string, torch::Tensor> ParseSafetensors(const torch::Tensor& file,
                                                      const std::string& where) {
  const std::string_view bytes(reinterpret_cast<const char*>(file.data_ptr<uint8_t>()),
                               static_cast<size_t>(file.numel()));
  const SafetensorsHeader header = ParseSafetensorsHeader(bytes, where);
  std::map<std::string, torch::Tensor> tensors;
  for (const SafetensorsEntry& t : header.tensors) {
    const at::ScalarType dtype = ParseDtype(t.dtype, where + ": tensor '" + t.name + "'");
    tensors.emplace(t.name, TensorFromBytes(file, header.data_start + t.begin,
                                            header.data_start + t.end, dtype, t.shape));
  }
  return tensors;
}

}  // namespace

std::map<std::string, torch::Tensor> ReadSafetensors(const std::filesystem::path& path) {
  return ParseSafetensors(ReadWholeFile(path, nullptr), path.string());
}

std::map<std::string, torch::Tensor> ReadVerifiedSafetensors(const std::filesystem::path& path,
                                                             const std::string& want_sha256,
                                                             const std::string& listed_in) {
  Sha256 hash;
  torch::Tensor file = ReadWholeFile(path, &hash, /*follow_symlink=*/false);
  const std::string sha = hash.HexDigest();
  if (sha != want_sha256) {
    throw SafetensorsError(path.string() + ": sha256 " + sha.substr(0, 16) + "... does not match " +
                           listed_in + "'s " + want_sha256.substr(0, 16) + "...");
  }
  return ParseSafetensors(file, path.string());
}

std::map<std::string, torch::Tensor> ReadHashedSafetensors(
    const std::filesystem::path& path,
    const std::function<void(const std::string& sha256, uint64_t bytes)>& verify) {
  Sha256 hash;
  torch::Tensor file = ReadWholeFile(path, &hash);
  verify(hash.HexDigest(), static_cast<uint64_t>(file.numel()));
  return ParseSafetensors(file, path.string());
}

}  // namespace trainlock::validate
