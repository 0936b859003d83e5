// Listing a layer's tar stream; see layer_listing.h.
#include "image/layer_listing.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <optional>

#include "base/exit_code.h"
#include "base/failure.h"
#include "base/file_stream.h"
#include "base/sha256.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

constexpr size_t kBlock = 512;
constexpr uint64_t kMaxPaxBytes = 1u << 20;

bool AllZero(std::string_view block) {
  return std::all_of(block.begin(), block.end(), [](char c) { return c == 0; });
}

// A NUL-terminated field of at most `size` bytes.
std::string HeaderField(std::string_view header, size_t at, size_t size) {
  std::string_view f = header.substr(at, size);
  return std::string(f.substr(0, f.find('\0')));
}

// The path as extracting the layer would place it: no leading "./" or "/", no trailing "/".
std::string NormalPath(std::string path) {
  while (path.starts_with("./")) path.erase(0, 2);
  while (path.starts_with('/')) path.erase(0, 1);
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path.empty() || path == "." ? "." : path;
}

}  // namespace

struct TarReader::State {
  enum class Phase { kHeader, kBody, kPadding, kEnd };
  State(std::string d, uint64_t max, std::string c)
      : display(std::move(d)), max_bytes(max), cap_text(std::move(c)) {}

  std::string display;
  uint64_t max_bytes;
  std::string cap_text;  // what max_bytes is, for the refusal
  uint64_t offset = 0;   // bytes of the tar stream consumed
  Phase phase = Phase::kHeader;
  std::string header;
  int zero_blocks = 0;
  // The entry whose body is being read.
  char body_type = 0;
  std::string path;
  LayerEntry entry;
  uint64_t remaining = 0, padding = 0;
  std::string meta;  // the body of a pax header or a GNU long name
  std::unique_ptr<Sha256> hash;
  // What a pax header or GNU long name sets for the next entry.
  std::optional<std::string> next_path, next_link;
  std::optional<uint64_t> next_size, next_uid, next_gid;
  std::optional<int64_t> next_mtime;
  LayerListing listing;
  uint64_t listing_bytes = 0;  // the listing's estimated memory, for its cap

  [[noreturn]] void Fail(const std::string& why, uint64_t at) const {
    throw Failure(display + ": " + why + " at byte " + std::to_string(at) + " of the tar stream",
                  kExitEnvironment);
  }

  uint64_t Number(size_t at, size_t size) const {
    std::string_view f = std::string_view(header).substr(at, size);
    const auto first = static_cast<unsigned char>(f[0]);
    if (first & 0x80) {  // GNU base-256
      if (first == 0xff) Fail("a negative number in a tar header", offset);
      uint64_t v = first & 0x7f;
      for (size_t i = 1; i < f.size(); ++i) {
        if (v >> 55) Fail("a number beyond 64 bits in a tar header", offset);
        v = (v << 8) | static_cast<unsigned char>(f[i]);
      }
      return v;
    }
    uint64_t v = 0;
    size_t i = 0;
    while (i < f.size() && f[i] == ' ') ++i;
    for (; i < f.size() && f[i] >= '0' && f[i] <= '7'; ++i) {
      if (v >> 60) Fail("a number beyond 64 bits in a tar header", offset);
      v = v * 8 + static_cast<uint64_t>(f[i] - '0');
    }
    if (i < f.size() && f[i] != '\0' && f[i] != ' ')
      Fail("a tar header field that is not octal", offset);
    return v;
  }

  void CheckSum() const {
    uint64_t sum = 0;
    for (size_t i = 0; i < kBlock; ++i)
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(header[i]);
    if (Number(148, 8) != sum) Fail("a tar header whose checksum does not match", offset);
  }

