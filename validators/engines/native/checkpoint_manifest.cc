// Reading a checkpoint manifest; see checkpoint_manifest.h.
#include "engines/native/checkpoint_manifest.h"

#include <optional>
#include <set>

#include "base/diagnostic.h"
#include "base/json_file.h"
#include "base/safe_paths.h"
#include "base/sha256.h"

namespace trainlock::validate {
namespace {

using nlohmann::json;

// A string member, or nullopt when absent or not a string.
std::optional<std::string> OptionalStringMember(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// One file entry; an entry without a role (v1 manifests) takes its name's stem.
CheckpointFile FileOf(const json& entry, const std::string& where) {
  const std::string invalid = where + ": invalid file entry " + Quoted(entry.dump());
  if (!entry.is_object()) throw CheckpointError(invalid);
  CheckpointFile file;
  file.path = OptionalStringMember(entry, "path").value_or("");
  if (!IsPlainFileName(file.path)) throw CheckpointError(invalid + ": path is not a file name");
  std::optional<std::string> role = OptionalStringMember(entry, "role");
  file.role = role ? *role : file.path.substr(0, file.path.find('.'));
  if (file.role != kModelRole && file.role != kOptimizerRole)
    throw CheckpointError(invalid + ": role is neither model nor optimizer");
  file.sha256 = OptionalStringMember(entry, "sha256").value_or("");
  if (!IsSha256Hex(file.sha256))
    throw CheckpointError(invalid + ": sha256 is not 64 lower-case hex characters");
  auto size = entry.find("size");
  if (size == entry.end() || !size->is_number_unsigned())
    throw CheckpointError(invalid + ": size is not a non-negative integer");
  file.size = size->get<uint64_t>();
  return file;
}

std::vector<CheckpointFile> FilesOf(const json& files, const std::string& where) {
  std::vector<CheckpointFile> out;
  std::set<std::string> paths, roles;
  for (const json& entry : files) {
    out.push_back(FileOf(entry, where));
    if (!paths.insert(out.back().path).second)
      throw CheckpointError(where + ": lists " + Quoted(out.back().path) + " twice");
    roles.insert(out.back().role);
  }
  for (const char* role : {kModelRole, kOptimizerRole}) {
    if (!roles.count(role)) {
      throw CheckpointError(where + ": does not list " + role +
                            " files (model.safetensors, optimizer.safetensors or their shards)");
    }
  }
  return out;
}

}  // namespace

CheckpointManifest ParseCheckpointManifest(std::string_view text, const std::string& where) {
  const std::string not_manifest = where + ": not a " + kCheckpointFormat + " manifest";
  std::string problem;
  std::optional<json> manifest = TryParseJsonText(text, &problem);
  if (!manifest) throw CheckpointError(not_manifest + ": " + problem);
  if (!manifest->is_object()) throw CheckpointError(not_manifest);
  const std::string format = OptionalStringMember(*manifest, "format").value_or("");
  auto files = manifest->find("files");
  auto step = manifest->find("step");
  if ((format != kCheckpointFormat && format != kCheckpointFormatV1) || files == manifest->end() ||
      !files->is_array() || step == manifest->end() || !step->is_number_integer()) {
    throw CheckpointError(not_manifest);
  }
  CheckpointManifest out;
  if (!step->is_number_unsigned() || step->get<uint64_t>() > uint64_t{INT64_MAX})
    throw CheckpointError(where + ": step " + Quoted(step->dump()) + " is not a step number");
  out.step = step->get<int64_t>();
  out.files = FilesOf(*files, where);
  if (auto state = manifest->find("state"); state != manifest->end()) {
    if (!state->is_object()) throw CheckpointError(where + ": state is not an object");
    out.state = *state;
  }
  return out;
}

std::string ManifestHashOf(std::string_view hash_text, const std::string& where) {
  const size_t end = hash_text.find('\n');
  if (end != std::string_view::npos &&
      hash_text.find_first_not_of(" \t\r\n", end) != std::string_view::npos) {
    throw CheckpointError(where + ": more than one line (expected one `SHA256  " + kManifestFile +
                          "`)");
  }
  const std::string line(hash_text.substr(0, end));
  const std::string want = line.substr(0, line.find_first_of(" \t\r"));
  if (want.empty()) throw CheckpointError(where + ": missing");
  const std::string rest = line.substr(want.size());
  if (rest.empty() || rest == "\r") return want;
  if (rest == std::string("  ") + kManifestFile || rest == std::string(" *") + kManifestFile)
    return want;
  throw CheckpointError(where + ": names another file than " + kManifestFile +
                        " (expected `SHA256  " + kManifestFile + "`)");
}

}  // namespace trainlock::validate
