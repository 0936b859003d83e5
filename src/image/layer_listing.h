// What one container image layer holds, read once as a stream (gzip-compressed or plain tar):
// every entry's path, kind, mode, owner, modification time, size and, for a regular file, the
// SHA-256 of its bytes. `image build --check` compares two listings to name the files whose
// bytes or metadata differ when a rebuild's digest is not the recorded one (image_diff.h).
//
// Layers come from registries, so the reader is bounded: POSIX ustar with pax extended headers
// (path, linkpath, size, mtime, uid, gid) and GNU long names, at most kMaxLayerEntries entries,
// names, all names together and pax records of bounded size, a bounded total of uncompressed bytes;
// anything else (a truncated archive, a header whose checksum fails, a zstd layer) is a Failure
// (exit 3) naming the layer and the byte offset. Nothing is written to disk.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace trainlock {

inline constexpr size_t kMaxLayerEntries = 2'000'000;
inline constexpr size_t kMaxLayerNameBytes = 64 * 1024;  // one path or link target
inline constexpr uint64_t kMaxLayerNamesTotalBytes = 256u
                                                     << 20;  // all of them: the listing's memory
inline constexpr uint64_t kMaxLayerBytes = 256ull << 30;     // uncompressed

struct LayerEntry {
  char type = '0';  // tar's typeflag: '0' file, '5' directory, '2' symlink, '1' hard link, ...
  uint32_t mode = 0;
  uint64_t uid = 0, gid = 0;
  int64_t mtime = 0;
  uint64_t size = 0;
  std::string sha256;  // of a regular file's bytes; empty for other kinds
  std::string link;    // a link's target
};

// Path (as the archive names it, without a leading "./" or "/") -> entry; a path that appears
// twice keeps its last entry, as extracting the layer would.
using LayerListing = std::map<std::string, LayerEntry>;

// A tar stream fed in pieces of any size.
class TarReader {
 public:
  explicit TarReader(std::string display);
  ~TarReader();
  TarReader(const TarReader&) = delete;
  TarReader& operator=(const TarReader&) = delete;

  void Feed(std::string_view bytes);  // throws Failure (exit 3)
  // The listing once the stream ended; Failure when it ended inside an entry.
  LayerListing Finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Lists the layer blob at `path` (gzip, several gzip members, or plain tar, told apart by the
// first bytes); `display` names it in errors.
LayerListing ListLayerFile(const std::filesystem::path& path, const std::string& display);

}  // namespace trainlock
