// Binding a report to the image it ran in; see image_binding.h.
#include "coordinator/image_binding.h"

#include <iostream>

#include "base/diagnostic.h"
#include "base/refs.h"
#include "base/sha256.h"
#include "image/image_record.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

std::string Short(const std::string& sha256) {
  return sha256.substr(0, 12) + "...";
}

[[noreturn]] void Mismatch(const std::string& what, const std::string& image_side,
                           const std::string& project_side) {
  throw InputError(Diagnostic{
      "image",
      {},
      "the image's " + what + " (" + image_side + ") is not the project's (" + project_side + ")",
      "validate a project in the image built from its lock (`trainlock image build`), or the "
      "project the image was built from"});
}

bool SameDir(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec);
}

}  // namespace

ImageBinding BindImage(const fs::path& etc_dir, const Project& project, const fs::path& self,
                       const char* env_ref, const char* env_digest) {
  ImageBinding binding;
  const fs::path record_path = etc_dir / "image.json";
  const bool env_named = env_digest && *env_digest;
  if (!fs::exists(record_path)) {
    if (env_named) {
      std::cerr << "trainlock-validate: TRAINLOCK_IMAGE_DIGEST is ignored: no "
                << record_path.string()
                << ", so this is not an image built by trainlock; the report names no image\n";
    }
    return binding;
  }
  const ImageRecord record = ReadImageRecord(record_path);
  const Project baked = SameDir(etc_dir, project.dir)
                            ? project
                            : LoadProject(etc_dir, ManifestRequirement::kOptional);
  // The build identity (lock-sha256 without [images], base/canonical.h): pushing an image
  // records it in the host's lock, which an image cannot contain.
  const std::string baked_id = baked.lock ? baked.lock->lock_build_sha256 : "";
  const std::string project_id = project.lock ? project.lock->lock_build_sha256 : "";
  if (record.lock_sha256 != baked_id || record.config_sha256 != baked.config_sha256) {
    throw InputError(Diagnostic{record_path.string(),
                                {},
                                "the record's lock-sha256 " + Short(record.lock_sha256) +
                                    " or config sha256 is not the image's own (" + baked.lock_path +
                                    ", lock-sha256 " + Short(baked_id) + ")",
                                "the image was changed after it was built: rebuild it"});
  }
  if (baked_id != project_id) {
    Mismatch("lock", baked.lock_path + ", lock-sha256 " + baked_id,
             project.lock_path + ", lock-sha256 " + project_id);
  }
  if (baked.config_sha256 != project.config_sha256) {
    Mismatch("training config", baked.config_path + ", sha256 " + baked.config_sha256,
             project.config_path + ", sha256 " + project.config_sha256);
  }
  if (!record.validator_sha256.empty()) {
    const std::string running = Sha256FileHex(self);
    if (running != record.validator_sha256) {
      Mismatch("validator", "sha256 " + record.validator_sha256,
               "this one, " + self.string() + ", sha256 " + running);
    }
  }
  binding.in_image = true;
  if (env_named) {
    const std::string digest = env_digest;
    if (!DigestProblem(digest).empty()) {
      throw InputError(Diagnostic{"TRAINLOCK_IMAGE_DIGEST",
                                  {},
                                  "'" + digest + "' is not sha256:<64 hex>",
                                  "the job names the digest it pinned the image by"});
    }
    binding.image = std::make_pair(std::string(env_ref ? env_ref : ""), digest);
    binding.digest_source = "environment";
  }
  return binding;
}

}  // namespace trainlock::validate
