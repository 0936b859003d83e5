// Specification of `trainlock gate`: one test per refusal reason, the signature's coverage of
// every byte, and the CLI's exit codes and listing of every reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/failure.h"
#include "base/sha256.h"
#include "base/time_text.h"
#include "compat/catalog.h"
#include "project/check_ids.h"
#include "project/project.h"
#include "report/gate.h"
#include "report/pass_rules.h"
#include "report/report_attestation.h"
#include "report/report_signing.h"
#include "report/report_view.h"
#include "test_support.h"

namespace trainlock {
namespace {

using nlohmann::json;
using testing::ReadFile;
using testing::SourceDir;

class Gate : public ::testing::Test {
 protected:
  void SetUp() override {
    project_ = LoadProject(SourceDir() / "examples/tiny");
    lock_ = *project_.lock;
    report_ = json::parse(ReadFile(SourceDir() / "tests/fixtures/reports/tiny-report.json"));
    report_["lock_sha256"] = project_.lock_sha256;
    report_["config_sha256"] = project_.config_sha256;
    now_ = *ParseRfc3339(report_["started_at"].get<std::string>()) + 3600;
  }

  GateRequest Request(const std::string& text) {
    GateRequest r;
    r.report_path = "report.json";
    r.report_text = text;
    r.lock = &lock_;
    r.lock_path = "trainlock.lock";
    r.lock_sha256 = project_.lock_sha256;
    r.now_s = now_;
    r.allow_unsigned = true;  // the signature's own tests say otherwise
    return r;
  }

  GateDecision Decide(const GateRequest& request) { return EvaluateGate(request, catalog()); }
  // Parsed once per test process: the byte-by-byte tests decide thousands of times.
  static const Catalog& catalog() {
    static const Catalog embedded = Catalog::Embedded();
    return embedded;
  }
  GateDecision Decide() { return Decide(Request(report_.dump(2))); }

  static bool HasReason(const GateDecision& d, const std::string& topic, const std::string& text) {
    return std::any_of(d.reasons.begin(), d.reasons.end(), [&](const std::string& r) {
      return r.starts_with(topic + ":") && r.find(text) != std::string::npos;
    });
  }

  static json* Check(json& report, const std::string& id) {
    for (json& c : report["checks"]) {
      if (c["id"] == id) return &c;
    }
    return nullptr;
  }

  Project project_;
  Lockfile lock_;
  json report_;
  int64_t now_ = 0;
};

TEST_F(Gate, MatchingReportClears) {
  GateDecision d = Decide();
  EXPECT_TRUE(d.allowed()) << ::testing::PrintToString(d.reasons);
}

TEST_F(Gate, ReportOfAnotherLockIsRefused) {
  report_["lock_sha256"] = std::string(64, 'a');
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "lock", "validated lock aaaaaaaaaaaa, not trainlock.lock"));
}

TEST_F(Gate, ImageDigestOtherThanTheLockedImageIsRefused) {
  lock_.images["cpu"] = {"registry.example/tiny:1", "sha256:" + std::string(64, 'b'), std::nullopt,
                         ""};
  report_["image"] = {{"ref", "registry.example/tiny:1"},
                      {"digest", "sha256:" + std::string(64, 'c')}};
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "image", "not the lock's cpu image sha256:bbbb"));
}

TEST_F(Gate, ReportOutsideTheLockedImageIsRefused) {
  lock_.images["cpu"] = {"registry.example/tiny:1", "sha256:" + std::string(64, 'b'), std::nullopt,
                         ""};
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "image", "not produced inside the locked cpu image"));
}

TEST_F(Gate, MatchingImageDigestClears) {
  const std::string digest = "sha256:" + std::string(64, 'b');
  lock_.images["cpu"] = {"registry.example/tiny:1", digest, std::nullopt, ""};
  report_["image"] = {{"ref", "registry.example/tiny:1"}, {"digest", digest}};
  EXPECT_TRUE(Decide().allowed());
}

TEST_F(Gate, DeviceNotAmongTheTargetAcceleratorsIsRefused) {
  lock_.targets["cpu"].accelerators = {"H200"};
  report_["devices"] = json::array({{{"index", 0},
                                     {"name", "NVIDIA A100-SXM4-80GB"},
                                     {"uuid", "GPU-1"},
                                     {"memory_bytes", 85899345920},
                                     {"compute_capability", "8.0"}}});
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "devices",
                        "device 0 ('NVIDIA A100-SXM4-80GB') is not among target "
                        "cpu's accelerators (H200)"));
}

TEST_F(Gate, NoDeviceWhenTheTargetNamesAcceleratorsIsRefused) {
  lock_.targets["cpu"].accelerators = {"H200"};
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "devices", "saw no accelerator, but target cpu runs on H200"));
}

TEST_F(Gate, RequiredCheckThatFailedIsRefused) {
  (*Check(report_, "train.roundtrip"))["status"] = "fail";
  report_["verdict"] = "fail";
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "checks", "required check train.roundtrip failed"));
}

TEST_F(Gate, SkipOfARequiredCheckIsARefusal) {
  (*Check(report_, "train.eval"))["status"] = "skip";
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "checks", "required check train.eval was skipped"));
}

TEST_F(Gate, CheckRequiredOnTheCommandLineMustPass) {
  GateRequest r = Request(report_.dump(2));
  r.require = {"comm.ddp"};
  GateDecision d = Decide(r);
  EXPECT_TRUE(HasReason(d, "checks", "required check comm.ddp was skipped"));
}

TEST_F(Gate, FailedCheckThatIsNotRequiredStillRefuses) {
  (*Check(report_, "env.versions"))["status"] = "fail";
  report_["verdict"] = "fail";
  EXPECT_TRUE(HasReason(Decide(), "checks", "env.versions failed (not required"));
}

// A node the validator could not judge (verdict "error") is refused as not judged, never
// reported as a failing node.
TEST_F(Gate, AReportOfANodeNotJudgedIsRefusedAsNotJudged) {
  report_["verdict"] = "error";
  report_["environment_error"] =
      "engine hf-trainer: /usr/bin/python3 cannot import transformers (No module named "
      "'transformers'): install transformers in that interpreter or pass --python PATH";
  for (json& c : report_["checks"]) c["status"] = "skip";
  GateDecision d = Decide();
  EXPECT_FALSE(d.allowed());
  EXPECT_TRUE(HasReason(d, "not-judged", "the node was not judged"));
  EXPECT_TRUE(HasReason(d, "not-judged", "cannot import transformers"));
  EXPECT_FALSE(HasReason(d, "checks", "")) << ::testing::PrintToString(d.reasons);
}

TEST_F(Gate, VerdictThatContradictsPassingChecksIsRefused) {
  report_["verdict"] = "fail";
  EXPECT_TRUE(HasReason(Decide(), "checks", "verdict is 'fail'"));
}

TEST_F(Gate, ReportOlderThanMaxAgeIsRefused) {
  GateRequest r = Request(report_.dump(2));
  r.max_age_s = 1800;
  GateDecision d = Decide(r);
  EXPECT_TRUE(HasReason(d, "age", "the report is 1h 0m old"));
  EXPECT_TRUE(HasReason(d, "age", "older than --max-age 30m 0s"));
}

TEST_F(Gate, ReportYoungerThanMaxAgeClears) {
  GateRequest r = Request(report_.dump(2));
  r.max_age_s = 7200;
  EXPECT_TRUE(Decide(r).allowed());
}

TEST_F(Gate, AReportFromAnotherNodeIsRefusedNamingBoth) {
  GateRequest r = Request(report_.dump(2));
  r.node = "gpu-017";
  GateDecision d = Decide(r);
  EXPECT_TRUE(HasReason(d, "node", "made on 'vm', not on this node 'gpu-017'"))
      << ::testing::PrintToString(d.reasons);
}

TEST_F(Gate, AReportOfThisNodeClearsAndSaysSo) {
  GateRequest r = Request(report_.dump(2));
  r.node = "vm";
  GateDecision d = Decide(r);
  EXPECT_TRUE(d.allowed()) << ::testing::PrintToString(d.reasons);
  EXPECT_NE(std::find(d.facts.begin(), d.facts.end(), "node vm"), d.facts.end());
}

TEST_F(Gate, AReportNamingNoHostIsRefusedForANamedNode) {
  report_["host"].erase("hostname");
  GateRequest r = Request(report_.dump(2));
  r.node = "";  // an empty name must not match a missing one
  EXPECT_TRUE(HasReason(Decide(r), "node", "made on an unnamed host"));
}

TEST_F(Gate, ReportFromTheFutureIsRefused) {
  now_ -= 2 * 3600;
  EXPECT_TRUE(HasReason(Decide(), "age", "in the future"));
}

// "+25:00" read as arithmetic would make a day-old report look an hour old to --max-age.
TEST_F(Gate, AStartedAtWithAnImpossibleOffsetIsRefused) {
  for (const char* offset : {"+25:00", "-24:61"}) {
    std::string started = report_["started_at"].get<std::string>();
    started = started.substr(0, started.find_first_of("Zz+-", 19)) + offset;
    report_["started_at"] = started;
    GateRequest r = Request(report_.dump(2));
    r.max_age_s = 7200;
    GateDecision d = Decide(r);
    EXPECT_FALSE(d.allowed()) << started;
    EXPECT_TRUE(HasReason(d, "schema", "started_at")) << ::testing::PrintToString(d.reasons);
  }
}

TEST_F(Gate, EveryReasonIsListedNotOnlyTheFirst) {
  report_["lock_sha256"] = std::string(64, 'a');
  (*Check(report_, "train.eval"))["status"] = "skip";
  GateRequest r = Request(report_.dump(2));
  r.max_age_s = 60;
  GateDecision d = Decide(r);
  EXPECT_EQ(d.reasons.size(), 3u) << ::testing::PrintToString(d.reasons);
}

