// Comparing two OCI layout images; see image_diff.h.
#include "image/image_diff.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <iterator>
#include <map>

#include "base/exit_code.h"
#include "base/failure.h"
#include "base/file_io.h"
#include "base/file_stream.h"
#include "base/json_file.h"
#include "base/sha256.h"
#include "base/terminal_text.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxValueChars = 160;

// A value or a file name from either image, as one line of the account: its newlines and
// other controls escaped (a layer's path "a\nlayer 1 of 1: ..." would forge a line), bidi
// characters shown, credentials masked. Only its first kMaxCleanedBytes are cleaned: a value or
// path of megabytes (a hostile image.json's) costs no more than that, and only a credential
// longer than the rest could bring more into view.
constexpr size_t kMaxCleanedBytes = size_t{64} << 10;
std::string Shown(std::string_view text) {
  std::string clean = TerminalLine(std::string(text.substr(0, kMaxCleanedBytes)));
  if (clean.size() > kMaxValueChars || text.size() > kMaxCleanedBytes)
    clean = clean.substr(0, kMaxValueChars) + "...";
  return clean;
}

// A layout's JSON file, read up to kMaxLayoutJsonBytes: parsed, a document takes ten to twenty
// times its text, so the cap is what bounds the configurations' memory.
nlohmann::json ReadLayoutJson(const fs::path& file, const std::string& display) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(file, ec)))
    throw Failure(display + ": a symbolic link, not followed", kExitEnvironment);
  std::string text;
  try {
    StreamRegularFile(file, [&](std::string_view chunk) {
      if (text.size() + chunk.size() > kMaxLayoutJsonBytes)
        throw Failure(display + ": more than " + std::to_string(kMaxLayoutJsonBytes >> 20) +
                          " MiB, the limit of an image's index, manifest or configuration",
                      kExitEnvironment);
      text.append(chunk);
    });
  } catch (const StreamError& e) {
    throw Failure(e.what(), kExitEnvironment);
  }
  std::string problem;
  std::optional<nlohmann::json> parsed = TryParseJsonText(text, &problem);
  if (!parsed || !parsed->is_object())
    throw Failure(display + ": " + (parsed ? "not a JSON object" : problem), kExitEnvironment);
  return *parsed;
}

// Difference lines kept up to a cut and only counted past it: what is held stays bounded
// whatever the two sides hold, and a line past the cut is never even built.
class Cut {
 public:
  explicit Cut(size_t keep) : keep_(keep) {}
  template <typename MakeLine>
  void Add(MakeLine&& make) {
    if (lines_.size() < keep_) {
      lines_.push_back(make());
    } else {
      ++more_;
    }
  }
  size_t more() const { return more_; }
  std::vector<std::string>& lines() { return lines_; }

 private:
  size_t keep_;
  size_t more_ = 0;
  std::vector<std::string> lines_;
};

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

// A leaf as the comparison shows it: a scalar's text, or "{}" / "[]" for an empty container.
bool IsLeaf(const nlohmann::json& v) {
  return !v.is_structured() || v.empty();
}
std::string LeafText(const nlohmann::json& v) {
  if (v.is_string()) return v.get_ref<const std::string&>();
  if (v.is_object()) return "{}";
  if (v.is_array()) return "[]";
  return v.dump();
}

// Two configurations walked side by side, each differing leaf a line under its JSON path
// (config.Env[0], history[2].created), in the order a person reads them (history[2] before
// history[10]). The path is one buffer grown and shrunk on the way: no leaf's path is built
// unless its line is kept.
class ConfigWalk {
 public:
  explicit ConfigWalk(Cut& cut) : cut_(cut) {}

  void Both(const nlohmann::json& a, const nlohmann::json& b) {
    if (IsLeaf(a) && IsLeaf(b)) {
      CountLeaves(2);
      if (a == b) return;
      cut_.Add([&] {
        return "image.json " + Shown(path_) + ": " + Shown(LeafText(a)) + " -> " +
               Shown(LeafText(b));
      });
    } else if (a.is_object() && b.is_object()) {
      std::vector<const std::string*> keys;
      for (auto it = a.begin(); it != a.end(); ++it) keys.push_back(&it.key());
      for (auto it = b.begin(); it != b.end(); ++it)
        if (!a.contains(it.key())) keys.push_back(&it.key());
      std::sort(keys.begin(), keys.end(),
                [](const std::string* x, const std::string* y) { return NaturalOrder()(*x, *y); });
      for (const std::string* key : keys) {
        const size_t mark = Enter(*key);
        const auto in_a = a.find(*key), in_b = b.find(*key);
        if (in_a == a.end()) {
          OneSide(*in_b, false);
        } else if (in_b == b.end()) {
          OneSide(*in_a, true);
        } else {
          Both(*in_a, *in_b);
        }
        path_.resize(mark);
      }
    } else if (a.is_array() && b.is_array()) {
      for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
        const size_t mark = Enter(i);
        if (i >= a.size()) {
          OneSide(b[i], false);
        } else if (i >= b.size()) {
          OneSide(a[i], true);
        } else {
          Both(a[i], b[i]);
        }
        path_.resize(mark);
      }
    } else {  // a leaf on one side, a tree on the other: each side's leaves, one side only
      OneSide(a, true);
      OneSide(b, false);
    }
  }

  // Every leaf below `v`, which only the recorded image (or only the rebuild) has.
  void OneSide(const nlohmann::json& v, bool recorded) {
    if (IsLeaf(v)) {
      CountLeaves(1);
      cut_.Add([&] {
        return "image.json " + Shown(path_) + ": " +
               (recorded ? Shown(LeafText(v)) + " -> (absent)"
                         : "(absent) -> " + Shown(LeafText(v)));
      });
      return;
    }
    if (v.is_object()) {
      for (auto it = v.begin(); it != v.end(); ++it) {
        const size_t mark = Enter(it.key());
        OneSide(it.value(), recorded);
        path_.resize(mark);
      }
    } else {
      for (size_t i = 0; i < v.size(); ++i) {
        const size_t mark = Enter(i);
        OneSide(v[i], recorded);
        path_.resize(mark);
      }
    }
  }

 private:
  size_t Enter(const std::string& key) {
    const size_t mark = path_.size();
    if (!path_.empty()) path_ += '.';
    path_ += key;
    return mark;
  }
  size_t Enter(size_t index) {
    const size_t mark = path_.size();
    path_ += "[" + std::to_string(index) + "]";
    return mark;
  }
  void CountLeaves(size_t n) {
    leaves_ += n;
    if (leaves_ > kMaxConfigLeaves)
      throw Failure("image.json: more than " + std::to_string(kMaxConfigLeaves) +
                        " leaves in the two configurations, the limit of a comparison",
                    kExitEnvironment);
  }

  Cut& cut_;
  std::string path_;
  size_t leaves_ = 0;
};

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
                                          const nlohmann::json& rebuilt, size_t max_lines,
                                          size_t* more) {
  Cut cut(max_lines);
  ConfigWalk(cut).Both(recorded, rebuilt);
  if (more) *more = cut.more();
  return std::move(cut.lines());
}

