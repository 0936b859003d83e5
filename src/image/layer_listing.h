// What one container image layer holds, read once as a stream (gzip-compressed or plain tar):
// every entry's path, kind, mode, owner, modification time, size and, for a regular file, the
// SHA-256 of its bytes. `image build --check` compares two listings to name the files whose
// bytes or metadata differ when a rebuild's digest is not the recorded one (image_diff.h).
//
// Layers come from registries, so the reader is bounded: POSIX ustar with pax extended headers
// (path, linkpath, size, mtime, uid, gid) and GNU long names, at most kMaxLayerEntries entries,
// names and pax records of bounded size, the listing's memory (entries and names, estimated
// as kLayerEntryBytes each plus its names) within kMaxLayerListingBytes, at most
// kMaxLayerBytes uncompressed (or a smaller budget the caller shares among layers, which bounds
// the time: about 3.5 s per GiB); anything past a bound, or else malformed (a truncated
// archive, a header whose checksum fails, a zstd layer), is a Failure (exit 3) naming the layer
// and the byte offset. Nothing is written to disk.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace trainlock {

inline constexpr size_t kMaxLayerEntries = 500'000;
inline constexpr size_t kMaxLayerNameBytes = 64 * 1024;  // one path or link target
// What one entry of a listing takes beyond its names (the map's node, the entry, its hex
// digest, the allocator's overhead), for the listing's memory cap: a comparison holds two.
inline constexpr uint64_t kLayerEntryBytes = 320;
inline constexpr uint64_t kMaxLayerListingBytes = uint64_t{128} << 20;
inline constexpr uint64_t kMaxLayerBytes = uint64_t{32} << 30;  // uncompressed, one layer

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

// A tar stream fed in pieces of any size, up to `max_bytes` uncompressed (past it a Failure
// naming `cap`, what the limit is: "a layer's limit of 32 GiB").
class TarReader {
 public:
  explicit TarReader(std::string display, uint64_t max_bytes = kMaxLayerBytes,
                     std::string cap = {});
  ~TarReader();
  TarReader(const TarReader&) = delete;
  TarReader& operator=(const TarReader&) = delete;

  void Feed(std::string_view bytes);  // throws Failure (exit 3)
  // The listing once the stream ended; Failure when it ended inside an entry.
  LayerListing Finish();
  uint64_t bytes() const;  // of the tar stream, fed so far

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A layer blob fed in pieces as it is read: gzip (one member or several) or plain tar, told
// apart by its first two bytes; a zstd layer is refused by name. Bounded as TarReader is, on
// the uncompressed bytes (a small gzip member can inflate to any size).
class LayerReader {
 public:
  explicit LayerReader(std::string display, uint64_t max_bytes = kMaxLayerBytes,
                       std::string cap = {});
  ~LayerReader();
  LayerReader(const LayerReader&) = delete;
  LayerReader& operator=(const LayerReader&) = delete;

  void Feed(std::string_view bytes);  // throws Failure (exit 3)
  // The listing once the blob ended; Failure when it ended inside a gzip member or an entry.
  LayerListing Finish();
  uint64_t bytes() const;  // of the tar stream, uncompressed, so far

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// What the layers one comparison reads may decompress: each at most `per_layer`, all of them
// together at most `left` (what is read is taken from it).
struct LayerBudget {
  uint64_t per_layer = kMaxLayerBytes;
  uint64_t left = kMaxLayerBytes;
};

// Lists the layer blob at `path` (gzip, several gzip members, or plain tar, told apart by the
// first bytes) within `budget` (nullptr: one layer's cap); `display` names it in errors.
LayerListing ListLayerFile(const std::filesystem::path& path, const std::string& display,
                           LayerBudget* budget = nullptr);

}  // namespace trainlock
