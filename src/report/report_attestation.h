// The report as an in-toto attestation: a Statement v1 in a DSSE envelope, signed with the
// same Ed25519 key as the report (`trainlock report --format intoto --key KEY`), which `gate
// --key PUB` accepts in place of the report and standard DSSE verifiers check offline.
//
// Envelope: {"payloadType": "application/vnd.in-toto+json", "payload": base64(statement),
// "signatures": [{"keyid": "sha256:<hex SHA-256 of the raw 32-byte Ed25519 public key, not of
// its SPKI DER>", "sig": base64(Ed25519 over PAE(payloadType, statement))}]}, PAE as the DSSE
// spec defines it:
// "DSSEv1" SP len(type) SP type SP len(body) SP body, lengths in ASCII decimal.
// Statement: subject [{name: the image's repository, digest: {sha256: <hex>}}] (the image the
// report ran in), predicateType https://in-toto.io/attestation/test-result/v0.1, predicate
// {result PASSED|FAILED (the verdict), passedTests, warnedTests (skipped checks), failedTests,
// configuration: [the report itself as a resource descriptor {name "report.json", mediaType,
// digest {sha256}, content: base64 of the signed report's bytes}, the lock's build identity]}.
#pragma once

#include <string>

namespace trainlock {

constexpr const char* kDssePayloadType = "application/vnd.in-toto+json";
constexpr const char* kInTotoStatementType = "https://in-toto.io/Statement/v1";
constexpr const char* kTestResultPredicateType = "https://in-toto.io/attestation/test-result/v0.1";
constexpr const char* kReportMediaType = "application/vnd.trainlock.report.v1+json";

// DSSE's pre-authentication encoding of a payload.
std::string DssePae(const std::string& payload_type, const std::string& payload);

// The envelope's text for a signed report's bytes. Throws Failure (exit 2) when the report is
// not signed by `private_pem`'s key or names no image digest (nothing to attest), KeyError
// when the key is not an Ed25519 private key.
std::string ReportAttestation(const std::string& report_text, const std::string& private_pem);

// True when `text` is a JSON object with a "payloadType" member: an envelope, not a report.
bool LooksLikeEnvelope(const std::string& text);

// Opens an envelope (untrusted: bounded JSON; base64 standard or URL-safe as DSSE allows, padded
// or not, otherwise strict, a field that is neither refused naming it; at most 16 signatures,
// the key parsed once for all) with `public_pem`: the DSSE
// signature over PAE, the payload type, the statement's type and predicate type, and the
// subject digest equal to the image digest of the report it carries (whose bytes must hash to
// the digest the statement names). Returns "" and sets *report_text, or why not as one
// sentence that starts with "signature: ".
std::string OpenReportAttestation(const std::string& envelope_text, const std::string& public_pem,
                                  std::string* report_text);

}  // namespace trainlock
