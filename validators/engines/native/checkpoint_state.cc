// A checkpoint's run state, checked before use (see checkpoint_state.h).
#include "engines/native/checkpoint_state.h"

#include <algorithm>

#include "base/diagnostic.h"
#include "base/failure.h"
#include "engines/native/checkpoint_manifest.h"
#include "project/train_config.h"

namespace trainlock::validate {

namespace {

bool AllStrings(const nlohmann::json& list) {
  return list.is_array() &&
         std::all_of(list.begin(), list.end(), [](const auto& item) { return item.is_string(); });
}

std::string ShardsProblem(const nlohmann::json& data) {
  const nlohmann::json width = data.value("bytes_per_token", nlohmann::json());
  if (width != 2 && width != 4) return "state.data.bytes_per_token is not 2 or 4";
  const nlohmann::json files = data.value("files", nlohmann::json());
  if (!AllStrings(files) || files.empty()) return "state.data.files is not a list of file names";
  if (data.contains("sha256") && !AllStrings(data["sha256"]))
    return "state.data.sha256 is not a list of hashes";
  return "";
}

std::string SyntheticProblem(const nlohmann::json& data, int64_t seq_len) {
  const nlohmann::json length = data.value("length", nlohmann::json());
  if (!length.is_number_unsigned() || length.get<uint64_t>() < 2)
    return "state.data.length is not an integer of at least 2";
  if (!data.value("seed", nlohmann::json()).is_number_unsigned())
    return "state.data.seed is not a non-negative integer";
  if ((length.get<uint64_t>() - 1) / static_cast<uint64_t>(seq_len) > kMaxDataWindows)
    return "state.data.length " + std::to_string(length.get<uint64_t>()) + " is over " +
           std::to_string(kMaxDataWindows) + " windows of seq_len " + std::to_string(seq_len);
  return "";
}

// The member `key` of `state` when it has the type `is` accepts; throws naming it otherwise.
const nlohmann::json& Member(const nlohmann::json& state, const char* key,
                             bool (nlohmann::json::*is)() const noexcept, const char* type,
                             const std::string& manifest_path) {
  const auto it = state.find(key);
  if (it == state.end() || !((*it).*is)())
    throw CheckpointError(manifest_path + ": state." + key + " is not " + type);
  return *it;
}

}  // namespace

std::string CheckpointDataProblem(const nlohmann::json& data, int64_t seq_len,
                                  int64_t eval_batches) {
  if (!data.is_object()) return "state.data is not an object";
  if (eval_batches < 1 || eval_batches > (int64_t{1} << 20))
    return "state.eval_batches is not in [1, 2^20]";
  if (seq_len < 1) return "the config's seq_len is not positive";
  const nlohmann::json kind = data.value("kind", nlohmann::json());
  if (kind == "shards") return ShardsProblem(data);
  if (kind == "synthetic") return SyntheticProblem(data, seq_len);
  return "state.data.kind is not \"shards\" or \"synthetic\"";
}

CheckpointRunState ReadCheckpointRunState(const nlohmann::json& state,
                                          const std::string& manifest_path) {
  if (!state.is_object()) throw CheckpointError(manifest_path + ": state is not an object");
  CheckpointRunState s;
  s.config_yaml =
      Member(state, "config_yaml", &nlohmann::json::is_string, "a string", manifest_path)
          .get<std::string>();
  try {
    s.config = LoadTrainConfig(s.config_yaml, "checkpoint manifest.json (config_yaml)");
  } catch (const InputError& e) {
    throw CheckpointError(manifest_path + ": state.config_yaml is refused: " + e.what());
  }
  s.seed = Member(state, "seed", &nlohmann::json::is_number_unsigned, "a non-negative integer",
                  manifest_path)
               .get<uint64_t>();
  const nlohmann::json& eval = Member(state, "eval_batches", &nlohmann::json::is_number_integer,
                                      "an integer", manifest_path);
  s.eval_batches = eval.is_number_unsigned() && eval.get<uint64_t>() > (uint64_t{1} << 20)
                       ? -1
                       : eval.get<int64_t>();
  s.data = state.value("data", nlohmann::json());
  const std::string problem =
      CheckpointDataProblem(s.data, s.config.training.seq_len, s.eval_batches);
  if (!problem.empty()) throw CheckpointError(manifest_path + ": " + problem);
  return s;
}

}  // namespace trainlock::validate
