// The final state, written by several threads; see state_writer.h.
#include "engines/native/state_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>

#include "base/failure.h"
#include "support/engine_protocol.h"
#include "support/parallel.h"

namespace trainlock::validate {
namespace {

// A slice is what one thread copies and writes at a time: large enough that a write's system
// call costs nothing beside its bytes, small enough that the threads share a tensor.
constexpr int64_t kSliceBytes = int64_t{64} << 20;

// One slice of one tensor: its bytes [from, from + size) go to the file at `file_at`.
struct StateSlice {
  const torch::Tensor* bytes;  // the tensor viewed as bytes, flat
  int64_t from = 0;
  int64_t size = 0;
  uint64_t file_at = 0;
};

std::string ErrnoText(const std::filesystem::path& file, const std::string& what) {
  return file.string() + ": " + what + ": " + std::strerror(errno);
}

void WriteAllAt(int fd, const char* data, size_t size, uint64_t at,
                const std::filesystem::path& file) {
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Failure(ErrnoText(file, "write"), kExitEnvironment);
    data += n;
    size -= static_cast<size_t>(n);
    at += static_cast<uint64_t>(n);
  }
}

std::vector<StateSlice> SliceTensors(const std::vector<torch::Tensor>& bytes,
                                     const std::vector<uint64_t>& data_at) {
  std::vector<StateSlice> slices;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int64_t total = bytes[i].numel();
    for (int64_t from = 0; from < total; from += kSliceBytes) {
      const int64_t size = std::min(kSliceBytes, total - from);
      slices.push_back({&bytes[i], from, size, data_at[i] + static_cast<uint64_t>(from)});
    }
  }
  return slices;
}

// Writes one slice: a device tensor's through a pinned buffer (torch's host allocator caches
// it, so the next slice reuses it), a host tensor's in place.
void WriteSlice(int fd, const std::filesystem::path& file, const StateSlice& s) {
  torch::Tensor part = s.bytes->narrow(0, s.from, s.size);
  if (!part.device().is_cpu()) {
    part = torch::empty({s.size}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true))
               .copy_(part);
  }
  WriteAllAt(fd, static_cast<const char*>(part.data_ptr()), static_cast<size_t>(s.size), s.file_at,
             file);
}

// The bytes `tensors` take as a safetensors file (its header and data).
uint64_t StateFileBytes(const std::vector<NamedTensor>& tensors) {
  return LayOutSafetensors(SortedByName(tensors), {}).file_bytes;
}

// Creates `prepared` new and allocates `bytes` in it; whether it stands ready. fallocate(2)
// rather than posix_fallocate: where the file system cannot allocate ahead, glibc's fallback
// writes zeros, which is the cost this was to move off the critical path.
bool AllocateStateFile(const std::filesystem::path& prepared, uint64_t bytes) {
  const int fd =
      ::open(prepared.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool allocated = bytes <= static_cast<uint64_t>(std::numeric_limits<off_t>::max()) &&
                         ::fallocate(fd, 0, 0, static_cast<off_t>(bytes)) == 0;
  ::close(fd);
  return allocated;
}

// Opens the file the state is written into: the prepared one (allocated, so not truncated),
// else `file` new or truncated. Never follows a link.
int OpenStateFile(const std::filesystem::path& file,
                  const std::optional<std::filesystem::path>& prepared) {
  const std::filesystem::path& target = prepared ? *prepared : file;
  const int flags = O_WRONLY | O_CLOEXEC | O_NOFOLLOW | (prepared ? 0 : O_CREAT | O_TRUNC);
  const int fd = ::open(target.c_str(), flags, 0644);
  if (fd < 0) throw Failure(ErrnoText(target, "open"), kExitEnvironment);
  return fd;
}

}  // namespace

PreparedStateFile::PreparedStateFile(const std::filesystem::path& file,
                                     const std::vector<NamedTensor>& tensors)
    : file_(file), prepared_(file.string() + kPreparedStateSuffix) {
  const uint64_t bytes = StateFileBytes(tensors);
  allocating_ = std::thread([this, bytes] { ready_ = AllocateStateFile(prepared_, bytes); });
}

PreparedStateFile::~PreparedStateFile() {
  if (allocating_.joinable()) allocating_.join();
  std::error_code ec;
  if (ready_) std::filesystem::remove(prepared_, ec);  // never renamed: no state was written
}

std::optional<std::filesystem::path> PreparedStateFile::Ready(const std::filesystem::path& file) {
  if (allocating_.joinable()) allocating_.join();
  if (!ready_ || file != file_) return std::nullopt;
  ready_ = false;  // handed over: the write renames it
  return prepared_;
}

WrittenFile WriteStateFile(const std::filesystem::path& file,
                           const std::vector<NamedTensor>& tensors,
                           const std::optional<std::filesystem::path>& prepared) {
  const std::vector<const NamedTensor*> sorted = SortedByName(tensors);
  const SafetensorsLayout layout = LayOutSafetensors(sorted, {});
  std::vector<torch::Tensor> bytes;  // each tensor as flat bytes, where it lives
  for (const NamedTensor* t : sorted)
    bytes.push_back(t->tensor.detach().contiguous().reshape({-1}).view(torch::kUInt8));
  const std::vector<StateSlice> slices = SliceTensors(bytes, layout.data_at);

  const int fd = OpenStateFile(file, prepared);
  // Closed however the writes end; ParallelFor rethrows the first failing slice's error.
  const std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
  WriteAllAt(fd, layout.prefix.data(), layout.prefix.size(), 0, file);
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 1, 8);
  ParallelFor(slices.size(), threads, [&](size_t i) { WriteSlice(fd, file, slices[i]); });
  if (prepared) {
    if (::ftruncate(fd, static_cast<off_t>(layout.file_bytes)) != 0)
      throw Failure(ErrnoText(*prepared, "truncate"), kExitEnvironment);
    // rename(2) replaces the entry at `file` and follows no link there.
    if (::rename(prepared->c_str(), file.c_str()) != 0)
      throw Failure(ErrnoText(file, "rename from " + prepared->filename().string()),
                    kExitEnvironment);
  }
  return WrittenFile{layout.file_bytes, ""};
}

}  // namespace trainlock::validate
