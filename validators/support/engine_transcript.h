// What an engine process said, in the engine protocol (`trainlock.engine/1`, docs/validate.md
// "The engine protocol"): JSON lines on its stdout, folded into one result object that the
// round trip's checks read, whatever engine ran. The engine's output is untrusted: lines and
// events are capped, a line that is not a JSON object with a known "event" is counted and
// ignored, and members the checks read are read tolerantly by them (report/check_metrics.h).
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/check_metrics.h"

namespace trainlock::validate {

inline constexpr const char* kEngineProtocol = "trainlock.engine/1";
inline constexpr size_t kMaxEngineLineBytes = size_t{1} << 20;
inline constexpr size_t kMaxEngineEvents = 100000;

class EngineTranscript {
 public:
  // Folds one stdout line in; returns the event's name ("" for a line that is not an event).
  std::string Add(std::string_view line);

  // The fold, under the members the round trip's checks read: "hello", "losses" [{step,
  // loss}], "restore", "save" (the committed checkpoint), "save_started" (the last save begun),
  // "measurement", "eval_after_save", "eval_after_restore", "eval", "final_state"
  // {fingerprints, bytes, file}, "error", "done", train.step's device, data, model and
  // artifacts members, and "protocol_warnings" (lines ignored, with the first reason).
  const nlohmann::json& result() const { return result_; }

  // The step of the last checkpoint event of `phase` ("started", "committed"); nullopt if none.
  std::optional<int64_t> LastCheckpoint(std::string_view phase) const;

 private:
  void Fold(const std::string& event, nlohmann::json& body);
  void Problem(const std::string& why);

  nlohmann::json result_ = nlohmann::json::object();
  size_t events_ = 0;
  std::vector<ArtifactRow> artifacts_;
  std::optional<int64_t> last_started_, last_committed_;
};

}  // namespace trainlock::validate