TEST_F(Gate, AReportNestedBeyondTheJsonLimitsIsBadInputNamingThePosition) {
  std::string deep = report_.dump();
  deep.insert(deep.size() - 1, ", \"x\": " + std::string(100000, '[') + std::string(100000, ']'));
  try {
    Decide(Request(deep));
    FAIL() << "a 100,000-deep report was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("report.json:1:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nested deeper than 64"), std::string::npos) << e.what();
  }
}

TEST_F(Gate, AReportNamingAMemberTwiceIsBadInput) {
  std::string twice = report_.dump();
  twice.insert(twice.size() - 1, ", \"verdict\": \"pass\"");
  EXPECT_THROW(Decide(Request(twice)), InputError);
}

TEST_F(Gate, SchemaViolationIsRefused) {
  report_.erase("checks");
  EXPECT_TRUE(HasReason(Decide(), "schema", "checks: missing"));
}

class SignedGate : public Gate {
 protected:
  void SetUp() override {
    Gate::SetUp();
    keys_ = GenerateEd25519KeyPair();
    SignReport(report_, keys_.private_pem);
    signed_text_ = SignedReportText(report_);
  }

  GateRequest WithKey(const std::string& text, const std::string& public_pem) {
    GateRequest r = Request(text);
    r.public_key_pem = public_pem;
    return r;
  }

  KeyPair keys_;
  std::string signed_text_;
};

TEST_F(SignedGate, SignedReportClearsWithItsKey) {
  GateDecision d = Decide(WithKey(signed_text_, keys_.public_pem));
  EXPECT_TRUE(d.allowed()) << ::testing::PrintToString(d.reasons);
  EXPECT_EQ(d.facts.front(), "signature verified");
}

TEST_F(SignedGate, OneChangedByteAnywhereIsRefusedOnTheSignature) {
  // Every byte of the file, including whitespace, key names and the signature itself.
  for (size_t i = 0; i < signed_text_.size(); ++i) {
    std::string tampered = signed_text_;
    tampered[i] = static_cast<char>(tampered[i] ^ 0x01);
    GateDecision d = Decide(WithKey(tampered, keys_.public_pem));
    ASSERT_TRUE(HasReason(d, "signature", ""))
        << "byte " << i << " ('" << signed_text_[i] << "') changed without a signature refusal";
  }
}

TEST_F(SignedGate, UnsignedReportWithAKeyIsRefused) {
  report_.erase("signature");
  GateDecision d = Decide(WithKey(SignedReportText(report_), keys_.public_pem));
  EXPECT_TRUE(HasReason(d, "signature", "the report is not signed"));
}

TEST_F(SignedGate, ReportSignedWithAnotherKeyIsRefused) {
  KeyPair other = GenerateEd25519KeyPair();
  GateDecision d = Decide(WithKey(signed_text_, other.public_pem));
  EXPECT_TRUE(HasReason(d, "signature", "made with another key"));
}

TEST_F(SignedGate, ReformattedSignedReportIsRefused) {
  // Same JSON meaning, different bytes: the file is not what was signed.
  GateDecision d = Decide(WithKey(report_.dump(4), keys_.public_pem));
  EXPECT_TRUE(HasReason(d, "signature", "not in the signed layout"));
}

// ---- the in-toto attestation (DSSE envelope) in place of the report ----

class AttestedGate : public Gate {
 protected:
  void SetUp() override {
    Gate::SetUp();
    lock_.images["cpu"] = {"registry.example/tiny:1", kImage, std::nullopt, ""};
    report_["image"] = {{"ref", "registry.example/tiny:1"}, {"digest", kImage}};
    keys_ = GenerateEd25519KeyPair();
    SignReport(report_, keys_.private_pem);
    envelope_ = json::parse(ReportAttestation(SignedReportText(report_), keys_.private_pem));
  }

  GateDecision DecideEnvelope(const json& envelope, const std::string& public_pem) {
    GateRequest r = Request(envelope.dump(2));
    r.allow_unsigned = false;
    r.public_key_pem = public_pem;
    return Decide(r);
  }

  json Statement() const {
    std::string payload;
    EXPECT_TRUE(Base64DecodeStrict(envelope_["payload"].get<std::string>(), &payload));
    return json::parse(payload);
  }

  // The envelope with `statement` as its payload, re-signed by `private_pem`: a consistent lie.
  json Resigned(const json& statement, const std::string& private_pem) const {
    const std::string payload = statement.dump();
    json envelope = envelope_;
    envelope["payload"] = Base64Encode(payload);
    envelope["signatures"][0]["sig"] =
        Base64Encode(SignEd25519(DssePae(kDssePayloadType, payload), private_pem));
    return envelope;
  }

  static constexpr const char* kImage =
      "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
  KeyPair keys_;
  json envelope_;
};

TEST_F(AttestedGate, TheStatementNamesTheImageAndTheTestResult) {
  EXPECT_EQ(envelope_["payloadType"], "application/vnd.in-toto+json");
  json statement = Statement();
  EXPECT_EQ(statement["_type"], "https://in-toto.io/Statement/v1");
  EXPECT_EQ(statement["predicateType"], "https://in-toto.io/attestation/test-result/v0.1");
  json subject = {{"name", "registry.example/tiny:1"},
                  {"digest", {{"sha256", std::string(64, 'b')}}}};
  EXPECT_EQ(statement["subject"], json::array({subject}));
  EXPECT_EQ(statement["predicate"]["result"], "PASSED");
  EXPECT_EQ(statement["predicate"]["passedTests"].size(), 5u);
  EXPECT_EQ(statement["predicate"]["warnedTests"].size(), 14u);
}

TEST_F(AttestedGate, AnEnvelopeClearsWithItsKeyAsTheReportWould) {
  GateDecision d = DecideEnvelope(envelope_, keys_.public_pem);
  EXPECT_TRUE(d.allowed()) << ::testing::PrintToString(d.reasons);
  EXPECT_EQ(d.facts.front(), "attestation verified");
}

TEST_F(AttestedGate, TheReportInsideIsGatedAsToday) {
  lock_.images["cpu"].digest = "sha256:" + std::string(64, 'c');
  EXPECT_TRUE(HasReason(DecideEnvelope(envelope_, keys_.public_pem), "image", ""));
}

TEST_F(AttestedGate, AChangedPayloadByteIsRefused) {
  std::string payload;
  ASSERT_TRUE(Base64DecodeStrict(envelope_["payload"].get<std::string>(), &payload));
  payload[payload.find("PASSED")] = 'X';
  json tampered = envelope_;
  tampered["payload"] = Base64Encode(payload);
  GateDecision d = DecideEnvelope(tampered, keys_.public_pem);
  EXPECT_FALSE(d.allowed());
  EXPECT_TRUE(HasReason(d, "signature", "no signature in it verifies")) << d.reasons.front();
}

TEST_F(AttestedGate, AnotherKeyIsRefused) {
  KeyPair other = GenerateEd25519KeyPair();
  EXPECT_TRUE(HasReason(DecideEnvelope(envelope_, other.public_pem), "signature",
                        "no signature in it verifies"));
}

TEST_F(AttestedGate, ASubjectDigestOtherThanTheReportsImageIsRefused) {
  json statement = Statement();
  statement["subject"][0]["digest"]["sha256"] = std::string(64, 'c');
  GateDecision d = DecideEnvelope(Resigned(statement, keys_.private_pem), keys_.public_pem);
  EXPECT_TRUE(HasReason(d, "signature", "is not the image the report ran in")) << d.reasons[0];
}

TEST_F(AttestedGate, AnotherPayloadTypeIsRefused) {
  json tampered = envelope_;
  tampered["payloadType"] = "application/json";
  EXPECT_TRUE(HasReason(DecideEnvelope(tampered, keys_.public_pem), "signature",
                        "payloadType is not application/vnd.in-toto+json"));
}

TEST_F(AttestedGate, AReportThatDoesNotHashToItsDigestIsRefused) {
  json statement = Statement();
  statement["predicate"]["configuration"][0]["digest"]["sha256"] = std::string(64, '0');
  EXPECT_TRUE(HasReason(DecideEnvelope(Resigned(statement, keys_.private_pem), keys_.public_pem),
                        "signature", "do not hash to the digest"));
}

TEST_F(AttestedGate, PayloadBase64ThatIsNotCanonicalIsRefused) {
  json tampered = envelope_;
  tampered["payload"] = " " + tampered["payload"].get<std::string>();
  EXPECT_TRUE(HasReason(DecideEnvelope(tampered, keys_.public_pem), "signature",
                        "its payload is not valid base64"));
}

// RFC 4648's URL-safe alphabet ("-_" for "+/"), without padding: DSSE allows either alphabet.
std::string UrlSafeUnpadded(std::string text) {
  for (char& c : text) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return text.substr(0, text.find('='));
}

// Both plants re-sign a statement with "???" in it: three ASCII '?' put a 63, '/', in its base64
// whatever their alignment (JSON text alone rarely gives a '+' or '/').
TEST_F(AttestedGate, UrlSafeUnpaddedBase64ClearsAsTheStandardDoes) {
  json statement = Statement();
  statement["predicate"]["comment"] = "???";
  const json standard = Resigned(statement, keys_.private_pem);
  ASSERT_NE(standard["payload"].get<std::string>().find('/'), std::string::npos);
  json url_safe = standard;
  url_safe["payload"] = UrlSafeUnpadded(standard["payload"].get<std::string>());
  url_safe["signatures"][0]["sig"] =
      UrlSafeUnpadded(standard["signatures"][0]["sig"].get<std::string>());
  GateDecision d = DecideEnvelope(url_safe, keys_.public_pem);
  EXPECT_TRUE(d.allowed()) << ::testing::PrintToString(d.reasons);
}

