// The in-toto attestation of a report in a DSSE envelope; see report_attestation.h.
#include "report/report_attestation.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "base/failure.h"
#include "base/json_file.h"
#include "base/sha256.h"
#include "report/report_signing.h"
#include "report/report_view.h"

namespace trainlock {
namespace {

using Json = nlohmann::json;

constexpr const char* kReportName = "report.json";
// More signatures than any real envelope carries is a malformed envelope, not more work.
constexpr size_t kMaxDsseSignatures = 16;

// The repository part of an image reference: the name before "@sha256:..." (a tag stays, as
// it is part of how the image was named when it ran).
std::string SubjectName(const std::string& ref) {
  return ref.substr(0, ref.find('@'));
}

// The hex of a "sha256:<64 hex>" digest; "" when it is not one.
std::string DigestHex(const std::string& digest) {
  const std::string prefix = "sha256:";
  if (digest.rfind(prefix, 0) != 0 || digest.size() != prefix.size() + 64) return "";
  return digest.substr(prefix.size());
}

Json TestResultPredicate(const ReportView& view, const std::string& report_text,
                         const std::string& lock_sha256) {
  Json passed = Json::array(), warned = Json::array(), failed = Json::array();
  for (const CheckView& c : view.checks) {
    (c.status == "pass" ? passed : c.status == "skip" ? warned : failed).push_back(c.id);
  }
  Json report_descriptor = {{"name", kReportName},
                            {"mediaType", kReportMediaType},
                            {"digest", {{"sha256", Sha256Hex(report_text)}}},
                            {"content", Base64Encode(report_text)}};
  Json lock_descriptor = {{"name", "trainlock.lock"}, {"digest", {{"sha256", lock_sha256}}}};
  return {{"result", view.verdict == "pass" ? "PASSED" : "FAILED"},
          {"configuration", Json::array({report_descriptor, lock_descriptor})},
          {"passedTests", passed},
          {"warnedTests", warned},
          {"failedTests", failed}};
}

// DSSE allows standard or URL-safe base64 (RFC 4648 sections 4 and 5), and verifiers accept
// it padded or not (@sigstore/verify, go-securesystemslib): one alphabet throughout, then the
// strict canonical decode (no whitespace, no stray characters, zero trailing bits).
bool DsseBase64Decode(const std::string& text, std::string* bytes) {
  const bool url_safe = text.find_first_of("-_") != std::string::npos;
  if (url_safe && text.find_first_of("+/") != std::string::npos) return false;
  std::string standard = text;
  if (url_safe) {
    for (char& c : standard) c = c == '-' ? '+' : c == '_' ? '/' : c;
  }
  if (standard.find('=') == std::string::npos) {
    if (standard.size() % 4 == 1) return false;
    standard.append((4 - standard.size() % 4) % 4, '=');
  }
  return Base64DecodeStrict(standard, bytes);
}

std::string Refused(const std::string& why) {
  return "signature: the attestation envelope is refused: " + why;
}

// The report's bytes from the statement's report.json descriptor, checked against its digest.
std::string ReportFromStatement(const Json& statement, std::string* report_text) {
  const Json* predicate = statement.contains("predicate") ? &statement["predicate"] : nullptr;
  if (!predicate || !predicate->is_object() || !predicate->contains("configuration") ||
      !(*predicate)["configuration"].is_array())
    return Refused("the statement's predicate has no configuration");
  for (const Json& d : (*predicate)["configuration"]) {
    if (!d.is_object() || StringMember(d, "name") != kReportName) continue;
    std::string bytes;
    if (!DsseBase64Decode(StringMember(d, "content"), &bytes))
      return Refused("the report's content is not valid base64 (standard or URL-safe)");
    const Json* digest = d.contains("digest") && d["digest"].is_object() ? &d["digest"] : nullptr;
    if (!digest || StringMember(*digest, "sha256") != Sha256Hex(bytes))
      return Refused("the report's bytes do not hash to the digest the statement names");
    *report_text = std::move(bytes);
    return "";
  }
  return Refused("the statement carries no report.json");
}

// The statement's one subject digest must be the image the carried report ran in.
std::string CheckSubject(const Json& statement, const std::string& report_text) {
  std::string problem;
  std::optional<Json> report = TryParseJsonText(report_text, &problem);
  if (!report) return Refused("the report it carries is not JSON: " + problem);
  const std::string image_hex = DigestHex(ViewOfReport(*report).image_digest);
  if (image_hex.empty()) return Refused("the report it carries names no image digest");
  const Json& subjects = statement["subject"];
  if (!subjects.is_array() || subjects.size() != 1 || !subjects[0].is_object() ||
      !subjects[0].contains("digest") || !subjects[0]["digest"].is_object())
    return Refused("the statement must have exactly one subject with a digest");
  const std::string subject_hex = StringMember(subjects[0]["digest"], "sha256");
  if (subject_hex != image_hex) {
    return Refused("its subject digest sha256:" + subject_hex.substr(0, 64) +
                   " is not the image the report ran in (sha256:" + image_hex + ")");
  }
  return "";
}

// The envelope's signatures, decoded: at most kMaxDsseSignatures, each an object whose "sig"
// is base64 (a malformed entry refuses the envelope, naming it, rather than being skipped).
std::string DsseSignatures(const Json& envelope, std::vector<std::string>* sigs) {
  if (!envelope.contains("signatures") || !envelope["signatures"].is_array() ||
      envelope["signatures"].empty())
    return Refused("it has no signatures");
  const Json& list = envelope["signatures"];
  if (list.size() > kMaxDsseSignatures) {
    return Refused("it is malformed: " + std::to_string(list.size()) +
                   " signatures, more than the " + std::to_string(kMaxDsseSignatures) +
                   " a verifier reads");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string field = "signatures[" + std::to_string(i) + "].sig";
    if (!list[i].is_object() || !list[i].contains("sig") || !list[i]["sig"].is_string())
      return Refused("it is malformed: " + field + " is missing or not a string");
    std::string sig;
    if (!DsseBase64Decode(list[i]["sig"].get<std::string>(), &sig))
      return Refused(field + " is not valid base64 (standard or URL-safe)");
    sigs->push_back(std::move(sig));
  }
  return "";
}

// The envelope's payload, once one of its signatures verifies over PAE with the key (parsed
// once for all of them).
std::string VerifiedPayload(const Json& envelope, const std::string& public_pem,
                            std::string* payload) {
  if (StringMember(envelope, "payloadType") != kDssePayloadType) {
    return Refused("payloadType is not " + std::string(kDssePayloadType));
  }
  if (!DsseBase64Decode(StringMember(envelope, "payload"), payload))
    return Refused("its payload is not valid base64 (standard or URL-safe)");
  std::vector<std::string> sigs;
  if (std::string why = DsseSignatures(envelope, &sigs); !why.empty()) return why;
  if (FirstVerifyingEd25519(DssePae(kDssePayloadType, *payload), sigs, public_pem) >= 0) return "";
  return Refused("no signature in it verifies with the given key (" + PublicKeyId(public_pem) +
                 "): it was changed after signing, or signed with another key");
}

}  // namespace

std::string DssePae(const std::string& payload_type, const std::string& payload) {
  return "DSSEv1 " + std::to_string(payload_type.size()) + " " + payload_type + " " +
         std::to_string(payload.size()) + " " + payload;
}

std::string ReportAttestation(const std::string& report_text, const std::string& private_pem) {
  if (std::string problem = VerifyReportSignature(report_text, PublicPemOf(private_pem));
      !problem.empty()) {
    throw Failure("the report must be signed with this key before it is attested (" + problem + ")",
                  kExitBadInput);
  }
  const ReportView view = ViewOfReport(ParseJsonText(report_text, kReportName));
  const std::string hex = DigestHex(view.image_digest);
  if (hex.empty()) {
    throw Failure("the report names no image digest: an attestation's subject is the image",
                  kExitBadInput);
  }
  Json statement = {
      {"_type", kInTotoStatementType},
      {"subject",
       Json::array({{{"name", SubjectName(view.image_ref)}, {"digest", {{"sha256", hex}}}}})},
      {"predicateType", kTestResultPredicateType},
      {"predicate", TestResultPredicate(view, report_text, view.lock_sha256)}};
  const std::string payload = statement.dump();
  const std::string sig = SignEd25519(DssePae(kDssePayloadType, payload), private_pem);
  Json envelope = {
      {"payloadType", kDssePayloadType},
      {"payload", Base64Encode(payload)},
      {"signatures",
       Json::array({{{"keyid", PrivateKeyId(private_pem)}, {"sig", Base64Encode(sig)}}})}};
  return envelope.dump(2) + "\n";
}

bool LooksLikeEnvelope(const std::string& text) {
  std::string problem;
  std::optional<Json> parsed = TryParseJsonText(text, &problem);
  return parsed && parsed->is_object() && parsed->contains("payloadType");
}

std::string OpenReportAttestation(const std::string& envelope_text, const std::string& public_pem,
                                  std::string* report_text) {
  std::string problem;
  std::optional<Json> envelope = TryParseJsonText(envelope_text, &problem);
  if (!envelope || !envelope->is_object()) return Refused("not a JSON object: " + problem);
  std::string payload;
  if (std::string why = VerifiedPayload(*envelope, public_pem, &payload); !why.empty()) return why;
  std::optional<Json> statement = TryParseJsonText(payload, &problem);
  if (!statement || !statement->is_object()) return Refused("its payload is not JSON: " + problem);
  if (StringMember(*statement, "_type") != kInTotoStatementType)
    return Refused("its payload is not an in-toto Statement v1");
  if (StringMember(*statement, "predicateType") != kTestResultPredicateType)
    return Refused("its predicateType is not " + std::string(kTestResultPredicateType));
  std::string report;
  if (std::string why = ReportFromStatement(*statement, &report); !why.empty()) return why;
  if (std::string why = CheckSubject(*statement, report); !why.empty()) return why;
  *report_text = std::move(report);
  return "";
}

}  // namespace trainlock
