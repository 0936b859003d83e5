// Comparing two OCI layout images; see image_diff.h.
#include "image/image_diff.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <map>

#include "base/exit_code.h"
#include "base/failure.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "base/sha256.h"
#include "base/terminal_text.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxValueChars = 160;

// A value or a file name from either image, as one line of the account: its newlines and
// other controls escaped (a layer's path "a\nlayer 1 of 1: ..." would forge a line), bidi
// characters shown, credentials masked.
std::string Shown(const std::string& text) {
  std::string clean = TerminalLine(text);
  if (clean.size() > kMaxValueChars) clean = clean.substr(0, kMaxValueChars) + "...";
  return clean;
}

nlohmann::json ReadLayoutJson(const fs::path& file, const std::string& display) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(file, ec)))
    throw Failure(display + ": a symbolic link, not followed", kExitEnvironment);
  std::string problem;
  std::optional<nlohmann::json> parsed = TryReadJsonFile(file, &problem);
  if (!parsed || !parsed->is_object())
    throw Failure(display + ": " + (parsed ? "not a JSON object" : problem), kExitEnvironment);
  return *parsed;
}

// blobs/sha256/<hex> for a "sha256:<hex>" digest, refused when it is anything else.
fs::path BlobPath(const fs::path& dir, const nlohmann::json& descriptor, const std::string& what) {
  const nlohmann::json* digest =
      descriptor.is_object() && descriptor.contains("digest") ? &descriptor["digest"] : nullptr;
  const std::string text = digest && digest->is_string() ? digest->get<std::string>() : "";
  if (!text.starts_with("sha256:") || !IsSha256Hex(text.substr(7)))
    throw Failure(
        (dir / "index.json").string() + ": " + what + " has no sha256 digest: " + Shown(text),
        kExitEnvironment);
  return dir / "blobs" / "sha256" / text.substr(7);
}

// Orders JSON paths as a person reads them: history[2] before history[10].
struct NaturalOrder {
  bool operator()(const std::string& a, const std::string& b) const {
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
      if (std::isdigit(static_cast<unsigned char>(a[i])) &&
          std::isdigit(static_cast<unsigned char>(b[j]))) {
        size_t ei = i, ej = j;
        while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
        while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
        if (ei - i != ej - j)
          return ei - i < ej - j;  // fewer digits: smaller (no leading zeros in indices)
        const int c = a.compare(i, ei - i, b, j, ej - j);
        if (c != 0) return c < 0;
        i = ei, j = ej;
      } else {
        if (a[i] != b[j]) return a[i] < b[j];
        ++i, ++j;
      }
    }
    return a.size() - i < b.size() - j;
  }
};
using FlatJson = std::map<std::string, std::string, NaturalOrder>;