  void ProcessHeader() {
    const uint64_t at = offset - kBlock;
    if (AllZero(header)) {
      header.clear();
      if (++zero_blocks == 2) phase = Phase::kEnd;
      return;
    }
    zero_blocks = 0;
    CheckSum();
    char type = header[156] == '\0' ? '0' : header[156];
    uint64_t size = Number(124, 12);
    if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
      const uint64_t cap = (type == 'x' || type == 'g') ? kMaxPaxBytes : kMaxLayerNameBytes;
      if (size > cap) Fail("an extended header of " + std::to_string(size) + " bytes", at);
      BeginBody(type, size);
      return;
    }
    std::string name = HeaderField(header, 0, 100);
    const std::string magic = HeaderField(header, 257, 6);
    const std::string prefix = magic == "ustar" ? HeaderField(header, 345, 155) : std::string();
    if (!prefix.empty()) name = prefix + "/" + name;
    path = NormalPath(next_path.value_or(name));
    entry = LayerEntry{};
    entry.type = type;
    entry.mode = static_cast<uint32_t>(Number(100, 8) & 07777);
    entry.uid = next_uid.value_or(Number(108, 8));
    entry.gid = next_gid.value_or(Number(116, 8));
    entry.mtime = next_mtime.value_or(static_cast<int64_t>(Number(136, 12)));
    entry.link = next_link.value_or(HeaderField(header, 157, 100));
    size = next_size.value_or(size);
    next_path.reset(), next_link.reset(), next_size.reset(), next_uid.reset(), next_gid.reset(),
        next_mtime.reset();
    if (path.size() > kMaxLayerNameBytes || entry.link.size() > kMaxLayerNameBytes)
      Fail("a name longer than " + std::to_string(kMaxLayerNameBytes) + " bytes", at);
    if (!listing.contains(path)) {
      if (listing.size() >= kMaxLayerEntries)
        Fail("more than " + std::to_string(kMaxLayerEntries) + " entries", at);
      listing_bytes += kLayerEntryBytes + path.size() + entry.link.size();
      if (listing_bytes > kMaxLayerListingBytes)
        Fail("a listing over " + std::to_string(kMaxLayerListingBytes >> 20) +
                 " MiB (its entries and names)",
             at);
    }
    entry.size = size;
    BeginBody(type, size);
  }

  void BeginBody(char type, uint64_t size) {
    body_type = type;
    remaining = size;
    padding = (kBlock - size % kBlock) % kBlock;
    meta.clear();
    const bool file = type == '0' || type == '7';
    hash = file ? std::make_unique<Sha256>() : nullptr;
    header.clear();
    if (remaining == 0) {
      EndBody();
    } else {
      phase = Phase::kBody;
    }
  }

  void Body(std::string_view bytes) {
    if (hash) hash->Update(bytes);
    if (body_type == 'x' || body_type == 'g' || body_type == 'L' || body_type == 'K')
      meta.append(bytes);
  }

  void EndBody() {
    switch (body_type) {
      case 'x':
        ApplyPax();
        break;
      case 'g':  // global defaults: not what the entries differ in
        break;
      case 'L':
        next_path = meta.substr(0, meta.find('\0'));
        break;
      case 'K':
        next_link = meta.substr(0, meta.find('\0'));
        break;
      default:
        if (hash) entry.sha256 = hash->HexDigest();
        listing[path] = entry;
    }
    hash.reset();
    phase = padding ? Phase::kPadding : Phase::kHeader;
  }

  // "LEN key=value\n" records.
  void ApplyPax() {
    size_t pos = 0;
    while (pos < meta.size()) {
      const size_t space = meta.find(' ', pos);
      // At most 19 digits: the length cannot overflow, and no record of a bounded extended
      // header needs more.
      if (space == std::string::npos || space == pos || space - pos > 19)
        Fail("a malformed pax record", offset);
      uint64_t len = 0;
      for (size_t i = pos; i < space; ++i) {
        if (meta[i] < '0' || meta[i] > '9') Fail("a malformed pax record length", offset);
        len = len * 10 + static_cast<uint64_t>(meta[i] - '0');
      }
      // len > size - pos, never pos + len > size: a crafted length must not wrap around and
      // send the parse back to an earlier record (it looped forever).
      if (len <= space - pos + 1 || len > meta.size() - pos || meta[pos + len - 1] != '\n')
        Fail("a pax record whose length does not match", offset);
      const std::string record = meta.substr(space + 1, pos + len - 1 - space - 1);
      pos += len;
      const size_t eq = record.find('=');
      if (eq == std::string::npos) Fail("a pax record without '='", offset);
      const std::string key = record.substr(0, eq), value = record.substr(eq + 1);
      if (key == "path") next_path = value;
      if (key == "linkpath") next_link = value;
      if (key == "size") next_size = Decimal(value);
      if (key == "uid") next_uid = Decimal(value);
      if (key == "gid") next_gid = Decimal(value);
      if (key == "mtime")
        next_mtime = static_cast<int64_t>(Decimal(value.substr(0, value.find('.'))));
    }
  }

  uint64_t Decimal(const std::string& text) const {
    if (text.empty() || text.size() > 19 ||
        text.find_first_not_of("0123456789") != std::string::npos)
      Fail("a pax number that is not a decimal: " + text.substr(0, 32), offset);
    return std::stoull(text);
  }
};