TEST_F(AttestedGate, PayloadMixingBothAlphabetsIsNotValidBase64) {
  json statement = Statement();
  statement["predicate"]["comment"] = "???";
  json mixed = Resigned(statement, keys_.private_pem);
  std::string payload = mixed["payload"].get<std::string>();
  ASSERT_NE(payload.find('/'), std::string::npos);
  payload[payload.find_first_not_of("+/")] = '-';  // a URL-safe character beside a standard one
  mixed["payload"] = payload;
  GateDecision d = DecideEnvelope(mixed, keys_.public_pem);
  EXPECT_TRUE(HasReason(d, "signature", "its payload is not valid base64")) << d.reasons.front();
}

TEST_F(AttestedGate, ASigThatIsNotBase64IsNamedNotBlamedOnTheSignature) {
  json tampered = envelope_;
  tampered["signatures"][0]["sig"] = "not*base64!";
  GateDecision d = DecideEnvelope(tampered, keys_.public_pem);
  ASSERT_EQ(d.reasons.size(), 1u);
  EXPECT_TRUE(HasReason(d, "signature", "signatures[0].sig is not valid base64")) << d.reasons[0];
  EXPECT_EQ(d.reasons[0].find("verifies"), std::string::npos) << d.reasons[0];
}

TEST_F(AttestedGate, SixteenSignaturesAreReadTheGoodOneLast) {
  json many = envelope_;
  json bad = {{"keyid", ""}, {"sig", Base64Encode(std::string(64, '\x01'))}};
  many["signatures"] = json::array();
  for (int i = 0; i < 15; ++i) many["signatures"].push_back(bad);
  many["signatures"].push_back(envelope_["signatures"][0]);
  GateDecision d = DecideEnvelope(many, keys_.public_pem);
  EXPECT_TRUE(d.allowed()) << ::testing::PrintToString(d.reasons);
}

TEST_F(AttestedGate, MoreThanSixteenSignaturesIsMalformed) {
  json many = envelope_;
  json bad = {{"keyid", ""}, {"sig", Base64Encode(std::string(64, '\x01'))}};
  many["signatures"] = json::array();
  for (int i = 0; i < 16; ++i) many["signatures"].push_back(bad);
  many["signatures"].push_back(envelope_["signatures"][0]);
  GateDecision d = DecideEnvelope(many, keys_.public_pem);
  EXPECT_TRUE(HasReason(d, "signature", "malformed: 17 signatures, more than the 16"))
      << ::testing::PrintToString(d.reasons);
}

TEST(ReportSigning, TheEnvelopeKeyIdIsTheSha256OfTheRawPublicKey) {
  // docs/reports.md: not the SubjectPublicKeyInfo DER's hash; an Ed25519 SPKI DER is a fixed
  // 12-byte prefix and the raw 32-byte key, and the PEM body is that DER in base64.
  KeyPair keys = GenerateEd25519KeyPair();
  std::string body = keys.public_pem.substr(keys.public_pem.find('\n') + 1);
  body = body.substr(0, body.find("-----"));
  body.erase(std::remove(body.begin(), body.end(), '\n'), body.end());
  std::string der;
  ASSERT_TRUE(Base64DecodeStrict(body, &der));
  ASSERT_EQ(der.size(), 44u);
  EXPECT_EQ(PublicKeyId(keys.public_pem), "sha256:" + Sha256Hex(der.substr(12)));
  EXPECT_NE(PublicKeyId(keys.public_pem), "sha256:" + Sha256Hex(der));
}

TEST(ReportSigning, FirstVerifyingSignatureIsFoundAmongBadOnes) {
  KeyPair keys = GenerateEd25519KeyPair();
  std::vector<std::string> sigs(3, std::string(64, '\x01'));
  sigs.push_back(SignEd25519("message", keys.private_pem));
  EXPECT_EQ(FirstVerifyingEd25519("message", sigs, keys.public_pem), 3);
  EXPECT_EQ(FirstVerifyingEd25519("other", sigs, keys.public_pem), -1);
}

TEST_F(AttestedGate, AnEnvelopeWithoutAKeyIsRefused) {
  GateRequest r = Request(envelope_.dump(2));
  EXPECT_TRUE(HasReason(Decide(r), "signature", "verified with --key PUB"));
}

TEST(ReportAttestation, AnUnsignedReportIsNotAttested) {
  json report = json::parse(ReadFile(SourceDir() / "tests/fixtures/reports/tiny-report.json"));
  report["image"] = {{"ref", "r/x:1"}, {"digest", "sha256:" + std::string(64, 'b')}};
  KeyPair keys = GenerateEd25519KeyPair();
  EXPECT_THROW(ReportAttestation(report.dump(2), keys.private_pem), Failure);
}

TEST(ReportAttestation, AReportWithoutAnImageIsNotAttested) {
  json report = json::parse(ReadFile(SourceDir() / "tests/fixtures/reports/tiny-report.json"));
  KeyPair keys = GenerateEd25519KeyPair();
  SignReport(report, keys.private_pem);
  EXPECT_THROW(ReportAttestation(SignedReportText(report), keys.private_pem), Failure);
}

