// The final state, written by several threads; see state_writer.h.
#include "engines/native/state_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
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

// Where the state's bytes go: the prepared file's mapping when there is one, else the file
// through pwrite.
struct StateTarget {
  int fd = -1;
  char* mapping = nullptr;
  const std::filesystem::path* file = nullptr;

  void Put(const char* data, size_t size, uint64_t at) const {
    if (mapping) {
      std::memcpy(mapping + at, data, size);
    } else {
      WriteAllAt(fd, data, size, at, *file);
    }
  }
};

// Writes one slice: a device tensor's through a pinned buffer (torch's host allocator caches
// it, so the next slice reuses it), a host tensor's in place.
void WriteSlice(const StateTarget& target, const StateSlice& s) {
  torch::Tensor part = s.bytes->narrow(0, s.from, s.size);
  if (!part.device().is_cpu()) {
    part = torch::empty({s.size}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true))
               .copy_(part);
  }
  target.Put(static_cast<const char*>(part.data_ptr()), static_cast<size_t>(s.size), s.file_at);
}

// The bytes `tensors` take as a safetensors file (its header and data).
uint64_t StateFileBytes(const std::vector<NamedTensor>& tensors) {
  return LayOutSafetensors(SortedByName(tensors), {}).file_bytes;
}

// Creates `prepared` new and allocates `bytes` in it; its descriptor (read-write) when it stands
// ready, else -1. fallocate(2) rather than posix_fallocate: where the file system cannot allocate
// ahead, glibc's fallback writes zeros, which is the cost this was to move off the critical path.
int AllocateStateFile(const std::filesystem::path& prepared, uint64_t bytes) {
  const int fd = ::open(prepared.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  if (bytes > static_cast<uint64_t>(std::numeric_limits<off_t>::max()) ||
      ::fallocate(fd, 0, 0, static_cast<off_t>(bytes)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The allocated file's shared mapping with its pages mapped in (MAP_POPULATE: the faults are
// taken here, beside training, not in the write), or nullptr.
void* MapStateFile(int fd, uint64_t bytes) {
  if (bytes == 0 || bytes > std::numeric_limits<size_t>::max()) return nullptr;
  void* mapping = ::mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_POPULATE, fd, 0);
  return mapping == MAP_FAILED ? nullptr : mapping;
}

// Opens the file the state is written into: the prepared one (allocated, so not truncated),
// else `file` new or truncated. Never follows a link.
int OpenStateFile(const std::filesystem::path& file, const std::optional<PreparedState>& prepared) {
  const std::filesystem::path& target = prepared ? prepared->path : file;
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
  allocating_ = std::thread([this, bytes] { Prepare(bytes); });
}

void PreparedStateFile::Prepare(uint64_t bytes) {
  const int fd = AllocateStateFile(prepared_, bytes);
  if (fd < 0) return;
  mapping_ = MapStateFile(fd, bytes);
  if (mapping_) mapped_bytes_ = static_cast<size_t>(bytes);
  ::close(fd);  // the mapping holds the file
  ready_ = true;
}

PreparedStateFile::~PreparedStateFile() {
  if (allocating_.joinable()) allocating_.join();
  if (mapping_) ::munmap(mapping_, mapped_bytes_);
  std::error_code ec;
  if (ready_) std::filesystem::remove(prepared_, ec);  // never renamed: no state was written
}

std::optional<PreparedState> PreparedStateFile::Ready(const std::filesystem::path& file) {
  if (allocating_.joinable()) allocating_.join();
  if (!ready_ || file != file_) return std::nullopt;
  ready_ = false;  // handed over: the write unmaps and renames it
  PreparedState handed{prepared_, mapping_, mapped_bytes_};
  mapping_ = nullptr;
  mapped_bytes_ = 0;
  return handed;
}

// The prepared file's mapping, unmapped however the write ends.
struct Unmapper {
  void* mapping = nullptr;
  size_t bytes = 0;
  ~Unmapper() {
    if (mapping) ::munmap(mapping, bytes);
  }
};

WrittenFile WriteStateFile(const std::filesystem::path& file,
                           const std::vector<NamedTensor>& tensors,
                           const std::optional<PreparedState>& prepared) {
  const Unmapper unmapper{prepared ? prepared->mapping : nullptr,
                          prepared ? prepared->mapped_bytes : 0};
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
  // The mapping only where it holds the whole state (it was sized for these tensors).
  const bool mapped = unmapper.mapping && layout.file_bytes <= unmapper.bytes;
  const StateTarget target{fd, mapped ? static_cast<char*>(unmapper.mapping) : nullptr, &file};
  target.Put(layout.prefix.data(), layout.prefix.size(), 0);
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 1, 8);
  ParallelFor(slices.size(), threads, [&](size_t i) { WriteSlice(target, slices[i]); });
  if (prepared) {
    if (::ftruncate(fd, static_cast<off_t>(layout.file_bytes)) != 0)
      throw Failure(ErrnoText(prepared->path, "truncate"), kExitEnvironment);
    // rename(2) replaces the entry at `file` and follows no link there.
    if (::rename(prepared->path.c_str(), file.c_str()) != 0)
      throw Failure(ErrnoText(file, "rename from " + prepared->path.filename().string()),
                    kExitEnvironment);
  }
  return WrittenFile{layout.file_bytes, ""};
}

}  // namespace trainlock::validate