TarReader::TarReader(std::string display, uint64_t max_bytes, std::string cap)
    : state_(std::make_unique<State>(
          std::move(display), max_bytes,
          cap.empty() ? "a layer's limit of " + std::to_string(max_bytes >> 30) + " GiB" : cap)) {}
TarReader::~TarReader() = default;

uint64_t TarReader::bytes() const {
  return state_->offset;
}

void TarReader::Feed(std::string_view bytes) {
  State& s = *state_;
  while (!bytes.empty()) {
    // Checked before each piece: what one piece adds is at most what one Feed was given.
    if (s.offset > s.max_bytes)
      s.Fail(
          "more bytes uncompressed than " + s.cap_text + " (" + std::to_string(s.max_bytes) + ")",
          s.offset);
    size_t n = 0;
    switch (s.phase) {
      case State::Phase::kEnd:  // the zero blocks that pad the archive to its record size
        s.offset += bytes.size();
        return;
      case State::Phase::kHeader:
        n = std::min(kBlock - s.header.size(), bytes.size());
        s.header.append(bytes.substr(0, n));
        s.offset += n;
        if (s.header.size() == kBlock) s.ProcessHeader();
        break;
      case State::Phase::kBody:
        n = static_cast<size_t>(std::min<uint64_t>(s.remaining, bytes.size()));
        s.Body(bytes.substr(0, n));
        s.offset += n;
        s.remaining -= n;
        if (s.remaining == 0) s.EndBody();
        break;
      case State::Phase::kPadding:
        n = static_cast<size_t>(std::min<uint64_t>(s.padding, bytes.size()));
        s.offset += n;
        s.padding -= n;
        if (s.padding == 0) s.phase = State::Phase::kHeader;
        break;
    }
    bytes.remove_prefix(n);
  }
  if (s.offset > s.max_bytes)
    s.Fail("more bytes uncompressed than " + s.cap_text + " (" + std::to_string(s.max_bytes) + ")",
           s.offset);
}

LayerListing TarReader::Finish() {
  State& s = *state_;
  if (s.phase == State::Phase::kBody || s.phase == State::Phase::kPadding || !s.header.empty())
    s.Fail("the archive ends inside an entry", s.offset);
  return std::move(s.listing);
}

// Inflates gzip members fed in pieces into `out`. (Not in an anonymous namespace: LayerReader's
// State holds one.)
class LayerGunzipper {
 public:
  LayerGunzipper(TarReader& out, std::string display) : out_(out), display_(std::move(display)) {
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK)
      throw Failure(display_ + ": cannot start gunzip", kExitEnvironment);
  }
  ~LayerGunzipper() { inflateEnd(&z_); }
  LayerGunzipper(const LayerGunzipper&) = delete;
  LayerGunzipper& operator=(const LayerGunzipper&) = delete;

  void Feed(std::string_view in) {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    while (z_.avail_in > 0) {
      if (member_done_) {  // another member follows, or bytes that are not one
        if (*z_.next_in != 0x1f || inflateReset(&z_) != Z_OK)
          throw Failure(display_ + ": bytes after the last gzip member", kExitEnvironment);
        member_done_ = false;
      }
      z_.next_out = reinterpret_cast<Bytef*>(buf_.data());
      z_.avail_out = static_cast<uInt>(buf_.size());
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        throw Failure(
            display_ + ": not a valid gzip stream (" + (z_.msg ? z_.msg : "zlib error") + ")",
            kExitEnvironment);
      out_.Feed(std::string_view(buf_.data(), buf_.size() - z_.avail_out));
      if (rc == Z_STREAM_END) member_done_ = true;
      if (rc == Z_BUF_ERROR && z_.avail_out != 0) break;
    }
  }

  void Finish() {
    // Whatever is still buffered inside zlib.
    while (!member_done_) {
      z_.next_in = nullptr;
      z_.avail_in = 0;
      z_.next_out = reinterpret_cast<Bytef*>(buf_.data());
      z_.avail_out = static_cast<uInt>(buf_.size());
      const int rc = inflate(&z_, Z_FINISH);
      out_.Feed(std::string_view(buf_.data(), buf_.size() - z_.avail_out));
      if (rc == Z_STREAM_END)
        member_done_ = true;
      else if (z_.avail_out != 0)
        throw Failure(display_ + ": not a complete gzip stream", kExitEnvironment);
    }
  }

 private:
  TarReader& out_;
  std::string display_;
  z_stream z_{};
  std::array<char, 1 << 16> buf_{};
  bool member_done_ = false;
};