TEST(ReportAttestation, PaeIsTheDsseEncoding) {
  // The DSSE spec's own example: PAE("http://example.com/HelloWorld", "hello world").
  EXPECT_EQ(DssePae("http://example.com/HelloWorld", "hello world"),
            "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
}

TEST_F(SignedGate, SignedReportClearsWithoutAKeyButSaysNothingOfTheSignature) {
  GateDecision d = Decide(Request(signed_text_));
  EXPECT_TRUE(d.allowed());
  EXPECT_EQ(std::count(d.facts.begin(), d.facts.end(), "signature verified"), 0);
}

TEST_F(SignedGate, UnparseableReportWithAKeyIsASignatureRefusal) {
  GateDecision d = Decide(WithKey("{\"schema\": ", keys_.public_pem));
  EXPECT_TRUE(HasReason(d, "signature", "not valid JSON"));
}

// The command line: exit codes and output.
class CliGate : public ::testing::Test {
 protected:
  testing::TempDir tmp_;
  std::string Fixture() {
    return (SourceDir() / "tests/fixtures/reports/tiny-report.json").string();
  }
  std::string Tiny() { return (SourceDir() / "examples/tiny").string(); }
};

TEST_F(CliGate, MatchingReportExitsZero) {
  auto r = testing::RunTrainlock({"gate", Fixture(), "--lock", Tiny(), "--allow-unsigned"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("gate: pass:"), std::string::npos) << r.out;
}

// `gate DIR` reads DIR's report and compares it with DIR's lock, wherever it runs from.
TEST_F(CliGate, AProjectDirectoryGivesTheReportAndTheLock) {
  const std::filesystem::path project = tmp_.path() / "project";
  const std::filesystem::path elsewhere = tmp_.path() / "elsewhere";
  std::filesystem::create_directories(project / ".trainlock/reports");
  std::filesystem::create_directories(elsewhere);
  testing::CopyExample("tiny", project);
  std::filesystem::copy_file(Fixture(), project / ".trainlock/reports/report.json");
  auto r = testing::RunCommand({"env", "-C", elsewhere.string(),
                                (testing::BinDir() / "trainlock").string(), "gate",
                                project.string(), "--allow-unsigned"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(" clears " + (project / "trainlock.lock").string()), std::string::npos)
      << r.out;
}

TEST_F(CliGate, RefusalPrintsEveryReasonAndExitsOne) {
  auto r = testing::RunTrainlock({"gate", Fixture(), "--lock", Tiny(), "--max-age", "1m",
                                  "--require", "comm.ddp", "--allow-unsigned"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("(2 reasons)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  - checks: required check comm.ddp was skipped"), std::string::npos);
  EXPECT_NE(r.out.find("  - age: the report is"), std::string::npos);
}

TEST_F(CliGate, JsonOutputIsTheDecision) {
  auto r =
      testing::RunTrainlock({"gate", Fixture(), "--lock", Tiny(), "--json", "--allow-unsigned"});
  json out = json::parse(r.out);
  EXPECT_EQ(out["allowed"], true);
  EXPECT_TRUE(out["reasons"].empty());
}

TEST_F(CliGate, VerboseListsTheReportsChecks) {
  auto r = testing::RunTrainlock({"gate", Fixture(), "--lock", Tiny(), "--allow-unsigned", "-v"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("\n  pass train.step (required)\n"), std::string::npos) << r.out;
}

TEST_F(CliGate, VerboseListsTheChecksOfTheReportAVerifiedEnvelopeCarries) {
  const std::string prefix = (tmp_.path() / "ci").string();
  ASSERT_EQ(testing::RunTrainlock({"keygen", prefix}).exit_code, 0);
  json report = json::parse(ReadFile(Fixture()));
  report["image"] = {{"ref", "registry.example/tiny:1"},
                     {"digest", "sha256:" + std::string(64, 'b')}};
  SignReport(report, ReadFile(prefix + ".key"));
  testing::WriteFile(tmp_.path() / "report.json", SignedReportText(report));
  const std::string envelope = (tmp_.path() / "report.intoto.json").string();
  ASSERT_EQ(testing::RunTrainlock({"report", (tmp_.path() / "report.json").string(), "--format",
                                   "intoto", "--key", prefix + ".key", "--out", envelope})
                .exit_code,
            0);
  auto verified =
      testing::RunTrainlock({"gate", envelope, "--lock", Tiny(), "--key", prefix + ".pub", "-v"});
  EXPECT_NE(verified.out.find("  pass train.step (required)\n"), std::string::npos) << verified.out;
  // Another key opens nothing: no check of an unverified envelope is shown.
  ASSERT_EQ(testing::RunTrainlock({"keygen", (tmp_.path() / "other").string()}).exit_code, 0);
  auto other = testing::RunTrainlock(
      {"gate", envelope, "--lock", Tiny(), "--key", (tmp_.path() / "other.pub").string(), "-v"});
  EXPECT_EQ(other.exit_code, 1) << other.out << other.err;
  EXPECT_EQ(other.out.find("train.step"), std::string::npos) << other.out;
}

// A report of an earlier version of the format is input this gate does not read: one line
// naming the file and its schema, exit 2, signed or not.
TEST_F(CliGate, AV1ReportIsBadInputNamingTheFileItsSchemaAndANewValidation) {
  json report = json::parse(ReadFile(Fixture()));
  report["schema"] = "trainlock.report/v1";
  const std::string file = (tmp_.path() / "report.json").string();
  testing::WriteFile(file, report.dump(2));
  auto r = testing::RunTrainlock({"gate", file, "--lock", Tiny(), "--allow-unsigned"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, file +
                       ": error: a trainlock.report/v1 report, which this trainlock does not read "
                       "(it reads trainlock.report/v2): validate the node again with this "
                       "trainlock\n");
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(CliGate, ASignedV1ReportIsBadInputWhenItsSignatureHolds) {
  const std::string prefix = (tmp_.path() / "ci").string();
  ASSERT_EQ(testing::RunTrainlock({"keygen", prefix}).exit_code, 0);
  json report = json::parse(ReadFile(Fixture()));
  report["schema"] = "trainlock.report/v1";
  SignReport(report, ReadFile(prefix + ".key"));
  const std::string file = (tmp_.path() / "report.json").string();
  testing::WriteFile(file, SignedReportText(report));
  auto r = testing::RunTrainlock({"gate", file, "--lock", Tiny(), "--key", prefix + ".pub"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("a trainlock.report/v1 report"), std::string::npos) << r.err;
}

TEST_F(CliGate, NonJsonReportIsBadInputNamingThePosition) {
  testing::WriteFile(tmp_.path() / "report.json", "{\n  \"schema\": x\n}\n");
  auto r =
      testing::RunTrainlock({"gate", (tmp_.path() / "report.json").string(), "--lock", Tiny()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("report.json:2:13: error: not valid JSON"), std::string::npos) << r.err;
}

TEST_F(CliGate, UnknownDurationIsBadInput) {
  auto r = testing::RunTrainlock(
      {"gate", Fixture(), "--lock", Tiny(), "--max-age", "7 days", "--allow-unsigned"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--max-age: error: not a positive duration"), std::string::npos) << r.err;
}

TEST_F(CliGate, UnknownRequiredCheckIsBadInput) {
  auto r = testing::RunTrainlock(
      {"gate", Fixture(), "--lock", Tiny(), "--require", "train.stepp", "--allow-unsigned"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown check id 'train.stepp'"), std::string::npos) << r.err;
}

TEST_F(CliGate, KeyThatIsNotAPublicKeyIsBadInput) {
  testing::WriteFile(tmp_.path() / "k.pub", "not a key\n");
  auto r = testing::RunTrainlock(
      {"gate", Fixture(), "--lock", Tiny(), "--key", (tmp_.path() / "k.pub").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("k.pub: error: not a PEM public key"), std::string::npos) << r.err;
}

TEST_F(CliGate, KeygenKeySignsAReportTheGateVerifies) {
  const std::string prefix = (tmp_.path() / "ci").string();
  auto k = testing::RunTrainlock({"keygen", prefix});
  ASSERT_EQ(k.exit_code, 0) << k.err;
  EXPECT_EQ(std::filesystem::status(prefix + ".key").permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  json report = json::parse(ReadFile(Fixture()));
  SignReport(report, ReadFile(prefix + ".key"));
  testing::WriteFile(tmp_.path() / "signed.json", SignedReportText(report));
  auto r = testing::RunTrainlock(
      {"gate", (tmp_.path() / "signed.json").string(), "--lock", Tiny(), "--key", prefix + ".pub"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("signature verified"), std::string::npos) << r.out;
}

TEST_F(CliGate, KeygenRefusesToOverwriteAKey) {
  const std::string prefix = (tmp_.path() / "ci").string();
  ASSERT_EQ(testing::RunTrainlock({"keygen", prefix}).exit_code, 0);
  const std::string before = ReadFile(prefix + ".key");
  auto r = testing::RunTrainlock({"keygen", prefix});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(prefix + ".key"), before);
}

TEST_F(Gate, AnUnsignedReportIsRefusedWithoutAllowUnsigned) {
  GateRequest request = Request(report_.dump(2));
  request.allow_unsigned = false;
  GateDecision d = Decide(request);
  EXPECT_TRUE(HasReason(d, "signature", "no --key to verify the report with"));
}

TEST_F(Gate, AReportOfAnotherConfigIsRefused) {
  report_["config_sha256"] = std::string(64, 'c');
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "config", "the report trained config cccccccccccc, not the lock's"));
}

TEST_F(Gate, AReportThatDoesNotNameItsConfigIsRefused) {
  report_.erase("config_sha256");
  EXPECT_TRUE(HasReason(Decide(), "config", "does not say which training config it ran"));
}

TEST_F(Gate, AReportValidatedPastLockDriftIsRefused) {
  report_["drift"] = {{{"id", "lock.config"}, {"message", "the training config changed"}}};
  EXPECT_TRUE(HasReason(Decide(), "config", "validated with --allow-drift (lock.config: "));
}

TEST_F(Gate, ANegativeControlIsRefused) {
  report_["negative_control"] = "rng";
  report_["verdict"] = "fail";
  EXPECT_TRUE(HasReason(Decide(), "checks", "is a negative control (rng)"));
}

// --require-lock-checkpoint-dir: checkpoints proven on a --checkpoint-dir override (or on
// storage the report does not name) are not the lock's storage.
TEST_F(Gate, ACheckpointDirOverrideIsRefusedWhenTheLocksIsRequired) {
  report_["checkpoint_dir"] = {{"path", "/scratch/elsewhere"}, {"source", "option"}};
  GateRequest request = Request(report_.dump(2));
  EXPECT_TRUE(Decide(request).allowed());  // only on request
  request.require_lock_checkpoint_dir = true;
  EXPECT_TRUE(HasReason(Decide(request), "checkpoint", "went to a --checkpoint-dir override"));
}

TEST_F(Gate, AReportNamingNoCheckpointDirIsRefusedWhenTheLocksIsRequired) {
  report_.erase("checkpoint_dir");
  GateRequest request = Request(report_.dump(2));
  request.require_lock_checkpoint_dir = true;
  EXPECT_TRUE(HasReason(Decide(request), "checkpoint", "storage the report does not name"));
}

TEST_F(Gate, TheLocksCheckpointDirClearsWhenRequired) {
  report_["checkpoint_dir"] = {{"path", "/mnt/ckpt"}, {"source", "lock"}};
  GateRequest request = Request(report_.dump(2));
  request.require_lock_checkpoint_dir = true;
  EXPECT_TRUE(Decide(request).allowed()) << ::testing::PrintToString(Decide(request).reasons);
}

TEST_F(Gate, AReportFromAnotherImageThanImageIsRefused) {
  GateRequest request = Request(report_.dump(2));
  request.image_digest = "sha256:" + std::string(64, 'd');
  EXPECT_TRUE(
      HasReason(Decide(request), "image", "the report ran in no image, not --image sha256:dddd"));
}

TEST_F(Gate, ARoundtripPassWhoseMetricsSayItWasNotBitwiseIsRefused) {
  (*Check(report_, "train.roundtrip"))["metrics"]["bitwise_equal"] = false;
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "train.roundtrip: pass, but bitwise_equal is not true and no loss "
                        "tolerance was used"));
}

TEST_F(Gate, ARoundtripPassWithoutTheRngRestoredIsRefusedWhateverTheTolerance) {
  json& metrics = (*Check(report_, "train.roundtrip"))["metrics"];
  metrics["rng_restored"] = false;
  metrics["loss_tolerance"] = 1.0;
  EXPECT_TRUE(
      HasReason(Decide(), "evidence", "train.roundtrip: pass, but rng_restored is not true"));
}

TEST_F(Gate, AStepPassThatRanOutOfMemoryIsRefused) {
  (*Check(report_, "train.step"))["metrics"]["out_of_memory"] = true;
  EXPECT_TRUE(HasReason(Decide(), "evidence", "train.step: pass, but out_of_memory is true"));
}

TEST_F(Gate, AStepPassWhoseMeasuredShapeContradictsItsShapeIsRefused) {
  (*Check(report_, "train.step"))["metrics"]["measured_shape"]["activation_dtype"] = "bf16";
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "train.step: pass, but measured_shape contradicts shape: "
                        "activations in bf16, the config's precision is fp32"));
}

TEST_F(Gate, AStepPassWithoutAMeasuredShapeIsRefused) {
  (*Check(report_, "train.step"))["metrics"].erase("measured_shape");
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "train.step: pass, but measured_shape contradicts shape: the "
                        "worker reported no shape"));
}

// The validator judges with the lock's tolerances (examples/tiny's: 0, bitwise); a pass stating
// a looser one was judged by another yardstick.
TEST_F(Gate, APassWithinALooserToleranceThanTheLocksIsRefused) {
  json& eval = (*Check(report_, "train.eval"))["metrics"];
  eval["tolerance"] = 1.0;
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "train.eval: pass within a tolerance of 1, looser than the lock's "
                        "validate.eval-tolerance 0"));
  json& roundtrip = (*Check(report_, "train.roundtrip"))["metrics"];
  roundtrip["loss_tolerance"] = 0.5;
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "train.roundtrip: pass within a tolerance of 0.5, looser than the lock's "
                        "validate.loss-tolerance 0"));
}

TEST_F(Gate, AStepPassBesideAThermalThrottleInTheRoundTripsTelemetryIsRefused) {
  json& roundtrip = (*Check(report_, "train.roundtrip"))["metrics"];
  roundtrip["telemetry"] = {
      {"window_s", 41.0},
      {"devices",
       {{{"index", 0},
         {"samples", 205},
         {"throttle_reasons_seen",
          {{{"name", "hw_thermal_slowdown"}, {"samples", 16}, {"held_s", 3.2}}}}}}}};
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "train.step: pass, but throttled during the round trip (GPU 0: "
                        "hw_thermal_slowdown for 3.2 s of 41 s)"));
  roundtrip["telemetry"]["devices"][0]["throttle_reasons_seen"][0]["name"] = "gpu_idle";
  EXPECT_FALSE(HasReason(Decide(), "evidence", "train.step"));  // idle clocks are no throttle
}

// The H200 pilot's round trip: at its 700 W limit (its default) for 13.2 s of 24.9 s, busy there
// at 1920-1965 MHz, nothing else set (bench/results/2026-12-02-h200-engines).
json H200PilotTelemetry() {
  return {{"interval_s", 0.1},
          {"window_s", 24.9},
          {"devices",
           {{{"index", 0},
             {"name", "NVIDIA H200"},
             {"samples", 249},
             {"power_limit_w", 700.0},
             {"default_power_limit_w", 700.0},
             {"utilization_pct", {{"mean", 100.0}}},
             {"busy_at_power_cap_s", 13.2},
             {"sm_clock_at_power_cap_mhz", {{"min", 1920.0}, {"mean", 1942.5}, {"max", 1965.0}}},
             {"throttle_reasons_seen",
              {{{"name", "sw_power_cap"}, {"samples", 132}, {"held_s", 13.2}}}},
             {"throttled_s", 0.0}}}}};
}

TEST_F(Gate, AStepPassBesideAHealthyH200HeldAtItsDefaultPowerLimitIsNotRefused) {
  (*Check(report_, "train.roundtrip"))["metrics"]["telemetry"] = H200PilotTelemetry();
  const GateDecision d = Decide();
  EXPECT_FALSE(HasReason(d, "evidence", "train.step")) << ::testing::PrintToString(d.reasons);
}

// A healthy H100 under a dense GEMM at its 700 W cap (bench/results/2026-12-07-clock-under-load/
// h100): 1384 MHz mean busy there. A report of an older validator still carries the clock floor
// it was judged by (sustained_sm_clock_mhz); the key is read past, the clock not judged.
TEST_F(Gate, AStepPassBesideAGemmBoundGpuFarBelowItsBoostClockAtThePowerCapIsNotRefused) {
  json telemetry = H200PilotTelemetry();
  telemetry["devices"][0]["sustained_sm_clock_mhz"] = 1650.0;
  telemetry["devices"][0]["sm_clock_at_power_cap_mhz"] = {
      {"min", 1140.0}, {"mean", 1384.0}, {"max", 1455.0}};
  (*Check(report_, "train.roundtrip"))["metrics"]["telemetry"] = telemetry;
  const GateDecision d = Decide();
  EXPECT_FALSE(HasReason(d, "evidence", "train.step")) << ::testing::PrintToString(d.reasons);
}

TEST_F(Gate, AStepPassBesideClocksHeldByTheClockPolicyIsRefused) {
  json telemetry = H200PilotTelemetry();
  telemetry["devices"][0]["max_sm_clock_mhz"] = 1980.0;
  telemetry["devices"][0]["busy_clock_policy_s"] = 12.4;
  telemetry["devices"][0]["sm_clock_at_clock_policy_mhz"] = {
      {"min", 1395.0}, {"mean", 1395.0}, {"max", 1395.0}};
  (*Check(report_, "train.roundtrip"))["metrics"]["telemetry"] = telemetry;
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "train.step: pass, but throttled during the round trip (GPU 0: SM clock "
                        "held by the clock policy (applications_clocks_setting) at 1395 MHz mean "
                        "(its highest 1980 MHz) for 12.4 s busy of 24.9 s)"));
}

