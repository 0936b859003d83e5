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

// Checks a report file's text against a public key. Returns "" when it verifies, else why not
// as one sentence that starts with "signature: ".
std::string VerifyReportSignature(const std::string& report_text, const std::string& public_pem);

}  // namespace trainlock
