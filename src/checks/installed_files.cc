// env.packages' file check; see installed_files.h.
#include "checks/installed_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

#include "base/scoped_fd.h"
#include "base/sha256.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxInstalledEntries = 500000;           // files and directories walked
constexpr size_t kMaxRecordFileBytes = size_t{64} << 20;  // torch's RECORD is about 3 MiB
constexpr uint64_t kMaxHashedBytes = uint64_t{256} << 30;
constexpr size_t kListedFindings = 100;  // per list; `problems` counts them all

// Who owns a file under one site-packages directory, by its RECORD row.
struct OwnedFile {
  std::string hash;
  std::string size;
  std::string dist_info;  // the .dist-info whose RECORD lists it
  bool seen = false;
};
using Owners = std::map<std::string, OwnedFile>;  // relative generic path -> owner

// The file's bytes when it is a regular file (no link followed) of at most `max` bytes.
std::string ReadRecordFile(const fs::path& path, size_t max, std::string* why) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (fd.get() < 0) {
    *why = std::string("cannot be opened (a link is not followed): ") + std::strerror(errno);
    return "";
  }
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    *why = "not a regular file";
    return "";
  }
  if (static_cast<uint64_t>(st.st_size) > max) {
    *why = "over " + std::to_string(max >> 20) + " MiB, not read";
    return "";
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

// "<algorithm>" and "<digest>" of a RECORD hash field.
bool SplitRecordHash(const std::string& hash, std::string* algorithm, std::string* digest) {
  const size_t eq = hash.find('=');
  if (eq == std::string::npos) return false;
  *algorithm = hash.substr(0, eq);
  *digest = hash.substr(eq + 1);
  return true;
}

// The spec lets RECORD itself, its signatures and compiled bytecode go without a hash.
bool MayLackHash(const std::string& rel) {
  const std::string name = fs::path(rel).filename().string();
  const std::string parent = fs::path(rel).parent_path().filename().string();
  const bool in_dist_info =
      parent.size() > 10 && parent.compare(parent.size() - 10, 10, ".dist-info") == 0;
  if (in_dist_info && (name == "RECORD" || name == "RECORD.jws" || name == "RECORD.p7s"))
    return true;
  return name.ends_with(".pyc") || name.ends_with(".pyo");
}

// A `__pycache__/<module>.<tag>.pyc` whose `<module>.py` is owned: what Python compiles.
bool CompiledFromOwnedSource(const std::string& rel, const Owners& owners) {
  const fs::path p(rel);
  if (p.parent_path().filename() != "__pycache__" || p.extension() != ".pyc") return false;
  const std::string name = p.filename().string();
  const std::string module = name.substr(0, name.find('.'));
  const fs::path source = p.parent_path().parent_path() / (module + ".py");
  return owners.count(source.generic_string()) > 0;
}

class Verifier {
 public:
  Verifier(Deadline deadline, InstalledFiles* out) : deadline_(deadline), out_(*out) {}

  void LoadRecord(const fs::path& dist_info, Owners& owners) {
    std::string why;
    const std::string text = ReadRecordFile(dist_info / "RECORD", kMaxRecordFileBytes, &why);
    std::vector<RecordRow> rows;
    if (why.empty() && !ParseRecord(text, &rows, &why)) why = "malformed: " + why;
    if (!why.empty()) return Note(out_.unreadable, (dist_info / "RECORD").string() + ": " + why);
    const std::string dist = dist_info.filename().string();
    for (const RecordRow& row : rows) {
      const fs::path rel = fs::path(row.path).lexically_normal();
      const std::string key = rel.generic_string();
      if (row.path.empty() || rel.is_absolute() || key == "." || key.starts_with("..")) {
        ++out_.records_outside;  // console scripts: bin/ is not on the interpreter's path
        continue;
      }
      auto [it, added] = owners.try_emplace(key, OwnedFile{row.hash, row.size, dist});
      if (!added && it->second.hash != row.hash) {
        Note(out_.unreadable, (dist_info.parent_path() / rel).string() + ": listed by " +
                                  it->second.dist_info + " and " + dist + " with other hashes");
      }
    }
  }

  // Every entry under `dir` against `owners`; then each owned file not found is missing.
  void Walk(const fs::path& dir, Owners& owners) {
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
    for (; !ec && it != end && !stopped_; it.increment(ec)) {
      if (++entries_ > kMaxInstalledEntries) {
        Stop(dir.string() + ": more than " + std::to_string(kMaxInstalledEntries) +
             " entries; not read further");
        break;
      }
      if (std::chrono::steady_clock::now() > deadline_) {
        Stop(dir.string() + ": not verified within the time limit (--timeout)");
        break;
      }
      Entry(*it, dir, owners);
    }
    if (ec) Note(out_.unreadable, dir.string() + ": cannot be listed whole: " + ec.message());
    if (stopped_) return;
    for (const auto& [rel, owned] : owners) {
      if (!owned.seen)
        Note(out_.missing, (dir / rel).string() + ": listed in " + owned.dist_info + "'s RECORD");
    }
  }

 private:
  void Note(std::vector<std::string>& list, std::string finding) {
    ++out_.problems;
    if (list.size() < kListedFindings) list.push_back(std::move(finding));
  }
  void Stop(std::string why) {
    stopped_ = true;
    Note(out_.unreadable, std::move(why));
  }

  void Entry(const fs::directory_entry& e, const fs::path& dir, Owners& owners) {
    std::error_code ec;
    const fs::file_status st = e.symlink_status(ec);
    const std::string rel = e.path().lexically_relative(dir).generic_string();
    auto owned = owners.find(rel);
    if (owned != owners.end()) owned->second.seen = true;
    if (ec) return Note(out_.unreadable, e.path().string() + ": " + ec.message());
    if (fs::is_directory(st)) return;
    if (fs::is_symlink(st))
      return Note(out_.unreadable, e.path().string() + ": a link (not followed)");
    if (!fs::is_regular_file(st))
      return Note(out_.unreadable, e.path().string() + ": not a regular file");
    if (owned != owners.end()) return Verify(e.path(), rel, owned->second);
    if (CompiledFromOwnedSource(rel, owners)) {
      ++out_.files_compiled;
      return;
    }
    Note(out_.unowned, e.path().string());
  }

  void Verify(const fs::path& path, const std::string& rel, const OwnedFile& owned) {
    if (owned.hash.empty()) {
      if (MayLackHash(rel)) {
        ++out_.files_unhashed;
        return;
      }
      return Note(out_.unreadable,
                  path.string() + ": listed in " + owned.dist_info + "'s RECORD without a hash");
    }
    std::string algorithm, digest;
    if (!SplitRecordHash(owned.hash, &algorithm, &digest) || algorithm != "sha256") {
      return Note(out_.unreadable, path.string() + ": RECORD hash '" + owned.hash +
                                       "' is not a sha256 this check verifies");
    }
    uint64_t size = 0;
    std::string hex, why;
    if (!HashFile(path, &hex, &size, &why))
      return Note(out_.unreadable, path.string() + ": " + why);
    if (!owned.size.empty() && owned.size != std::to_string(size)) {
      return Note(out_.changed, path.string() + ": " + std::to_string(size) + " bytes, " +
                                    owned.dist_info + "'s RECORD lists " + owned.size);
    }
    const std::string actual = RecordDigestFromHex(hex);
    if (actual != digest) {
      return Note(out_.changed, path.string() + ": sha256=" + actual + ", " + owned.dist_info +
                                    "'s RECORD lists sha256=" + digest);
    }
    ++out_.files_verified;
    out_.bytes_verified += static_cast<int64_t>(size);
  }

  // SHA-256 of a regular file opened without following a link, with one reused buffer.
  bool HashFile(const fs::path& path, std::string* hex, uint64_t* size, std::string* why) {
    ScopedFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      *why = fd.get() < 0 ? std::string("cannot be opened: ") + std::strerror(errno)
                          : "not a regular file";
      return false;
    }
    if (hashed_ + static_cast<uint64_t>(st.st_size) > kMaxHashedBytes) {
      *why = "not hashed: over the cap of " + std::to_string(kMaxHashedBytes >> 30) + " GiB";
      stopped_ = true;
      return false;
    }
    buffer_.resize(size_t{1} << 20);
    Sha256 h;
    for (*size = 0;;) {
      const ssize_t n = ::read(fd.get(), buffer_.data(), buffer_.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        *why = std::string("read error: ") + std::strerror(errno);
        return false;
      }
      if (n == 0) break;
      h.Update(buffer_.data(), static_cast<size_t>(n));
      *size += static_cast<uint64_t>(n);
    }
    hashed_ += *size;
    *hex = h.HexDigest();
    return true;
  }

  Deadline deadline_;
  InstalledFiles& out_;
  std::vector<char> buffer_;
  size_t entries_ = 0;
  uint64_t hashed_ = 0;
  bool stopped_ = false;
};

}  // namespace

