// The final state, written by several threads; see state_writer.h.
#include "engines/native/state_writer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>

#include "base/failure.h"
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

std::string ErrnoText(const std::filesystem::path& file, const char* what) {
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

// One slice's bytes in host memory: a device tensor's copied into a pinned buffer (torch's host
// allocator caches it, so the next slice reuses it), a host tensor's in place.
torch::Tensor HostBytes(const StateSlice& s) {
  torch::Tensor part = s.bytes->narrow(0, s.from, s.size);
  if (part.device().is_cpu()) return part;
  return torch::empty({s.size}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true))
      .copy_(part);
}

// Writes one slice with pwrite. The file system serializes writes to one file (the inode lock of
// ext4's and tmpfs's buffered writes), so this path moves about 2-3 GB/s whatever the threads.
void WriteSlice(int fd, const std::filesystem::path& file, const StateSlice& s) {
  const torch::Tensor part = HostBytes(s);
  WriteAllAt(fd, static_cast<const char*>(part.data_ptr()), static_cast<size_t>(s.size), s.file_at,
             file);
}

// Copies one slice into the file's shared mapping: the page faults of different pages take no
// lock in common, so the threads' copies go side by side (the pilot's 14.8 GB in about 1.5 s
// against 5 to 9 s through pwrite).
void CopySlice(char* mapped, const StateSlice& s) {
  const torch::Tensor part = HostBytes(s);
  char* to = mapped + s.file_at;
#ifdef MADV_POPULATE_WRITE
  // The pages made in one call rather than one fault each; an older kernel refuses (EINVAL)
  // and the copy below faults them in.
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t start = reinterpret_cast<uintptr_t>(to) & ~(page - 1);
  ::madvise(reinterpret_cast<void*>(start),
            reinterpret_cast<uintptr_t>(to) + static_cast<uintptr_t>(s.size) - start,
            MADV_POPULATE_WRITE);
#endif
  std::memcpy(to, part.data_ptr(), static_cast<size_t>(s.size));
}

// Whether the file system of `fd` has room for `bytes` more with a margin: a shared mapping that
// runs out of room kills the process with SIGBUS, where pwrite would have said ENOSPC.
bool HasRoomFor(int fd, uint64_t bytes) {
  struct statvfs room {};
  if (::fstatvfs(fd, &room) != 0) return false;
  const uint64_t free_bytes = static_cast<uint64_t>(room.f_bavail) * room.f_frsize;
  return free_bytes > bytes && free_bytes - bytes > (uint64_t{256} << 20);
}

// The state through a shared mapping of the file, sized first; false (nothing written) when the
// file system lacks the room or refuses the mapping.
bool WriteMapped(int fd, const SafetensorsLayout& layout, const std::vector<StateSlice>& slices,
                 size_t threads) {
  if (layout.file_bytes == 0 || !HasRoomFor(fd, layout.file_bytes)) return false;
  if (::ftruncate(fd, static_cast<off_t>(layout.file_bytes)) != 0) return false;
  void* mapped = ::mmap(nullptr, layout.file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) return false;
  const std::unique_ptr<void, std::function<void(void*)>> unmap(
      mapped, [size = layout.file_bytes](void* m) { ::munmap(m, size); });
  char* bytes = static_cast<char*>(mapped);
  std::memcpy(bytes, layout.prefix.data(), layout.prefix.size());
  ParallelFor(slices.size(), threads, [&](size_t i) { CopySlice(bytes, slices[i]); });
  return true;
}

}  // namespace

WrittenFile WriteStateFile(const std::filesystem::path& file,
                           const std::vector<NamedTensor>& tensors, StateWritePath path) {
  const std::vector<const NamedTensor*> sorted = SortedByName(tensors);
  const SafetensorsLayout layout = LayOutSafetensors(sorted, {});
  std::vector<torch::Tensor> bytes;  // each tensor as flat bytes, where it lives
  for (const NamedTensor* t : sorted)
    bytes.push_back(t->tensor.detach().contiguous().reshape({-1}).view(torch::kUInt8));
  const std::vector<StateSlice> slices = SliceTensors(bytes, layout.data_at);

  const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) throw Failure(ErrnoText(file, "open"), kExitEnvironment);
  // Closed however the writes end; ParallelFor rethrows the first failing slice's error.
  const std::unique_ptr<int, void (*)(int*)> closer(new int(fd), [](int* f) {
    ::close(*f);
    delete f;
  });
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 1, 16);
  if (path == StateWritePath::kMappedWhenRoom && WriteMapped(fd, layout, slices, threads))
    return WrittenFile{layout.file_bytes, ""};
  WriteAllAt(fd, layout.prefix.data(), layout.prefix.size(), 0, file);
  ParallelFor(slices.size(), threads, [&](size_t i) { WriteSlice(fd, file, slices[i]); });
  return WrittenFile{layout.file_bytes, ""};
}

}  // namespace trainlock::validate