namespace {

// (No structured bindings here: a lambda may not capture one before C++20's P1091, which
// clang 15, the fuzz build's compiler, lacks.)
void DiffListings(const LayerListing& recorded, const LayerListing& rebuilt,
                  const std::string& prefix, Cut& cut) {
  for (const auto& item : recorded) {
    const std::string& path = item.first;
    const auto other = rebuilt.find(path);
    if (other == rebuilt.end()) {
      cut.Add([&] { return prefix + Shown(path) + ": only in the recorded image"; });
    } else if (std::string what = EntryDifference(item.second, other->second); !what.empty()) {
      cut.Add([&] { return prefix + Shown(path) + ": " + what; });
    }
  }
  for (const auto& item : rebuilt) {
    const std::string& path = item.first;
    if (!recorded.contains(path))
      cut.Add([&] { return prefix + Shown(path) + ": only in the rebuild"; });
  }
}

// The configurations' lines: at most half of `max_lines`, so the files that differ are seen too.
std::vector<std::string> ConfigLines(const nlohmann::json& a, const nlohmann::json& b,
                                     size_t max_lines) {
  const size_t half = std::max<size_t>(1, max_lines / 2);
  size_t more = 0;
  std::vector<std::string> lines = DiffImageConfigs(a, b, half, &more);
  if (more > 0) {
    more += 1;  // the last kept line makes way for the count
    lines.resize(half - 1);
    lines.push_back("image.json: ... and " + std::to_string(more) + " more field" +
                    (more == 1 ? "" : "s"));
  }
  return lines;
}

}  // namespace

std::vector<std::string> DiffLayerListings(const LayerListing& recorded,
                                           const LayerListing& rebuilt) {
  Cut cut(SIZE_MAX);
  DiffListings(recorded, rebuilt, "", cut);
  return std::move(cut.lines());
}

std::vector<std::string> DescribeImageDifference(const fs::path& recorded, const fs::path& rebuilt,
                                                 const DifferenceLimits& limits) {
  const OciLayoutImage a = ReadOciLayout(recorded), b = ReadOciLayout(rebuilt);
  std::vector<std::string> lines = ConfigLines(a.config, b.config, limits.max_lines);
  Cut cut(limits.max_lines - std::min(limits.max_lines, lines.size()));
  if (a.layers.size() != b.layers.size()) {
    cut.Add([&] {
      return "layers: " + std::to_string(a.layers.size()) + " recorded, " +
             std::to_string(b.layers.size()) + " rebuilt";
    });
  }
  // A layer's uncompressed digest (the config's rootfs.diff_ids) says whether its files can
  // differ; the blob digests also change with the compression alone.
  const std::vector<std::string> ids_a = DiffIds(a.config), ids_b = DiffIds(b.config);
  const size_t n = std::min(a.layers.size(), b.layers.size());
  LayerBudget budget{limits.layer_bytes, limits.all_layers_bytes};
  for (size_t i = 0; i < n && cut.more() == 0; ++i) {
    const bool same =
        a.layer_digests[i] == b.layer_digests[i] ||
        (i < ids_a.size() && i < ids_b.size() && !ids_a[i].empty() && ids_a[i] == ids_b[i]);
    if (same) continue;
    const std::string layer = "layer " + std::to_string(i + 1) + " of " + std::to_string(n) + ": ";
    const LayerListing listed_a = ListLayerFile(a.layers[i], a.layers[i].string(), &budget);
    const LayerListing listed_b = ListLayerFile(b.layers[i], b.layers[i].string(), &budget);
    const size_t before = cut.lines().size() + cut.more();
    DiffListings(listed_a, listed_b, layer, cut);
    if (cut.lines().size() + cut.more() == before)
      cut.Add([&] { return layer + "the same files, differently compressed"; });
  }
  lines.insert(lines.end(), std::make_move_iterator(cut.lines().begin()),
               std::make_move_iterator(cut.lines().end()));
  if (cut.more() > 0)
    lines.push_back("... and at least " + std::to_string(cut.more()) + " more difference" +
                    (cut.more() == 1 ? "" : "s"));
  return lines;
}

}  // namespace trainlock
