// OpenSSL EVP-based SHA-256; see sha256.h.
#include "base/sha256.h"

#include <openssl/evp.h>

#include <array>
#include <stdexcept>

#include "base/failure.h"
#include "base/file_stream.h"

namespace trainlock {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  if (!impl_->ctx || EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) != 1) {
    throw Failure("OpenSSL: cannot initialise SHA-256", kExitEnvironment);
  }
}

Sha256::~Sha256() {
  EVP_MD_CTX_free(impl_->ctx);
}

void Sha256::Update(const void* data, size_t size) {
  if (size > 0 && EVP_DigestUpdate(impl_->ctx, data, size) != 1) {
    throw Failure("OpenSSL: SHA-256 update failed", kExitEnvironment);
  }
}

std::string Sha256::HexDigest() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(impl_->ctx, digest.data(), &length) != 1) {
    throw Failure("OpenSSL: SHA-256 final failed", kExitEnvironment);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xf]);
  }
  return hex;
}

std::string Sha256Hex(std::string_view data) {
  Sha256 h;
  h.Update(data);
  return h.HexDigest();
}

std::string Sha256FileHex(const std::filesystem::path& path, uint64_t* size_out) {
  Sha256 h;
  const uint64_t total = StreamRegularFile(path, [&](std::string_view chunk) { h.Update(chunk); });
  if (size_out) *size_out = total;
  return h.HexDigest();
}

bool IsSha256Hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace trainlock
