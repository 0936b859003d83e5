// SHA-256 through OpenSSL: of a byte string, incrementally, and of a file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace trainlock {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t size);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  // Lower-case hex of the digest; the object cannot be updated afterwards.
  std::string HexDigest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string Sha256Hex(std::string_view data);

// Hashes a regular file in chunks (file_stream.h); throws std::runtime_error naming the file
// when it cannot be read or is not a regular file (a FIFO is refused, never waited on).
// `size_out`, when given, receives the number of bytes hashed.
std::string Sha256FileHex(const std::filesystem::path& path, uint64_t* size_out = nullptr);

// True for exactly 64 lower-case hex characters.
bool IsSha256Hex(std::string_view s);

}  // namespace trainlock
