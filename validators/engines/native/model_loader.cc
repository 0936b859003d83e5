// Hugging Face model loading; see model_loader.h.
#include "engines/native/model_loader.h"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "base/diagnostic.h"
#include "base/file_stream.h"
#include "base/json_file.h"
#include "base/safe_paths.h"
#include "base/sha256.h"
#include "engines/native/safetensors.h"
#include "run/hub_model_config.h"
#include "support/pinned_files.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

std::string ShapeString(at::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The lock's sha256 of `file` ("" when unpinned or not pinned with a hash).
std::string PinnedSha(const PinnedNames& pinned, const fs::path& file) {
  if (!pinned) return "";
  auto it = pinned->find(file.filename().string());
  return it == pinned->end() ? "" : it->second;
}

// A JSON object from the model directory, parsed within base/json_limits.h's limits from the
// bytes that were hashed and verified against the lock (one read).
nlohmann::json ReadJson(const fs::path& file, const PinnedNames& pinned) {
  std::string text;
  Sha256 hash;
  const uint64_t bytes = StreamRegularFile(file, [&](std::string_view chunk) {
    hash.Update(chunk);
    text.append(chunk);
  });
  if (pinned) VerifyPinned(file.string(), hash.HexDigest(), bytes, PinnedSha(pinned, file));
  std::string problem;
  std::optional<nlohmann::json> j = TryParseJsonText(text, &problem);
  if (!j) throw ModelLoadError(file.string() + ": not a JSON object: " + problem);
  if (!j->is_object()) throw ModelLoadError(file.string() + ": not a JSON object");
  return std::move(*j);
}

// A value for a message: short, one line, no control bytes.
std::string Shown(const nlohmann::json& value) {
  return Quoted(value.dump());
}

// config.json must describe the shape the training config builds.
void CheckConfigJson(const fs::path& file, const ModelConfig& c, const PinnedNames& pinned) {
  nlohmann::json j = ReadJson(file, pinned);
  auto is_int64 = [](const nlohmann::json& v) {
    return v.is_number_integer() &&
           !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX});
  };
  auto expect = [&](const char* key, int64_t want, int64_t fallback) {
    if (j.contains(key) && !is_int64(j[key])) {
      throw ModelLoadError(file.string() + ": " + key + " must be an integer, not " +
                           Shown(j[key]));
    }
    int64_t got = j.contains(key) ? j[key].get<int64_t>() : fallback;
    if (got != want) {
      throw ModelLoadError(file.string() + ": " + key + " is " + std::to_string(got) +
                           " but the training config builds " + std::to_string(want));
    }
  };
  expect("hidden_size", c.hidden_size, -1);
  expect("num_hidden_layers", c.num_layers, -1);
  expect("num_attention_heads", c.num_heads, -1);
  expect("num_key_value_heads", c.num_kv_heads, j.value("num_attention_heads", int64_t{-1}));
  expect("intermediate_size", c.intermediate_size, -1);
  expect("vocab_size", c.vocab_size, -1);
  if (j.contains("tie_word_embeddings") && !j["tie_word_embeddings"].is_boolean()) {
    throw ModelLoadError(file.string() + ": tie_word_embeddings must be true or false, not " +
                         Shown(j["tie_word_embeddings"]));
  }
  // RoPE is part of what the weights mean: honoured or refused, never ignored. The training
  // config carries it (rope_theta, rope_scaling), read as `trainlock init` and `check` read it.
  const double theta = j.contains("rope_theta") && j["rope_theta"].is_number()
                           ? j["rope_theta"].get<double>()
                           : 10000.0;
  if (theta != c.rope_theta) {
    throw ModelLoadError(file.string() + ": rope_theta is " + NumberText(theta) +
                         " but the training config says rope_theta: " + NumberText(c.rope_theta));
  }
  std::string scaling;
  if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) {
    const nlohmann::json& r = j["rope_scaling"];
    scaling = r.contains("rope_type") && r["rope_type"].is_string()
                  ? r["rope_type"].get<std::string>()
              : r.contains("type") && r["type"].is_string() ? r["type"].get<std::string>()
                                                            : "";
    if (scaling == "default") scaling.clear();
  }
  if (scaling != c.rope_scaling.type) {
    throw ModelLoadError(file.string() + ": rope_scaling is " +
                         (scaling.empty() ? "none" : scaling) +
                         " but the training config's model.rope_scaling is " +
                         (c.rope_scaling.type.empty() ? "none" : c.rope_scaling.type));
  }
  bool tied = j.value("tie_word_embeddings", false);
  if (tied != c.tie_embeddings) {
    throw ModelLoadError(
        file.string() + ": tie_word_embeddings is " + (tied ? "true" : "false") +
        " but the training config says tie_embeddings: " + (c.tie_embeddings ? "true" : "false"));
  }
}

