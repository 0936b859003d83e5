// Ed25519 report signing and verification with OpenSSL's EVP interface; see report_signing.h.
#include "report/report_signing.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>

#include "base/json_file.h"
#include "base/sha256.h"
#include "report/report_view.h"

namespace trainlock {
namespace {

using PkeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

constexpr const char* kAlgorithm = "ed25519";

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

PkeyPtr ReadKey(const std::string& pem, bool private_key) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  EVP_PKEY* key = private_key ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)
                              : PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr);
  PkeyPtr out(key, EVP_PKEY_free);
  if (!out) {
    throw KeyError(private_key ? "not a PEM private key (expected a PKCS#8 \"PRIVATE KEY\")"
                               : "not a PEM public key (expected \"PUBLIC KEY\")");
  }
  if (EVP_PKEY_id(out.get()) != EVP_PKEY_ED25519) throw KeyError("not an Ed25519 key");
  return out;
}

std::string RawPublicKey(EVP_PKEY* key) {
  size_t size = 0;
  EVP_PKEY_get_raw_public_key(key, nullptr, &size);
  std::string raw(size, '\0');
  if (EVP_PKEY_get_raw_public_key(key, reinterpret_cast<unsigned char*>(raw.data()), &size) != 1)
    throw KeyError("cannot read the raw Ed25519 public key");
  return raw;
}

std::string KeyIdOf(EVP_PKEY* key) {
  return "sha256:" + Sha256Hex(RawPublicKey(key));
}

std::string Base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// Strict base64: only canonical encodings of whole blocks decode (EVP_DecodeBlock alone would
// accept stray characters and lose the padding count).
bool FromBase64(const std::string& text, std::string* bytes) {
  if (text.empty() || text.size() % 4 != 0) return false;
  std::string out(text.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) return false;
  size_t padding = text.ends_with("==") ? 2 : text.ends_with("=") ? 1 : 0;
  out.resize(static_cast<size_t>(n) - padding);
  if (Base64(out) != text) return false;
  *bytes = std::move(out);
  return true;
}

std::string SignWith(EVP_PKEY* key, const std::string& message) {
  MdCtxPtr ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  size_t size = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &size,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1) {
    throw KeyError("OpenSSL could not sign with the Ed25519 key");
  }
  std::string signature(size, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &size,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1)
    throw KeyError("OpenSSL could not sign with the Ed25519 key");
  signature.resize(size);
  return signature;
}

bool VerifyWith(EVP_PKEY* key, const std::string& message, const std::string& signature) {
  MdCtxPtr ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key) == 1 &&
         EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                          signature.size(), reinterpret_cast<const unsigned char*>(message.data()),
                          message.size()) == 1;
}

}  // namespace

KeyPair GenerateEd25519KeyPair() {
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(
      EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr), EVP_PKEY_CTX_free);
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &raw) != 1)
    throw KeyError("OpenSSL could not generate an Ed25519 key");
  PkeyPtr key(raw, EVP_PKEY_free);
  BioPtr priv(BIO_new(BIO_s_mem()), BIO_free);
  BioPtr pub(BIO_new(BIO_s_mem()), BIO_free);
  if (PEM_write_bio_PrivateKey(priv.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1 ||
      PEM_write_bio_PUBKEY(pub.get(), key.get()) != 1) {
    throw KeyError("OpenSSL could not write the Ed25519 key as PEM");
  }
  return {BioText(priv.get()), BioText(pub.get())};
}

std::string PublicKeyId(const std::string& public_pem) {
  return KeyIdOf(ReadKey(public_pem, false).get());
}

std::string PrivateKeyId(const std::string& private_pem) {
  return KeyIdOf(ReadKey(private_pem, true).get());
}

std::string CanonicalReportBytes(const nlohmann::json& report) {
  if (!report.is_object() || !report.contains("signature")) return report.dump();
  nlohmann::json unsigned_report = report;
  unsigned_report.erase("signature");
  return unsigned_report.dump();
}

std::string SignedReportText(const nlohmann::json& report) {
  return report.dump(2) + "\n";
}

std::string PublicPemOf(const std::string& private_pem) {
  PkeyPtr key = ReadKey(private_pem, true);
  BioPtr pub(BIO_new(BIO_s_mem()), BIO_free);
  if (PEM_write_bio_PUBKEY(pub.get(), key.get()) != 1)
    throw KeyError("OpenSSL could not write the Ed25519 public key as PEM");
  return BioText(pub.get());
}

std::string Base64Encode(const std::string& bytes) {
  return Base64(bytes);
}

bool Base64DecodeStrict(const std::string& text, std::string* bytes) {
  return FromBase64(text, bytes);
}

std::string SignEd25519(const std::string& message, const std::string& private_pem) {
  PkeyPtr key = ReadKey(private_pem, true);
  return SignWith(key.get(), message);
}

bool VerifyEd25519(const std::string& message, const std::string& signature,
                   const std::string& public_pem) {
  PkeyPtr key = ReadKey(public_pem, false);
  return VerifyWith(key.get(), message, signature);
}

int FirstVerifyingEd25519(const std::string& message, const std::vector<std::string>& signatures,
                          const std::string& public_pem) {
  PkeyPtr key = ReadKey(public_pem, false);
  for (size_t i = 0; i < signatures.size(); ++i) {
    if (VerifyWith(key.get(), message, signatures[i])) return static_cast<int>(i);
  }
  return -1;
}

void SignReport(nlohmann::json& report, const std::string& private_pem) {
  PkeyPtr key = ReadKey(private_pem, true);
  const std::string signature = SignWith(key.get(), CanonicalReportBytes(report));
  report["signature"] = {
      {"algorithm", kAlgorithm}, {"key_id", KeyIdOf(key.get())}, {"value", Base64(signature)}};
}

std::string VerifyReportSignature(const std::string& report_text, const std::string& public_pem) {
  PkeyPtr key = ReadKey(public_pem, false);
  std::string problem;
  std::optional<nlohmann::json> parsed = TryParseJsonText(report_text, &problem);
  if (!parsed) return "signature: cannot be verified, the report is refused: " + problem;
  nlohmann::json report = std::move(*parsed);
  if (!report.is_object() || !report.contains("signature"))
    return "signature: missing, the report is not signed (sign it with trainlock-validate --sign "
           "KEY)";
  const nlohmann::json& sig = report["signature"];
  if (!sig.is_object() || StringMember(sig, "algorithm") != kAlgorithm) {
    return "signature: malformed, expected {\"algorithm\": \"ed25519\", \"key_id\", \"value\"}";
  }
  const std::string expected_id = KeyIdOf(key.get());
  if (StringMember(sig, "key_id") != expected_id) {
    return "signature: made with another key (" + StringMember(sig, "key_id") +
           ", not the given key " + expected_id + ")";
  }
  std::string signature;
  if (!FromBase64(StringMember(sig, "value"), &signature))
    return "signature: malformed, its value is not canonical base64";
  if (!VerifyWith(key.get(), CanonicalReportBytes(report), signature))
    return "signature: does not verify, the report was changed after it was signed";
  if (SignedReportText(report) != report_text) {
    return "signature: covers the content, but the file is not in the signed layout: bytes were "
           "changed after signing";
  }
  return "";
}

}  // namespace trainlock