TEST_F(Gate, AStepPassBesideAPowerLimitLoweredBelowTheDefaultIsRefused) {
  json telemetry = H200PilotTelemetry();
  telemetry["devices"][0]["power_limit_w"] = 500.0;
  (*Check(report_, "train.roundtrip"))["metrics"]["telemetry"] = telemetry;
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "train.step: pass, but throttled during the round trip (GPU 0: power "
                        "limit 500 W, below its default 700 W, reached for 13.2 s of 24.9 s)"));
}

TEST_F(Gate, ARankOwnReportIsRefusedNamingTheMergedReport) {
  report_["rank"] = {{"rank", 1}, {"world_size", 2}, {"local_rank", 1}, {"launcher", "torchrun"}};
  report_["partial"] = true;
  GateRequest r = Request(report_.dump(2));
  r.report_path = "out/report.rank-1.json";
  GateDecision d = Decide(r);
  EXPECT_TRUE(HasReason(d, "partial",
                        "out/report.rank-1.json is rank 1's own report of a 2-rank run, a part of "
                        "the run; gate the merged report rank 0 wrote (out/report.json)"))
      << ::testing::PrintToString(d.reasons);
}

TEST_F(Gate, ARankReportThatDropsItsPartialMarkerIsStillPartial) {
  report_["rank"] = {{"rank", 0}, {"world_size", 2}, {"local_rank", 0}, {"launcher", "torchrun"}};
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "partial", "rank 0's own report of a 2-rank run"))
      << ::testing::PrintToString(d.reasons);
}

TEST_F(Gate, AReportOfAnotherTargetThanTargetIsRefused) {
  lock_.targets["cuda"] = lock_.targets["cpu"];
  lock_.targets["cuda"].name = "cuda";
  GateRequest r = Request(report_.dump(2));
  r.target = "cuda";
  GateDecision d = Decide(r);
  EXPECT_TRUE(HasReason(d, "target", "the report validated target cpu, not --target cuda"))
      << ::testing::PrintToString(d.reasons);
}

TEST_F(Gate, AReportThatNamesATargetItsValidatorWasNotBuiltForIsRefused) {
  report_["target"] = "cuda";
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "target", "names target cuda but ran a cpu validator"))
      << ::testing::PrintToString(d.reasons);
}

TEST_F(Gate, AReportWithoutTargetIsRefused) {
  report_.erase("target");
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "target", "does not say which lock target it validated"))
      << ::testing::PrintToString(d.reasons);
}

TEST(Evidence, EveryCheckIdHasAnEvidenceRule) {
  for (std::string_view id : kCheckIds) EXPECT_TRUE(HasPassRule(id)) << id;
  EXPECT_FALSE(HasPassRule("env.nonesuch"));  // the test can fail
}

// The real H200 report's checks, edited one field at a time: each rule recomputes its pass.
json H200Report() {
  return json::parse(ReadFile(SourceDir() / "tests/fixtures/reports/h200-pilot-report.json"));
}

json& MetricsOf(json& report, const std::string& id) {
  for (json& c : report["checks"])
    if (c["id"] == id) return c["metrics"];
  ADD_FAILURE() << "no check " << id;
  static json none;
  return none;
}

bool Contradicted(const json& report, const std::string& text) {
  const std::vector<std::string> found = EvidenceContradictions(ViewOfReport(report));
  return std::any_of(found.begin(), found.end(),
                     [&](const std::string& why) { return why.find(text) != std::string::npos; });
}

TEST(Evidence, TheRealH200ReportContradictsNoPass) {
  EXPECT_EQ(EvidenceContradictions(ViewOfReport(H200Report())), std::vector<std::string>{});
}

TEST(Evidence, ATorchThatIsOnlyATextPrefixOfTheLockedOneIsNotIt) {
  json report = H200Report();
  ASSERT_EQ(MetricsOf(report, "env.versions")["torch_locked"], "2.11.0+cu130");
  for (const char* torch : {"2.1", "2", "2.11"}) {
    MetricsOf(report, "env.versions")["torch"] = torch;
    EXPECT_TRUE(Contradicted(report, std::string("env.versions: pass, but torch ") + torch +
                                         " is not torch_locked 2.11.0+cu130"))
        << torch;
  }
  for (const char* torch : {"2.11.0", "2.11.0+cu130"}) {
    MetricsOf(report, "env.versions")["torch"] = torch;
    EXPECT_FALSE(Contradicted(report, "env.versions")) << torch;
  }
}

TEST(Evidence, ACudnnPassOtherThanTheLockedOneOrNamingNoneIsContradicted) {
  json report = H200Report();
  json& versions = MetricsOf(report, "env.versions");
  versions["cudnn_locked"] = "9.13.0";
  EXPECT_TRUE(Contradicted(report, "env.versions: pass, but cudnn (none) is not cudnn_locked"));
  versions["cudnn"] = "9.10.2";
  EXPECT_TRUE(
      Contradicted(report, "env.versions: pass, but cudnn 9.10.2 is not cudnn_locked 9.13.0"));
  versions["cudnn"] = "9.13.0";
  EXPECT_FALSE(Contradicted(report, "env.versions"));
}

TEST(Evidence, ADriverPassBelowItsOwnDriverMinIsContradicted) {
  json report = H200Report();
  MetricsOf(report, "env.driver")["driver_version"] = "470.57.02";
  EXPECT_TRUE(Contradicted(
      report, "env.driver: pass, but driver_version 470.57.02 is below driver_min 580.65.06"));
}

TEST(Evidence, ARuntimePassWhoseDriverCudaIsBelowTheRuntimeOrUnreadIsContradicted) {
  json report = H200Report();
  MetricsOf(report, "env.runtime")["cuda_driver_supports"] = "11.4";
  EXPECT_TRUE(Contradicted(
      report, "env.runtime: pass, but cuda_driver_supports 11.4 is below cuda_runtime 13.0"));
  MetricsOf(report, "env.runtime").erase("cuda_driver_supports");
  MetricsOf(report, "env.runtime")["torch"] = "2.11.0";  // no runtime version at all
  EXPECT_TRUE(Contradicted(
      report, "env.runtime: pass, but it read no cuda_runtime and cuda_driver_supports"));
}

