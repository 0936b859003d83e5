// Ed25519 signatures over a report's canonical bytes (`trainlock keygen`, `validate --sign`,
// `gate --key`), through OpenSSL.
//
// The signed bytes are the report without its "signature" member, serialized compactly with
// sorted keys (nlohmann's dump()). A signed report is written in one fixed layout,
// SignedReportText(), and a verifier also requires the file to be in that layout: then any
// changed byte, even whitespace the JSON meaning ignores, is caught, not only changed values.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace trainlock {

// A key file that is missing, unreadable or not an Ed25519 key of the expected kind.
class KeyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct KeyPair {
  std::string private_pem;  // PKCS#8 "PRIVATE KEY"
  std::string public_pem;   // SubjectPublicKeyInfo "PUBLIC KEY"
};

KeyPair GenerateEd25519KeyPair();

// The key id of a private key's public half; throws KeyError when `private_pem` is not an
// Ed25519 private key (the validator checks its --sign key before the long run).
std::string PrivateKeyId(const std::string& private_pem);

// "sha256:<hex>" of the raw 32-byte public key: names the key in the signature so a mismatch
// says which key signed. Throws KeyError when `public_pem` is not an Ed25519 public key.
std::string PublicKeyId(const std::string& public_pem);

// The bytes a signature covers: `report` without "signature", compact, keys sorted.
std::string CanonicalReportBytes(const nlohmann::json& report);

// The one layout a signed report is written in: dump(2) with sorted keys and a final newline.
std::string SignedReportText(const nlohmann::json& report);

// Adds "signature": {"algorithm": "ed25519", "key_id": ..., "value": base64} to `report`,
// replacing any earlier one. Throws KeyError when `private_pem` is not an Ed25519 private key.
void SignReport(nlohmann::json& report, const std::string& private_pem);

// The public key (SubjectPublicKeyInfo PEM) of an Ed25519 private key; throws KeyError.
std::string PublicPemOf(const std::string& private_pem);

// A raw Ed25519 signature over `message` (64 bytes); throws KeyError. The DSSE envelope
// (report_attestation.h) signs its PAE bytes with it.
std::string SignEd25519(const std::string& message, const std::string& private_pem);

// Whether `signature` is `public_pem`'s Ed25519 signature over `message`; throws KeyError when
// `public_pem` is not an Ed25519 public key.
bool VerifyEd25519(const std::string& message, const std::string& signature,
                   const std::string& public_pem);

// The index of the first of `signatures` that is `public_pem`'s Ed25519 signature over
// `message`, or -1 when none is. The key is parsed once, whatever the number of signatures;
// throws KeyError when `public_pem` is not an Ed25519 public key.
int FirstVerifyingEd25519(const std::string& message, const std::vector<std::string>& signatures,
                          const std::string& public_pem);

// Standard base64 with padding, and its strict inverse: only the canonical encoding of some
// bytes decodes (no whitespace, no stray characters, no other padding); false otherwise.
std::string Base64Encode(const std::string& bytes);
bool Base64DecodeStrict(const std::string& text, std::string* bytes);

// Checks a report file's text against a public key. Returns "" when it verifies, else why not
// as one sentence that starts with "signature: ".
std::string VerifyReportSignature(const std::string& report_text, const std::string& public_pem);

}  // namespace trainlock