bool ParseRecord(std::string_view text, std::vector<RecordRow>* rows, std::string* error) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  size_t line = 1;
  auto end_row = [&]() {
    const bool blank = fields.size() == 1 && fields[0].empty();
    if (!blank && fields.size() != 3) {
      *error = "line " + std::to_string(line) + " has " + std::to_string(fields.size()) +
               " fields, not 3 (path, hash, size)";
      return false;
    }
    if (!blank) rows->push_back({fields[0], fields[1], fields[2]});
    fields.assign(1, "");
    return true;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        line += c == '\n';
        fields.back() += c;
      }
    } else if (c == '"' && fields.back().empty()) {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (!end_row()) return false;
      ++line;
    } else {
      fields.back() += c;
    }
  }
  if (quoted) {
    *error = "line " + std::to_string(line) + ": a quoted field does not end";
    return false;
  }
  return end_row();
}

std::string RecordDigestFromHex(std::string_view hex) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    bytes += static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1]));
  }
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char b : bytes) {
    acc = (acc << 8) | b;
    for (bits += 8; bits >= 6; bits -= 6) out += kAlphabet[(acc >> (bits - 6)) & 63];
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 63];
  return out;
}

InstalledFiles VerifyInstalledFiles(const std::vector<fs::path>& dirs,
                                    const std::vector<fs::path>& dist_infos, Deadline deadline) {
  InstalledFiles out;
  Verifier verifier(deadline, &out);
  for (const fs::path& dir : dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;  // a platlib the Python has not made
    Owners owners;
    for (const fs::path& d : dist_infos) {
      if (d.parent_path() == dir) verifier.LoadRecord(d, owners);
    }
    verifier.Walk(dir, owners);
  }
  return out;
}

}  // namespace trainlock