TEST(Evidence, AVersionsPassWithAnotherNcclOrCudaThanTheLockedIsContradicted) {
  json report = H200Report();
  MetricsOf(report, "env.versions")["nccl_locked"] = "2.27.7";
  EXPECT_TRUE(
      Contradicted(report, "env.versions: pass, but nccl 2.28.9 is not nccl_locked 2.27.7"));
  report = H200Report();
  MetricsOf(report, "env.versions")["cuda_runtime"] = "12.1";
  EXPECT_TRUE(
      Contradicted(report, "env.versions: pass, but cuda_runtime 12.1 is not cuda_locked 13.0"));
  report = H200Report();
  MetricsOf(report, "env.versions")["nccl_locked"] = "2.28.9";
  EXPECT_FALSE(Contradicted(report, "env.versions"));
}

TEST(Evidence, AHealthPassOfADeviceWithNoJudgedFieldIsContradicted) {
  json report = H200Report();
  MetricsOf(report, "env.health")["devices"][0] = {{"index", 0},
                                                   {"not_supported", json::array({"ecc_enabled"})}};
  EXPECT_TRUE(Contradicted(
      report, "env.health: pass, but a device has none of the fields health is judged on"));
}

TEST(Evidence, AHealthPassOfNoDeviceOrOfADeviceItsOwnFieldsCallUnhealthyIsContradicted) {
  const json healthy = H200Report();
  json report = healthy;
  MetricsOf(report, "env.health") = json::object();
  EXPECT_TRUE(Contradicted(report, "env.health: pass, but it judged no device"));
  for (const auto& [field, value] :
       std::vector<std::pair<const char*, json>>{{"ecc_enabled", false},
                                                 {"ecc_uncorrected_volatile", 7},
                                                 {"remap_failed", true},
                                                 {"remap_pending", true},
                                                 {"retired_pages_pending", true},
                                                 {"pcie_width", 1}}) {
    report = healthy;
    MetricsOf(report, "env.health")["devices"][0][field] = value;
    EXPECT_TRUE(Contradicted(report, "env.health: pass, but GPU 0: ")) << field;
  }
}

TEST(Evidence, AnArchPassWhoseKernelGaveNoKnownAnswerIsContradicted) {
  json report = H200Report();
  MetricsOf(report, "env.arch")["launches"][0]["launch_ok"] = false;
  EXPECT_TRUE(Contradicted(report, "env.arch: pass, but a launch did not give the known answer"));
  MetricsOf(report, "env.arch")["launches"] = json::array({0});
  EXPECT_TRUE(Contradicted(report, "env.arch: pass, but a launch did not give the known answer"));
}

TEST_F(Gate, AReportLackingACheckIdIsRefused) {
  json& checks = report_["checks"];
  checks.erase(std::remove_if(checks.begin(), checks.end(),
                              [](const json& c) { return c["id"] == "ext.command"; }),
               checks.end());
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "schema", "checks: missing check \"ext.command\""))
      << ::testing::PrintToString(d.reasons);
}

TEST_F(Gate, AnUnsignedPortablePassOutsideItsToleranceIsRefused) {
  json& metrics = (*Check(report_, "ckpt.portable"))["metrics"];
  metrics["eval_loss"] = metrics["eval_loss_reference"].get<double>() + 1.0;  // abs_diff kept 0
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "evidence", "ckpt.portable: pass, but "));
  EXPECT_TRUE(HasReason(d, "evidence",
                        "eval_loss differs from eval_loss_reference by more than tolerance 0"))
      << ::testing::PrintToString(d.reasons);
}

TEST_F(Gate, APackagesPassThatListsAChangedPackageIsRefused) {
  json& check = *Check(report_, "env.packages");
  check["status"] = "pass";
  check["metrics"] = {{"packages_locked", 3},
                      {"packages_installed", 3},
                      {"packages_missing", json::array()},
                      {"packages_added", json::array()},
                      {"packages_changed", {"numpy 1.26.4 (locked 1.26.3)"}},
                      {"packages_malformed", json::array()},
                      {"files_problems", 0}};
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "evidence", "env.packages: pass, but packages_changed is not empty"))
      << ::testing::PrintToString(d.reasons);
  check["metrics"]["packages_changed"] = json::array();
  EXPECT_FALSE(HasReason(Decide(), "evidence", "env.packages"));
}

TEST_F(Gate, APackagesPassThatPinsDebianPackagesItDidNotCompareIsRefused) {
  json& check = *Check(report_, "env.packages");
  check["status"] = "pass";
  check["metrics"] = {{"packages_locked", 3},
                      {"packages_installed", 3},
                      {"packages_missing", json::array()},
                      {"packages_added", json::array()},
                      {"packages_changed", json::array()},
                      {"packages_malformed", json::array()},
                      {"files_problems", 0},
                      {"debs_locked", 2}};
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "env.packages: pass, but it pins Debian packages it did not compare"));
  check["metrics"]["debs_missing"] = json::array();
  check["metrics"]["debs_changed"] = {"libfoo 1.0-2 (locked 1.0-1)"};
  EXPECT_TRUE(HasReason(Decide(), "evidence", "debs_changed is not empty"));
  check["metrics"]["debs_changed"] = json::array();
  EXPECT_FALSE(HasReason(Decide(), "evidence", "env.packages"));
}

TEST_F(Gate, FileDriftTheCallerFoundRefuses) {
  GateRequest r = Request(report_.dump(2));
  r.file_drift = {"lock.config: the training config configs/tiny.yaml changed"};
  EXPECT_TRUE(HasReason(Decide(r), "files", "configs/tiny.yaml changed"));
}

// An unsigned report is a claim: each evidence rule recomputes what it can from the report's
// own numbers and refuses a flag or stated difference they contradict.
TEST_F(Gate, AResumedLossEditedWhileBitwiseEqualStaysTrueIsRefused) {
  json& metrics = (*Check(report_, "train.roundtrip"))["metrics"];
  metrics["losses_resumed"][4] = metrics["losses_resumed"][4].get<double>() + 0.01;
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "train.roundtrip: pass, but bitwise_equal is true, but losses_resumed "
                        "differs from losses_uninterrupted at step 5"))
      << ::testing::PrintToString(Decide().reasons);
}

TEST_F(Gate, ARoundtripPassWhoseFinalStateDiffersIsRefusedThoughBitwiseEqualIsClaimed) {
  (*Check(report_, "train.roundtrip"))["metrics"]["final_state_equal"] = false;
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "train.roundtrip: pass, but the final state differs (final_state_equal "
                        "is not true)"));
}

TEST_F(Gate, ARestoredStepOtherThanTheCheckpointStepIsRefused) {
  json& metrics = (*Check(report_, "train.roundtrip"))["metrics"];
  metrics["restored_step"] = 2;
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "train.roundtrip: pass, but restored_step 2 is not checkpoint_at 3"));
  metrics["restored_step"] = nullptr;  // the resumed process reported none
  EXPECT_TRUE(
      HasReason(Decide(), "evidence", "train.roundtrip: pass, but it states no restored_step"));
  metrics.erase("restored_step");
  EXPECT_TRUE(
      HasReason(Decide(), "evidence", "train.roundtrip: pass, but it states no restored_step"));
}

TEST_F(Gate, TruncatedLossesAreRefused) {
  json& metrics = (*Check(report_, "train.roundtrip"))["metrics"];
  for (const char* run : {"losses_uninterrupted", "losses_resumed"})
    metrics[run].erase(metrics[run].begin() + 3, metrics[run].end());  // equal, but 3 of 6
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "train.roundtrip: pass, but losses_uninterrupted has 3 losses for 6 steps"))
      << ::testing::PrintToString(Decide().reasons);
}

TEST_F(Gate, ALossDifferenceAboveTheToleranceIsRefusedWhateverMaxAbsLossDiffStates) {
  json& metrics = (*Check(report_, "train.roundtrip"))["metrics"];
  metrics["bitwise_equal"] = false;
  metrics["loss_tolerance"] = 0.001;
  metrics["losses_resumed"][5] = metrics["losses_resumed"][5].get<double>() + 0.5;
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "train.roundtrip: pass, but max_abs_loss_diff 0 is not the losses' own "
                        "difference 0.5"))
      << ::testing::PrintToString(Decide().reasons);
  metrics["max_abs_loss_diff"] = 0.5;  // stated as it is: then the tolerance refuses it
  EXPECT_TRUE(HasReason(Decide(), "evidence", "the losses differ by more than loss_tolerance"))
      << ::testing::PrintToString(Decide().reasons);
}

TEST_F(Gate, AnEvalLossAfterRestoreChangedWhileAbsDiffStaysZeroIsRefused) {
  json& metrics = (*Check(report_, "train.eval"))["metrics"];
  metrics["eval_loss_after_restore"] = metrics["eval_loss_before_save"].get<double>() + 0.25;
  EXPECT_TRUE(HasReason(Decide(), "evidence",
                        "train.eval: pass, but abs_diff 0 is not the eval losses' own difference "
                        "0.25"))
      << ::testing::PrintToString(Decide().reasons);
}

TEST_F(Gate, ARankReportWithoutPartialAndRankIsPartialByItsCollectives) {
  json& ddp = *Check(report_, "comm.ddp");
  ddp["status"] = "pass";
  ddp["metrics"] = {{"world_size", 2}, {"rank", 1}, {"gradients_equal_within_tolerance", true}};
  ASSERT_FALSE(report_.contains("partial"));
  ASSERT_FALSE(report_.contains("rank"));
  GateDecision d = Decide();
  EXPECT_TRUE(HasReason(d, "partial", "a rank's own report of a 2-rank run"))
      << ::testing::PrintToString(d.reasons);
}

