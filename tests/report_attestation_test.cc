// `trainlock report --format intoto`: the attestation it writes verifies with an independent
// DSSE implementation (tests/intoto/verify.mjs: Sigstore's PAE, Node's Ed25519, none of our
// code) and the public key alone, offline; a changed payload byte is refused by that verifier.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report/report_signing.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::RunCommand;
using testing::RunTrainlock;
using testing::SourceDir;

const std::string kImage = "sha256:" + std::string(64, 'b');

bool HaveVerifier() {
  return testing::HaveProgram("node") &&
         fs::is_directory(SourceDir() / "tests/intoto/node_modules/@sigstore/core");
}

testing::RunResult Verify(const fs::path& envelope, const fs::path& public_key) {
  return RunCommand({"timeout", "60", "node", (SourceDir() / "tests/intoto/verify.mjs").string(),
                     envelope.string(), public_key.string(), kImage});
}

class IndependentDsse : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveVerifier())
      GTEST_SKIP() << "node or tests/intoto/node_modules missing: run ci/deps.sh";
    const std::string prefix = (dir_.path() / "ci").string();
    ASSERT_EQ(RunTrainlock({"keygen", prefix}).exit_code, 0);
    json report =
        json::parse(testing::ReadFile(SourceDir() / "tests/fixtures/reports/tiny-report.json"));
    report["image"] = {{"ref", "registry.example/tiny:1"}, {"digest", kImage}};
    SignReport(report, testing::ReadFile(prefix + ".key"));
    testing::WriteFile(dir_.path() / "report.json", SignedReportText(report));
    auto r = RunTrainlock({"report", (dir_.path() / "report.json").string(), "--format", "intoto",
                           "--key", prefix + ".key", "--out", envelope_.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  testing::TempDir dir_;
  fs::path envelope_ = dir_.path() / "report.intoto.json";
  fs::path public_key_ = dir_.path() / "ci.pub";
};

TEST_F(IndependentDsse, VerifiesTheAttestationWithThePublicKey) {
  auto r = Verify(envelope_, public_key_);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verified: registry.example/tiny:1@" + kImage +
                       " https://in-toto.io/attestation/test-result/v0.1"),
            std::string::npos)
      << r.out;
}

TEST_F(IndependentDsse, RefusesAChangedPayloadByte) {
  json envelope = json::parse(testing::ReadFile(envelope_));
  std::string payload;
  ASSERT_TRUE(Base64DecodeStrict(envelope["payload"].get<std::string>(), &payload));
  payload[payload.find("PASSED")] = 'F';
  envelope["payload"] = Base64Encode(payload);
  testing::WriteFile(envelope_, envelope.dump(2));
  auto r = Verify(envelope_, public_key_);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("no signature verifies"), std::string::npos) << r.out;
}

TEST_F(IndependentDsse, RefusesAnotherKey) {
  ASSERT_EQ(RunTrainlock({"keygen", (dir_.path() / "other").string()}).exit_code, 0);
  auto r = Verify(envelope_, dir_.path() / "other.pub");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
}

TEST(ReportIntoto, WithoutAKeyIsRefusedNamingIt) {
  auto r =
      RunTrainlock({"report", (SourceDir() / "tests/fixtures/reports/tiny-report.json").string(),
                    "--format", "intoto"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--key"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainlock
