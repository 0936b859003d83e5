// The image record; see image_record.h.
#include "image/image_record.h"

#include "base/diagnostic.h"
#include "base/json_file.h"
#include "base/sha256.h"

namespace trainlock {

nlohmann::json ImageRecord::ToJson() const {
  return {{"schema", kImageRecordSchema},
          {"target", target},
          {"lock_sha256", lock_sha256},
          {"config_sha256", config_sha256},
          {"source_date_epoch", source_date_epoch},
          {"base", base},
          {"validator_sha256",
           validator_sha256.empty() ? nlohmann::json(nullptr) : nlohmann::json(validator_sha256)},
          {"ref", ref}};
}

ImageRecord ImageRecord::FromJson(const nlohmann::json& j, const std::string& display) {
  auto fail = [&](const std::string& why) {
    throw InputError(Diagnostic{display,
                                {},
                                "not an image record: " + why,
                                "the image was not built by this trainlock's `image build`"});
  };
  if (!j.is_object() || j.value("schema", "") != kImageRecordSchema)
    fail(std::string("no \"schema\": \"") + kImageRecordSchema + "\"");
  auto text = [&](const char* key) {
    if (!j.contains(key) || !j[key].is_string()) fail(std::string("'") + key + "' is not a string");
    return j[key].get<std::string>();
  };
  ImageRecord r;
  r.target = text("target");
  r.lock_sha256 = text("lock_sha256");
  r.config_sha256 = text("config_sha256");
  r.base = text("base");
  r.ref = text("ref");
  if (!IsSha256Hex(r.lock_sha256) || !IsSha256Hex(r.config_sha256)) fail("a hash is not a SHA-256");
  if (!j.contains("source_date_epoch") || !j["source_date_epoch"].is_number_integer())
    fail("'source_date_epoch' is not an integer");
  r.source_date_epoch = j["source_date_epoch"].get<int64_t>();
  if (j.contains("validator_sha256") && !j["validator_sha256"].is_null()) {
    r.validator_sha256 = text("validator_sha256");
    if (!IsSha256Hex(r.validator_sha256)) fail("'validator_sha256' is not a SHA-256");
  }
  return r;
}

ImageRecord ReadImageRecord(const std::filesystem::path& file) {
  return ImageRecord::FromJson(ReadJsonFile(file, file.string()), file.string());
}

}  // namespace trainlock