TEST(Evidence, ALossDifferenceWithinTheToleranceWithTheStateEqualIsSupported) {
  json metrics = {{"steps", 2},
                  {"checkpoint_at", 1},
                  {"restored_step", 1},
                  {"losses_uninterrupted", {1.0, 0.5}},
                  {"losses_resumed", {1.0, 0.5625}},
                  {"rng_restored", true},
                  {"data_restored", true},
                  {"bitwise_equal", false},
                  {"final_state_equal", true},
                  {"max_abs_loss_diff", 0.0625},
                  {"loss_tolerance", 0.125},
                  {"checkpoint_verified",
                   {{"step", 1}, {"files_verified", 3}, {"verified_by", "coordinator"}}}};
  json report = {
      {"checks", {{{"id", "train.roundtrip"}, {"status", "pass"}, {"metrics", metrics}}}}};
  EXPECT_TRUE(EvidenceContradictions(ViewOfReport(report)).empty());
  report["checks"][0]["metrics"]["loss_tolerance"] = 0.03125;  // the test can fail
  EXPECT_EQ(EvidenceContradictions(ViewOfReport(report)),
            std::vector<std::string>{"train.roundtrip: pass, but the losses differ by more than "
                                     "loss_tolerance 0.03125 (from step 2)"});
}

TEST(Evidence, AnEvalPassIsJudgedOnItsTwoLosses) {
  json metrics = {{"eval_loss_before_save", 2.5},
                  {"eval_loss_after_restore", 2.5},
                  {"abs_diff", 0.0},
                  {"tolerance", 0.0}};
  json report = {{"checks", {{{"id", "train.eval"}, {"status", "pass"}, {"metrics", metrics}}}}};
  EXPECT_TRUE(EvidenceContradictions(ViewOfReport(report)).empty());
  report["checks"][0]["metrics"].erase("eval_loss_after_restore");
  EXPECT_EQ(EvidenceContradictions(ViewOfReport(report)),
            std::vector<std::string>{"train.eval: pass, but it has no eval_loss_before_save and "
                                     "eval_loss_after_restore"});
}