// Path -> scalar text for every leaf of `value`, arrays indexed: config.Env[0], history[2].created.
void Flatten(const nlohmann::json& value, const std::string& path, FlatJson& out) {
  if (value.is_object()) {
    if (value.empty()) out[path] = "{}";
    for (auto it = value.begin(); it != value.end(); ++it)
      Flatten(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
  } else if (value.is_array()) {
    if (value.empty()) out[path] = "[]";
    for (size_t i = 0; i < value.size(); ++i)
      Flatten(value[i], path + "[" + std::to_string(i) + "]", out);
  } else {
    out[path] = value.is_string() ? value.get<std::string>() : value.dump();
  }
}

std::string Octal(uint32_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", mode);
  return buf;
}

std::string EntryKind(char type) {
  switch (type) {
    case '0':
    case '7':
      return "file";
    case '1':
      return "hard link";
    case '2':
      return "symlink";
    case '5':
      return "directory";
    default:
      return std::string("type '") + type + "'";
  }
}

std::string EntryDifference(const LayerEntry& a, const LayerEntry& b) {
  std::vector<std::string> parts;
  if (a.type != b.type) parts.push_back("kind " + EntryKind(a.type) + " -> " + EntryKind(b.type));
  if (a.sha256 != b.sha256 || a.size != b.size)
    parts.push_back("content (" + std::to_string(a.size) + " bytes, sha256 " +
                    a.sha256.substr(0, 12) + " -> " + std::to_string(b.size) + " bytes, sha256 " +
                    b.sha256.substr(0, 12) + ")");
  if (a.link != b.link) parts.push_back("link target " + Shown(a.link) + " -> " + Shown(b.link));
  if (a.mode != b.mode) parts.push_back("mode " + Octal(a.mode) + " -> " + Octal(b.mode));
  if (a.uid != b.uid || a.gid != b.gid)
    parts.push_back("owner " + std::to_string(a.uid) + ":" + std::to_string(a.gid) + " -> " +
                    std::to_string(b.uid) + ":" + std::to_string(b.gid));
  if (a.mtime != b.mtime)
    parts.push_back("mtime " + std::to_string(a.mtime) + " -> " + std::to_string(b.mtime));
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::vector<std::string> DiffIds(const nlohmann::json& config) {
  std::vector<std::string> ids;
  const auto rootfs = config.find("rootfs");
  if (rootfs == config.end() || !rootfs->is_object()) return ids;
  const auto listed = rootfs->find("diff_ids");
  if (listed == rootfs->end() || !listed->is_array()) return ids;
  for (const auto& id : *listed) ids.push_back(id.is_string() ? id.get<std::string>() : "");
  return ids;
}

}  // namespace

OciLayoutImage ReadOciLayout(const fs::path& dir) {
  const nlohmann::json index = ReadLayoutJson(dir / "index.json", (dir / "index.json").string());
  const auto manifests = index.find("manifests");
  if (manifests == index.end() || !manifests->is_array() || manifests->empty())
    throw Failure((dir / "index.json").string() + ": names no manifest", kExitEnvironment);
  const fs::path manifest_path = BlobPath(dir, (*manifests)[0], "its first manifest");
  const nlohmann::json manifest = ReadLayoutJson(manifest_path, manifest_path.string());
  OciLayoutImage image;
  const fs::path config_path =
      BlobPath(dir, manifest.value("config", nlohmann::json()), "the manifest's config");
  image.config = ReadLayoutJson(config_path, config_path.string());
  const auto layers = manifest.find("layers");
  if (layers == manifest.end() || !layers->is_array())
    throw Failure(manifest_path.string() + ": the manifest lists no layers", kExitEnvironment);
  for (const auto& layer : *layers) {
    image.layers.push_back(BlobPath(dir, layer, "a layer"));
    image.layer_digests.push_back(layer["digest"].get<std::string>());
  }
  return image;
}

std::vector<std::string> DiffImageConfigs(const nlohmann::json& recorded,
                                          const nlohmann::json& rebuilt) {
  FlatJson a, b;
  Flatten(recorded, "", a);
  Flatten(rebuilt, "", b);
  std::vector<std::string> lines;
  for (const auto& [path, value] : a) {
    const auto other = b.find(path);
    if (other == b.end()) {
      lines.push_back("image.json " + path + ": " + Shown(value) + " -> (absent)");
    } else if (other->second != value) {
      lines.push_back("image.json " + path + ": " + Shown(value) + " -> " + Shown(other->second));
    }
  }
  for (const auto& [path, value] : b)
    if (!a.contains(path)) lines.push_back("image.json " + path + ": (absent) -> " + Shown(value));
  return lines;
}

std::vector<std::string> DiffLayerListings(const LayerListing& recorded,
                                           const LayerListing& rebuilt) {
  std::vector<std::string> lines;
  for (const auto& [path, entry] : recorded) {
    const auto other = rebuilt.find(path);
    if (other == rebuilt.end()) {
      lines.push_back(Shown(path) + ": only in the recorded image");
    } else if (std::string what = EntryDifference(entry, other->second); !what.empty()) {
      lines.push_back(Shown(path) + ": " + what);
    }
  }
  for (const auto& [path, entry] : rebuilt)
    if (!recorded.contains(path)) lines.push_back(Shown(path) + ": only in the rebuild");
  return lines;
}

std::vector<std::string> DescribeImageDifference(const fs::path& recorded, const fs::path& rebuilt,
                                                 size_t max_lines) {
  const OciLayoutImage a = ReadOciLayout(recorded), b = ReadOciLayout(rebuilt);
  std::vector<std::string> lines = DiffImageConfigs(a.config, b.config);
  // The configuration takes at most half the lines, so the files that differ are seen too.
  if (const size_t half = std::max<size_t>(1, max_lines / 2); lines.size() > half) {
    const size_t more = lines.size() - half + 1;
    lines.resize(half - 1);
    lines.push_back("image.json: ... and " + std::to_string(more) + " more field" +
                    (more == 1 ? "" : "s"));
  }
  if (a.layers.size() != b.layers.size())
    lines.push_back("layers: " + std::to_string(a.layers.size()) + " recorded, " +
                    std::to_string(b.layers.size()) + " rebuilt");
  // A layer's uncompressed digest (the config's rootfs.diff_ids) says whether its files can
  // differ; the blob digests also change with the compression alone.
  const std::vector<std::string> ids_a = DiffIds(a.config), ids_b = DiffIds(b.config);
  const size_t n = std::min(a.layers.size(), b.layers.size());
  for (size_t i = 0; i < n && lines.size() <= max_lines; ++i) {
    const bool same =
        a.layer_digests[i] == b.layer_digests[i] ||
        (i < ids_a.size() && i < ids_b.size() && !ids_a[i].empty() && ids_a[i] == ids_b[i]);
    if (same) continue;
    const std::string layer = "layer " + std::to_string(i + 1) + " of " + std::to_string(n) + ": ";
    const std::vector<std::string> files =
        DiffLayerListings(ListLayerFile(a.layers[i], a.layers[i].string()),
                          ListLayerFile(b.layers[i], b.layers[i].string()));
    if (files.empty()) lines.push_back(layer + "the same files, differently compressed");
    for (const std::string& f : files) lines.push_back(layer + f);
  }
  if (lines.size() > max_lines) {
    const size_t more = lines.size() - max_lines;
    lines.resize(max_lines);
    lines.push_back("... and at least " + std::to_string(more) + " more difference" +
                    (more == 1 ? "" : "s"));
  }
  return lines;
}

}  // namespace trainlock