// A layer blob's bytes, before it is known whether they are gzip or tar, and after.
struct LayerReader::State {
  State(std::string d, uint64_t max_bytes, std::string cap)
      : display(std::move(d)), tar(display, max_bytes, std::move(cap)) {}
  std::string display;
  TarReader tar;
  std::unique_ptr<LayerGunzipper> gunzip;
  std::string head;  // the first bytes, until there are two to tell the format by
  bool decided = false;

  void Decide() {
    const auto b0 = static_cast<unsigned char>(head[0]);
    const auto b1 = head.size() > 1 ? static_cast<unsigned char>(head[1]) : 0;
    if (b0 == 0x28 && b1 == 0xb5)
      throw Failure(
          display + ": a zstd-compressed layer (trainlock compares gzip and plain tar layers)",
          kExitEnvironment);
    if (b0 == 0x1f && b1 == 0x8b) gunzip = std::make_unique<LayerGunzipper>(tar, display);
    decided = true;
    Pass(head);
    head.clear();
  }

  void Pass(std::string_view bytes) {
    // zlib counts in 32 bits: a caller's piece goes on in slices it can take.
    for (size_t at = 0; at < bytes.size(); at += size_t{1} << 30) {
      const std::string_view slice = bytes.substr(at, size_t{1} << 30);
      if (gunzip) {
        gunzip->Feed(slice);
      } else {
        tar.Feed(slice);
      }
    }
  }
};

LayerReader::LayerReader(std::string display, uint64_t max_bytes, std::string cap)
    : state_(std::make_unique<State>(std::move(display), max_bytes, std::move(cap))) {}
LayerReader::~LayerReader() = default;

void LayerReader::Feed(std::string_view bytes) {
  State& s = *state_;
  if (!s.decided) {
    const size_t take = std::min(bytes.size(), 2 - s.head.size());
    s.head.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (s.head.size() < 2) return;
    s.Decide();
  }
  s.Pass(bytes);
}

LayerListing LayerReader::Finish() {
  State& s = *state_;
  if (!s.decided && !s.head.empty()) s.Decide();
  if (s.gunzip) s.gunzip->Finish();
  return s.tar.Finish();
}

uint64_t LayerReader::bytes() const {
  return state_->tar.bytes();
}

LayerListing ListLayerFile(const fs::path& path, const std::string& display, LayerBudget* budget) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec)))
    throw Failure(display + ": a symbolic link, not followed", kExitEnvironment);
  LayerBudget one;
  LayerBudget& b = budget ? *budget : one;
  const bool shared_binds = b.left < b.per_layer;
  LayerReader reader(display, shared_binds ? b.left : b.per_layer,
                     shared_binds
                         ? "what is left of the comparison's limit of uncompressed layers"
                         : "a layer's limit of " + std::to_string(b.per_layer >> 30) + " GiB");
  struct TakeFromBudget {  // also when the listing fails: what was read was read
    LayerBudget& b;
    const LayerReader& reader;
    ~TakeFromBudget() { b.left -= std::min(b.left, reader.bytes()); }
  } take{b, reader};
  try {
    StreamRegularFile(path, [&](std::string_view chunk) { reader.Feed(chunk); });
  } catch (const StreamError& e) {
    throw Failure(e.what(), kExitEnvironment);
  }
  return reader.Finish();
}

}  // namespace trainlock