// The lock's [validate] valid-for is the window when --max-age is not given.
TEST_F(CliGate, TheLocksValidForRefusesAnOlderReport) {
  const std::string tiny = testing::TinyWith(tmp_.path(), "", "valid-for = \"1h\"\n").string();
  auto r = testing::RunTrainlock({"gate", Fixture(), "--lock", tiny, "--allow-unsigned"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("older than the lock's validate.valid-for 1h 0m"), std::string::npos)
      << r.out;
  r = testing::RunTrainlock(
      {"gate", Fixture(), "--lock", tiny, "--allow-unsigned", "--max-age", "100000d"});
  EXPECT_EQ(r.out.find("  - age:"), std::string::npos) << "--max-age overrides: " << r.out;
}

TEST_F(CliGate, ABareNodeIsThisHostAsTheValidatorNamesIt) {
  auto r = testing::RunProgram("trainlock",
                               {"gate", Fixture(), "--lock", Tiny(), "--allow-unsigned", "--node"},
                               {"TRAINLOCK_NODE_NAME=gpu-017"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("  - node: the report was made on 'vm', not on this node 'gpu-017'"),
            std::string::npos)
      << r.out;
  r = testing::RunTrainlock(
      {"gate", Fixture(), "--lock", Tiny(), "--allow-unsigned", "--node", "vm"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(CliGate, AnEmptyMaxAgeIsBadInput) {
  auto r = testing::RunTrainlock({"gate", Fixture(), "--lock", Tiny(), "--max-age", ""});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--max-age: error: not a positive duration: ''"), std::string::npos)
      << r.err;
}

TEST_F(CliGate, WithoutKeyOrAllowUnsignedTheGateRefuses) {
  auto r = testing::RunTrainlock({"gate", Fixture(), "--lock", Tiny()});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("  - signature: no --key"), std::string::npos) << r.out;
}

TEST_F(CliGate, ControlCharactersInTheReportAreShownEscaped) {
  json report = json::parse(ReadFile(Fixture()));
  for (json& c : report["checks"]) {
    if (c["id"] == "train.step") {
      c["status"] = "fail";
      c["summary"] =
          "boom\x1b]0;owned\x07\r\xe2\x80\xae"
          "evil";
    }
  }
  report["verdict"] = "fail";
  testing::WriteFile(tmp_.path() / "odd.json", report.dump());
  auto r = testing::RunTrainlock(
      {"gate", (tmp_.path() / "odd.json").string(), "--lock", Tiny(), "--allow-unsigned"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\r'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("boom\\x1b]0;owned\\x07\\x0d\\u202eevil"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace trainlock

namespace trainlock {
namespace {

// The gate on the command line: --lock takes the lock file or its directory, REPORT defaults
// to where `trainlock validate` writes (DIR/.trainlock/reports/report.json), and --require
// takes a,b as well as repeated ids.
class GateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    project_ = testing::CopyExample("tiny", dir_.path());
    Project p = LoadProject(project_);
    nlohmann::json report = nlohmann::json::parse(
        testing::ReadFile(SourceDir() / "tests/fixtures/reports/tiny-report.json"));
    report["lock_sha256"] = p.lock_sha256;
    report["config_sha256"] = p.config_sha256;
    testing::WriteFile(project_ / ".trainlock/reports/report.json", report.dump(2));
  }
  testing::RunResult Gate(std::vector<std::string> args) {
    args.insert(args.begin(), "gate");
    args.push_back("--allow-unsigned");
    args.push_back("--json");
    return testing::RunTrainlock(args);
  }

  testing::TempDir dir_;
  std::filesystem::path project_;
};

TEST_F(GateCli, TheReportDefaultsToTheOneValidateWritesInTheProject) {
  auto r = Gate({"--lock", project_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["report"],
            (project_ / ".trainlock/reports/report.json").string());
}

TEST_F(GateCli, LockTakesTheLockFileOrItsDirectory) {
  auto by_dir = Gate({"--lock", project_.string()});
  auto by_file = Gate({"--lock", (project_ / "trainlock.lock").string()});
  EXPECT_EQ(by_dir.exit_code, 0) << by_dir.err;
  EXPECT_EQ(by_file.exit_code, 0) << by_file.err;
  EXPECT_EQ(nlohmann::json::parse(by_dir.out)["lock"], nlohmann::json::parse(by_file.out)["lock"]);
  auto other = Gate({"--lock", (project_ / "trainlock.toml").string()});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("trainlock.toml: error: is not a trainlock.lock"), std::string::npos)
      << other.err;
}

TEST_F(GateCli, RequireTakesACommaListOrRepeatedIds) {
  auto listed = Gate({"--lock", project_.string(), "--require", "comm.ddp,comm.allreduce"});
  auto repeated =
      Gate({"--lock", project_.string(), "--require", "comm.ddp", "--require", "comm.allreduce"});
  EXPECT_EQ(listed.exit_code, 1);
  EXPECT_EQ(listed.out, repeated.out);
  EXPECT_NE(listed.out.find("required check comm.allreduce was skipped"), std::string::npos)
      << listed.out;
}

TEST_F(GateCli, AConfigChangedSinceTheLockIsRefusedNamingIt) {
  testing::WriteFile(project_ / "configs/tiny.yaml",
                     testing::ReadFile(project_ / "configs/tiny.yaml") + "\n# edited\n");
  auto r = Gate({"--lock", project_.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("files: lock.config: the training config"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run `trainlock lock"), std::string::npos) << r.out;
}

TEST_F(GateCli, ALocalDataFileChangedSinceTheLockIsRefusedNamingIt) {
  const auto project = testing::UnlockedTiny(
      dir_.path() / "data", "",
      "[dataset]\nsource = \"local\"\npath = \"data\"\nfiles = [\"a.bin\"]\n");
  testing::WriteFile(project / "data/a.bin", "token bytes");
  auto locked = testing::RunTrainlock({"lock", project.string(), "--offline"});
  ASSERT_EQ(locked.exit_code, 0) << locked.err;
  Project p = LoadProject(project);
  nlohmann::json report = nlohmann::json::parse(
      testing::ReadFile(SourceDir() / "tests/fixtures/reports/tiny-report.json"));
  report["lock_sha256"] = p.lock_sha256;
  report["config_sha256"] = p.config_sha256;
  testing::WriteFile(project / ".trainlock/reports/report.json", report.dump(2));
  ASSERT_EQ(Gate({"--lock", project.string()}).exit_code, 0);
  testing::WriteFile(project / "data/a.bin", "other bytes");  // after the validation
  auto r = Gate({"--lock", project.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("files: " + (project / "trainlock.lock").string() + ": stale"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("a.bin"), std::string::npos) << r.out;
}

TEST_F(GateCli, FilesNotPresentAreSaidToRelyOnTheReport) {
  std::filesystem::remove(project_ / "trainlock.toml");
  auto r = Gate({"--lock", project_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("files not present: relying on the report for " +
                       (project_ / "trainlock.toml").string() + " (the config matches the lock)"),
            std::string::npos)
      << r.out;
}

// A node holds the lock alone (docs/fleet.md): no manifest, no config beside it. The report's
// config hash is still held to the lock's, and the pass names what it relied on.
TEST_F(GateCli, TheLockAloneIsEnoughAndTheAbsentFilesAreNamed) {
  std::filesystem::remove(project_ / "trainlock.toml");
  std::filesystem::remove(project_ / "configs/tiny.yaml");
  auto r = Gate({"--lock", (project_ / "trainlock.lock").string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("files not present: relying on the report for " +
                       (project_ / "trainlock.toml").string() + ", " +
                       (project_ / "configs/tiny.yaml").string()),
            std::string::npos)
      << r.out;
}

TEST_F(GateCli, WithTheLockAloneAReportOfAnotherConfigIsStillRefused) {
  std::filesystem::remove(project_ / "trainlock.toml");
  std::filesystem::remove(project_ / "configs/tiny.yaml");
  const auto report_file = project_ / ".trainlock/reports/report.json";
  nlohmann::json report = nlohmann::json::parse(testing::ReadFile(report_file));
  report["config_sha256"] = std::string(64, 'a');
  testing::WriteFile(report_file, report.dump(2));
  auto r = Gate({"--lock", project_.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("config"), std::string::npos) << r.out;
}

// A config that is there but cannot be read is no absent file: the gate cannot decide.
TEST_F(GateCli, WithTheLockAloneAConfigThatIsADirectoryIsBadInput) {
  std::filesystem::remove(project_ / "configs/tiny.yaml");
  std::filesystem::create_directory(project_ / "configs/tiny.yaml");
  auto r = Gate({"--lock", project_.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("configs/tiny.yaml"), std::string::npos) << r.err;
}

// A copy of tiny with a local dataset file data/a.bin, locked, and a report of that lock.
std::filesystem::path LockedTinyWithLocalData(const std::filesystem::path& dest) {
  const auto project = testing::UnlockedTiny(
      dest, "", "[dataset]\nsource = \"local\"\npath = \"data\"\nfiles = [\"a.bin\"]\n");
  testing::WriteFile(project / "data/a.bin", "token bytes");
  auto locked = testing::RunTrainlock({"lock", project.string(), "--offline"});
  EXPECT_EQ(locked.exit_code, 0) << locked.err;
  Project p = LoadProject(project);
  nlohmann::json report = nlohmann::json::parse(
      testing::ReadFile(SourceDir() / "tests/fixtures/reports/tiny-report.json"));
  report["lock_sha256"] = p.lock_sha256;
  report["config_sha256"] = p.config_sha256;
  testing::WriteFile(project / ".trainlock/reports/report.json", report.dump(2));
  return project;
}

TEST_F(GateCli, APinnedFileThatIsASymlinkOutOfTheProjectIsRefusedNamingIt) {
  const auto project = LockedTinyWithLocalData(dir_.path() / "p");
  ASSERT_EQ(Gate({"--lock", project.string()}).exit_code, 0);
  testing::WriteFile(dir_.path() / "elsewhere.bin", "other bytes");
  std::filesystem::remove(project / "data/a.bin");
  std::filesystem::create_symlink(dir_.path() / "elsewhere.bin", project / "data/a.bin");
  EXPECT_EQ(testing::RunTrainlock({"lock", project.string(), "--check"}).exit_code, 2);
  std::filesystem::remove(project / "trainlock.toml");  // no manifest either: still refused
  auto r = Gate({"--lock", project.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("files: " + (project / "data/a.bin").string() + ": resolves to"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("outside the project"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("relying on the report"), std::string::npos) << r.out;
}

TEST_F(GateCli, APinnedFileThatIsADirectoryIsRefusedNamingIt) {
  const auto project = LockedTinyWithLocalData(dir_.path() / "p");
  std::filesystem::remove(project / "data/a.bin");
  std::filesystem::create_directory(project / "data/a.bin");
  auto r = Gate({"--lock", project.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("files: " + (project / "data/a.bin").string() + ": not a regular file"),
            std::string::npos)
      << r.out;
}

TEST_F(GateCli, APinnedFileTrulyAbsentIsNamedAsReliedOn) {
  const auto project = LockedTinyWithLocalData(dir_.path() / "p");
  std::filesystem::remove(project / "data/a.bin");  // the report was checked elsewhere
  auto r = Gate({"--lock", project.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("files not present: relying on the report for " +
                       (project / "data/a.bin").string()),
            std::string::npos)
      << r.out;
}

TEST_F(GateCli, APinnedFileChangedWithTheManifestDeletedIsRefusedNamingIt) {
  const auto project = LockedTinyWithLocalData(dir_.path() / "p");
  std::filesystem::remove(project / "trainlock.toml");
  testing::WriteFile(project / "data/a.bin", "other bytes");
  auto r = Gate({"--lock", project.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("files: " + (project / "data/a.bin").string() + ": sha256 "),
            std::string::npos)
      << r.out;
}

TEST_F(GateCli, AConfigChangedWithTheManifestDeletedIsRefusedNamingIt) {
  std::filesystem::remove(project_ / "trainlock.toml");
  testing::WriteFile(project_ / "configs/tiny.yaml",
                     testing::ReadFile(project_ / "configs/tiny.yaml") + "\n# edited\n");
  auto r = Gate({"--lock", project_.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("files: lock.config: the training config"), std::string::npos) << r.out;
}

TEST_F(GateCli, UnchangedFilesAreSaidToMatchTheLock) {
  auto r = Gate({"--lock", project_.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("project files match the lock"), std::string::npos) << r.out;
}

TEST_F(GateCli, AMultiTargetLockWithoutTargetIsAmbiguous) {
  const auto lock = project_ / "trainlock.lock";
  std::string text = testing::ReadFile(lock);
  Project p = LoadProject(project_);
  text += "\n[targets.cuda]\naccelerators = ['H200']\nbase = \"" + p.lock->targets.at("cpu").base +
          "\"\ncuda = '13.0'\ndriver-min = '580.65.06'\ntorch = '2.11.0+cu130'\n";
  testing::WriteFile(lock, text);
  auto r = Gate({"--lock", lock.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("the lock has targets cpu, cuda: which one the long run uses is ambiguous"),
            std::string::npos)
      << r.err;
  auto cuda = Gate({"--lock", lock.string(), "--target", "cuda"});
  EXPECT_EQ(cuda.exit_code, 1) << cuda.out << cuda.err;
  EXPECT_NE(cuda.out.find("not --target cuda"), std::string::npos) << cuda.out;
}

}  // namespace
}  // namespace trainlock

namespace trainlock {
namespace {

// The round trip proves the engine that ran it: the lock's (validate.engine), and
// --require-engine's when given.
class GateEngine : public Gate {
 protected:
  void SayEngine(const std::string& engine) {
    (*Check(report_, "train.step"))["metrics"]["measured_shape"]["engine"] = engine;
  }
};

TEST_F(GateEngine, ARoundTripOfAnotherEngineThanTheLocksIsRefused) {
  SayEngine("ddp");
  EXPECT_TRUE(
      HasReason(Decide(), "engine", "ran engine ddp, the lock's validate.engine is native"));
}

TEST_F(GateEngine, RequireEngineRefusesAReportOfAnotherEngine) {
  SayEngine("native");
  GateRequest r = Request(report_.dump(2));
  r.require_engine = "fsdp2";
  EXPECT_TRUE(HasReason(Decide(r), "engine", "not --require-engine fsdp2"));
  r.require_engine = "native";
  EXPECT_TRUE(Decide(r).allowed()) << ::testing::PrintToString(Decide(r).reasons);
}

TEST_F(GateEngine, AReportNamingNoEngineIsRefusedForALockOfAPythonEngine) {
  for (json& c : report_["checks"]) c["metrics"].erase("measured_shape");
  lock_.validate.engine = "ddp";
  EXPECT_TRUE(HasReason(Decide(), "engine", "does not say which engine trained"));
}

TEST_F(GateEngine, AReportNamingNoEngineStandsForTheNativeEngineOfItsLock) {
  for (json& c : report_["checks"]) {
    if (c["metrics"].contains("measured_shape")) c["metrics"]["measured_shape"].erase("engine");
    c["metrics"].erase("engine");
  }
  GateDecision d = Decide();
  EXPECT_TRUE(d.allowed()) << ::testing::PrintToString(d.reasons);
}

}  // namespace
}  // namespace trainlock

namespace trainlock {
namespace {

// A Python engine's interpreter inside an image is the image's, verified before it ran; the
// image digest's source is said in the gate's facts (docs/DESIGN.md, "Threat model").
class GateImagePython : public Gate {
 protected:
  void SetUp() override {
    Gate::SetUp();
    lock_.images["cpu"] = {"registry.example/tiny:1", digest_, std::nullopt, ""};
    report_["image"] = {{"ref", "registry.example/tiny:1"},
                        {"digest", digest_},
                        {"digest_source", "container-tool"}};
    report_["engine"] = {{"name", "native"},
                         {"python", "/opt/venv/bin/python3"},
                         {"torch", "1.13.1"},
                         {"versions", json::object()},
                         {"python_verified", true}};
  }
  const std::string digest_ = "sha256:" + std::string(64, 'b');
};

TEST_F(GateImagePython, TheImagesVerifiedInterpreterIsAccepted) {
  GateDecision d = Decide();
  EXPECT_TRUE(d.allowed()) << ::testing::PrintToString(d.reasons);
}

TEST_F(GateImagePython, AnotherInterpreterInsideTheImageIsRefusedNamingBoth) {
  report_["engine"]["python"] = "/usr/bin/python3";
  EXPECT_TRUE(HasReason(Decide(), "engine",
                        "ran /usr/bin/python3, not the image's interpreter /opt/venv/bin/python3"));
}

TEST_F(GateImagePython, AnInterpreterTheReportDoesNotCallVerifiedIsRefused) {
  report_["engine"]["python_verified"] = false;
  EXPECT_TRUE(HasReason(Decide(), "engine", "were verified before the engine ran"));
}

TEST_F(GateImagePython, TheFactsSayTheDigestWasMeasuredByTheContainerTool) {
  GateRequest r = Request(report_.dump(2));
  r.image_digest = digest_;
  const GateDecision d = Decide(r);
  ASSERT_TRUE(d.allowed()) << ::testing::PrintToString(d.reasons);
  EXPECT_NE(::testing::PrintToString(d.facts).find("measured by the container tool"),
            std::string::npos);
}

TEST_F(GateImagePython, TheFactsSayADigestOnlyClaimedByTheEnvironment) {
  report_["image"]["digest_source"] = "environment";
  GateRequest r = Request(report_.dump(2));
  r.image_digest = digest_;
  const GateDecision d = Decide(r);
  ASSERT_TRUE(d.allowed()) << ::testing::PrintToString(d.reasons);
  EXPECT_NE(::testing::PrintToString(d.facts).find("claimed by the environment"),
            std::string::npos);
}

TEST_F(GateImagePython, AReportMadeOutsideAnImageCannotSatisfyImage) {
  report_["image"] = nullptr;
  lock_.images.clear();
  GateRequest r = Request(report_.dump(2));
  r.image_digest = digest_;
  EXPECT_TRUE(HasReason(Decide(r), "image", "ran in no image"));
}

}  // namespace
}  // namespace trainlock