// The shard files and, for a sharded model, which file the index says holds each tensor.
std::vector<fs::path> ShardFiles(const fs::path& dir, const PinnedNames& pinned,
                                 std::map<std::string, std::string>* index) {
  auto is_pinned = [&](const std::string& name) { return !pinned || pinned->contains(name); };
  fs::path index_file = dir / "model.safetensors.index.json";
  std::vector<fs::path> files;
  if (fs::exists(index_file) && is_pinned(index_file.filename().string())) {
    nlohmann::json j = ReadJson(index_file, pinned);
    if (!j["weight_map"].is_object()) throw ModelLoadError(index_file.string() + ": no weight_map");
    std::set<std::string> names;
    for (auto& [tensor, file] : j["weight_map"].items()) {
      if (!file.is_string())
        throw ModelLoadError(index_file.string() + ": weight_map values must be file names");
      (*index)[tensor] = file.get<std::string>();
      names.insert(file.get<std::string>());
    }
    for (const std::string& n : names) {
      if (!IsPlainFileName(n))
        throw ModelLoadError(index_file.string() + ": shard " + Quoted(n) + " is not a file name");
      if (!fs::is_regular_file(dir / n)) {
        throw ModelLoadError(index_file.string() + ": shard '" + n + "' is missing");
      }
      if (!is_pinned(n)) {
        throw ModelLoadError(index_file.string() + ": shard '" + n +
                             "' is not pinned by the lock; add it to the model's files and "
                             "re-lock");
      }
      files.push_back(dir / n);
    }
    return files;
  }
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".safetensors" && is_pinned(e.path().filename().string()))
      files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw ModelLoadError(dir.string() + (pinned ? ": the lock pins no *.safetensors file"
                                                : ": no *.safetensors files"));
  return files;
}

bool Ignorable(const std::string& name, bool tied) {
  return name.ends_with(".rotary_emb.inv_freq") || (tied && name == "lm_head.weight");
}

}  // namespace

LoadedWeights LoadHfWeights(Llama& model, const fs::path& dir, const PinnedNames& pinned) {
  const ModelConfig& c = model->config();
  // Every file the lock pins is read, or the run is refused: one missing (config.json, a shard)
  // would otherwise be passed over and the run would train on what the lock does not pin.
  if (pinned) {
    for (const auto& [name, sha256] : *pinned) {
      if (!fs::is_regular_file(dir / name))
        throw ModelLoadError((dir / name).string() + ": pinned by the lock, not on this node");
    }
  }
  if (fs::exists(dir / "config.json") && (!pinned || pinned->contains("config.json")))
    CheckConfigJson(dir / "config.json", c, pinned);
  std::map<std::string, std::string> index;
  std::vector<fs::path> files = ShardFiles(dir, pinned, &index);

  std::map<std::string, std::pair<torch::Tensor, std::string>> found;  // name -> tensor, file
  LoadedWeights info;
  std::set<std::string> dtypes;
  for (const fs::path& file : files) {
    std::map<std::string, torch::Tensor> tensors;
    try {
      tensors = ReadHashedSafetensors(file, [&](const std::string& sha256, uint64_t bytes) {
        if (pinned) VerifyPinned(file.string(), sha256, bytes, PinnedSha(pinned, file));
      });
    } catch (const SafetensorsError& e) {
      throw ModelLoadError(e.what());
    }
    for (auto& [name, tensor] : tensors) {
      if (!index.empty() && index.count(name) && index[name] != file.filename().string()) {
        throw ModelLoadError(file.string() + ": tensor '" + name + "' is indexed in '" +
                             index[name] + "'");
      }
      if (found.count(name)) {
        throw ModelLoadError(file.string() + ": tensor '" + name + "' also appears in " +
                             found[name].second);
      }
      found[name] = {tensor, file.string()};
    }
    info.files.push_back(file.filename().string());
  }
  for (const auto& [name, file] : index) {
    if (!found.count(name)) {
      throw ModelLoadError((dir / file).string() + ": lacks tensor '" + name +
                           "' named by the index");
    }
  }

  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  for (auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    auto it = found.find(name);
    if (it == found.end()) {
      throw ModelLoadError(dir.string() + ": missing tensor '" + name +
                           "' (the model has it; no file holds it)");
    }
    const auto& [tensor, file] = it->second;
    if (!at::isFloatingType(tensor.scalar_type()) || tensor.scalar_type() == at::kDouble) {
      throw ModelLoadError(file + ": tensor '" + name + "' has dtype " +
                           SafetensorsDtype(tensor.scalar_type()) + "; expected F32, F16 or BF16");
    }
    if (tensor.sizes() != item.value().sizes()) {
      throw ModelLoadError(file + ": tensor '" + name + "' has shape " +
                           ShapeString(tensor.sizes()) + " but the model expects " +
                           ShapeString(item.value().sizes()));
    }
    item.value().copy_(tensor);
    dtypes.insert(SafetensorsDtype(tensor.scalar_type()));
    used.insert(name);
    ++info.tensors;
  }
  for (const auto& [name, entry] : found) {
    if (!used.count(name) && !Ignorable(name, c.tie_embeddings)) {
      throw ModelLoadError(entry.second + ": unexpected tensor '" + name +
                           "' (not part of the model the training config builds)");
    }
  }
  for (const std::string& d : dtypes) info.dtypes += (info.dtypes.empty() ? "" : ",") + d;
  return info;
}

}  // namespace trainlock::validate
