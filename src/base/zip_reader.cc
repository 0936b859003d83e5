// ZIP member reading; see zip_reader.h. Every offset and length read from the archive is
// checked against the file's size before it is used: the archive comes from a package index.
#include "base/zip_reader.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "base/failure.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;

uint32_t U16(const std::string& b, size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(b[at])) |
         static_cast<uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8;
}
uint32_t U32(const std::string& b, size_t at) {
  return U16(b, at) | U16(b, at + 2) << 16;
}

struct ZipEntry {
  std::string name;
  uint32_t method = 0;
  uint64_t compressed = 0;
  uint64_t size = 0;
  uint64_t local_offset = 0;
};

class Archive {
 public:
  explicit Archive(const fs::path& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) Fail("cannot open");
    in_.seekg(0, std::ios::end);
    size_ = static_cast<uint64_t>(in_.tellg());
    ReadCentralDirectory();
  }

  const std::vector<ZipEntry>& members() const { return members_; }

  std::string Read(const ZipEntry& m, size_t max_bytes) {
    if (m.size > max_bytes)
      Fail(m.name + " is larger than " + std::to_string(max_bytes) + " bytes");
    const std::string local = Bytes(m.local_offset, 30);
    if (U32(local, 0) != kLocalHeader) Fail("no local header for " + m.name);
    const uint64_t data = m.local_offset + 30 + U16(local, 26) + U16(local, 28);
    const std::string raw = Bytes(data, m.compressed);
    if (m.method == 0) {
      if (raw.size() != m.size) Fail(m.name + ": stored size mismatch");
      return raw;
    }
    if (m.method != 8) Fail(m.name + ": compression method " + std::to_string(m.method));
    return Inflate(raw, m);
  }

  [[noreturn]] void Fail(const std::string& why) const {
    throw Failure(path_.string() + ": not a readable ZIP archive: " + why, kExitVerdict);
  }

 private:
  std::string Bytes(uint64_t offset, uint64_t length) {
    if (offset > size_ || length > size_ - offset) Fail("an entry points past the end");
    std::string out(length, '\0');
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(out.data(), static_cast<std::streamsize>(length));
    if (!in_) Fail("read error");
    return out;
  }

  void ReadCentralDirectory() {
    // The end record is in the last 22 + 65535 (comment) bytes.
    const uint64_t tail_size = std::min<uint64_t>(size_, 22 + 65535);
    const std::string tail = Bytes(size_ - tail_size, tail_size);
    size_t at = std::string::npos;
    for (size_t i = tail.size() >= 22 ? tail.size() - 22 + 1 : 0; i-- > 0;) {
      if (U32(tail, i) == kEndOfCentralDirectory) {
        at = i;
        break;
      }
    }
    if (at == std::string::npos) Fail("no end of central directory");
    const uint32_t count = U16(tail, at + 10);
    const uint64_t dir_size = U32(tail, at + 12), dir_offset = U32(tail, at + 16);
    if (count == 0xffff || dir_offset == 0xffffffff) Fail("ZIP64 archives are not read");
    const std::string dir = Bytes(dir_offset, dir_size);
    size_t pos = 0;
    for (uint32_t i = 0; i < count; ++i) {
      if (pos + 46 > dir.size() || U32(dir, pos) != kCentralHeader)
        Fail("corrupt central directory");
      ZipEntry m;
      m.method = U16(dir, pos + 10);
      m.compressed = U32(dir, pos + 20);
      m.size = U32(dir, pos + 24);
      const size_t name_len = U16(dir, pos + 28), extra = U16(dir, pos + 30),
                   comment = U16(dir, pos + 32);
      m.local_offset = U32(dir, pos + 42);
      if (pos + 46 + name_len > dir.size()) Fail("corrupt central directory");
      m.name = dir.substr(pos + 46, name_len);
      members_.push_back(std::move(m));
      pos += 46 + name_len + extra + comment;
    }
  }

  std::string Inflate(const std::string& raw, const ZipEntry& m) {
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) Fail("zlib init");
    std::string out(m.size, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
    z.avail_in = static_cast<uInt>(raw.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&z, Z_FINISH);
    const uint64_t produced = z.total_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END || produced != m.size) Fail(m.name + ": corrupt deflate data");
    return out;
  }

  fs::path path_;
  std::ifstream in_;
  uint64_t size_ = 0;
  std::vector<ZipEntry> members_;
};

}  // namespace

std::vector<std::string> ZipMemberNames(const fs::path& zip) {
  std::vector<std::string> names;
  const Archive archive(zip);
  for (const ZipEntry& m : archive.members()) names.push_back(m.name);
  return names;
}

std::string ReadZipMember(const fs::path& zip, const std::string& name, size_t max_bytes) {
  Archive archive(zip);
  for (const ZipEntry& m : archive.members()) {
    if (m.name == name) return archive.Read(m, max_bytes);
  }
  archive.Fail("no member " + name);
}

}  // namespace trainlock
