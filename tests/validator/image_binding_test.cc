// How a report comes to name an image (validators/coordinator/image_binding.h): never from the
// environment alone. Outside an image built by trainlock TRAINLOCK_IMAGE_DIGEST is ignored; inside
// one the image's own record, lock, config and validator must be the project's before the job's
// digest is taken. The image's /etc/trainlock is a directory of the test here.
#include <gtest/gtest.h>

#include "base/diagnostic.h"
#include "base/sha256.h"
#include "coordinator/image_binding.h"
#include "image/image_record.h"
#include "project/project.h"
#include "test_support.h"

namespace trainlock::validate {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDigest =
    "sha256:1111111111111111111111111111111111111111111111111111111111111111";

class ImageBindingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    project_dir_ = testing::CopyExample("tiny", tmp_.path() / "project");
    etc_ = testing::CopyExample("tiny", tmp_.path() / "etc");
    validator_ = tmp_.path() / "trainlock-validate";
    testing::WriteFile(validator_, "the validator the image was built with\n");
  }

  Project TheProject() { return LoadProject(project_dir_); }

  // /etc/trainlock/image.json as `image generate` writes it for the image's own lock.
  void WriteRecord(const std::string& validator_sha256) {
    const Project baked = LoadProject(etc_);
    ImageRecord record;
    record.target = "cpu";
    record.lock_sha256 = baked.lock_sha256;
    record.config_sha256 = baked.config_sha256;
    record.base = "127.0.0.1:5000/base@" + std::string(kDigest);
    record.validator_sha256 = validator_sha256;
    testing::WriteFile(etc_ / "image.json", record.ToJson().dump(2) + "\n");
  }

  std::string BindError(const char* digest) {
    try {
      BindImage(etc_, TheProject(), validator_, "registry/tiny:1", digest);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }

  testing::TempDir tmp_;
  fs::path project_dir_;
  fs::path etc_;
  fs::path validator_;
};

TEST_F(ImageBindingTest, OnTheHostTheEnvironmentCannotNameAnImage) {
  // No image.json: whatever TRAINLOCK_IMAGE_REF/DIGEST say, this is no image of trainlock's.
  const ImageBinding b = BindImage(etc_, TheProject(), validator_, "registry/tiny:1", kDigest);
  EXPECT_FALSE(b.in_image);
  EXPECT_FALSE(b.image.has_value());
  EXPECT_EQ(b.digest_source, "");
}

TEST_F(ImageBindingTest, InsideAnImageOfTheProjectsLockTheJobsDigestIsTaken) {
  WriteRecord(Sha256FileHex(validator_));
  const ImageBinding b = BindImage(etc_, TheProject(), validator_, "registry/tiny:1", kDigest);
  EXPECT_TRUE(b.in_image);
  ASSERT_TRUE(b.image.has_value());
  EXPECT_EQ(b.image->first, "registry/tiny:1");
  EXPECT_EQ(b.image->second, kDigest);
  EXPECT_EQ(b.digest_source, "environment");
}

TEST_F(ImageBindingTest, InsideAnImageWithoutAJobDigestTheReportNamesNone) {
  // `trainlock validate --image` binds the engine's digest on the host afterwards.
  WriteRecord(Sha256FileHex(validator_));
  const ImageBinding b = BindImage(etc_, TheProject(), validator_, nullptr, nullptr);
  EXPECT_TRUE(b.in_image);
  EXPECT_FALSE(b.image.has_value());
}

TEST_F(ImageBindingTest, AProjectOfAnotherLockIsRefusedNamingBothLocks) {
  WriteRecord(Sha256FileHex(validator_));
  std::string manifest = testing::ReadFile(project_dir_ / "trainlock.lock");
  manifest.replace(manifest.find("seed = 1234"), 11, "seed = 4321");
  testing::WriteFile(project_dir_ / "trainlock.lock", manifest);
  const std::string error = BindError(kDigest);
  EXPECT_NE(error.find("the image's lock ("), std::string::npos) << error;
  EXPECT_NE(error.find("is not the project's ("), std::string::npos) << error;
  EXPECT_NE(error.find(TheProject().lock_sha256), std::string::npos) << error;
}

TEST_F(ImageBindingTest, AHostLockThatRecordsThePushedImageStillBindsIt) {
  // `image build --push` adds [images.cpu] to the host's lock: lock-sha256 changes, the build
  // identity the image carries does not.
  WriteRecord(Sha256FileHex(validator_));
  const std::string lock = testing::ReadFile(project_dir_ / "trainlock.lock");
  testing::WriteFile(
      project_dir_ / "trainlock.lock",
      lock + "\n[images.cpu]\nref = 'registry/tiny:1'\ndigest = '" + std::string(kDigest) + "'\n");
  EXPECT_NE(TheProject().lock_sha256, LoadProject(etc_).lock_sha256);
  const ImageBinding b = BindImage(etc_, TheProject(), validator_, "registry/tiny:1", kDigest);
  EXPECT_TRUE(b.in_image);
}

TEST_F(ImageBindingTest, ARecordThatIsNotTheImagesOwnLockIsRefused) {
  WriteRecord(Sha256FileHex(validator_));
  // The lock inside the image changed after the build (its seed), the record did not.
  std::string lock = testing::ReadFile(etc_ / "trainlock.lock");
  lock.replace(lock.find("seed = 1234"), 11, "seed = 4321");
  testing::WriteFile(etc_ / "trainlock.lock", lock);
  const std::string error = BindError(kDigest);
  EXPECT_NE(error.find("the image was changed after it was built"), std::string::npos) << error;
}

TEST_F(ImageBindingTest, AValidatorOtherThanTheOneTheImageWasBuiltWithIsRefused) {
  WriteRecord(std::string(64, 'a'));
  const std::string error = BindError(kDigest);
  EXPECT_NE(error.find("the image's validator (sha256 " + std::string(64, 'a') + ")"),
            std::string::npos)
      << error;
}

TEST_F(ImageBindingTest, AMalformedJobDigestIsBadInput) {
  WriteRecord(Sha256FileHex(validator_));
  const std::string error = BindError("sha256:abc");
  EXPECT_NE(error.find("'sha256:abc' is not sha256:<64 hex>"), std::string::npos) << error;
}

}  // namespace
}  // namespace trainlock::validate
