// The engine protocol's fold; see engine_transcript.h.
#include "support/engine_transcript.h"

#include <algorithm>

#include "base/json_file.h"
#include "report/check_metrics.h"

namespace trainlock::validate {
namespace {

// The value of `member` in `body`, removed from it; null when absent.
nlohmann::json Take(nlohmann::json& body, const char* member) {
  auto it = body.find(member);
  if (it == body.end()) return nullptr;
  nlohmann::json value = std::move(*it);
  body.erase(it);
  return value;
}

std::optional<int64_t> IntegerMember(const nlohmann::json& body, const char* member) {
  auto it = body.find(member);
  if (it == body.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

}  // namespace

void EngineTranscript::Problem(const std::string& why) {
  nlohmann::json& p = result_["protocol_warnings"];
  if (!p.is_object()) p = {{"ignored_lines", 0}, {"first", why}};
  p["ignored_lines"] = p["ignored_lines"].get<int64_t>() + 1;
}

std::string EngineTranscript::Add(std::string_view line) {
  if (line.empty() || line.front() != '{') return "";  // not an event: a library's print
  if (line.size() > kMaxEngineLineBytes) {
    Problem("a line longer than " + std::to_string(kMaxEngineLineBytes) + " bytes");
    return "";
  }
  if (events_ >= kMaxEngineEvents) {
    Problem("more than " + std::to_string(kMaxEngineEvents) + " events");
    return "";
  }
  std::string why;
  std::optional<nlohmann::json> parsed = TryParseJsonText(line, &why);
  if (!parsed || !parsed->is_object()) {
    Problem(parsed ? "a JSON line that is not an object" : "a line that is not JSON: " + why);
    return "";
  }
  nlohmann::json body = std::move(*parsed);
  const nlohmann::json event = Take(body, "event");
  if (!event.is_string()) {
    Problem("a JSON line without an \"event\" name");
    return "";
  }
  ++events_;
  const std::string name = event.get<std::string>();
  Fold(name, body);
  return name;
}

void EngineTranscript::Fold(const std::string& event, nlohmann::json& body) {
  nlohmann::json& r = result_;
  if (event == "hello") {
    // The device it trains on names train.step's device members.
    const auto said = ReadMetrics<TrainStepMetrics>(body);
    TrainStepMetrics where;
    where.device = said.device;
    where.device_name = said.device_name;
    AddMetrics(&r, ToJson(where));
    r["hello"] = std::move(body);
  } else if (event == "artifact") {
    ArtifactRow row = ReadMetrics<ArtifactRow>(body);
    row.verified_by = "worker";  // the engine process hashed what it read (the protocol's rule)
    artifacts_.push_back(std::move(row));
    TrainStepMetrics pinned;
    pinned.artifacts = artifacts_;
    AddMetrics(&r, ToJson(pinned));
  } else if (event == "setup") {
    const auto said = ReadMetrics<TrainStepMetrics>(body);
    TrainStepMetrics made;
    made.data = said.data;
    made.model = said.model;
    AddMetrics(&r, ToJson(made));
    r["setup_s"] = Take(body, "seconds");
  } else if (event == "restored") {
    r["restore"] = std::move(body);
  } else if (event == "step") {
    nlohmann::json step = Take(body, "step"), loss = Take(body, "loss");
    if (!step.is_number_integer() || !(loss.is_number() || loss.is_null())) {
      Problem("a step event without an integer step and a numeric loss");
      return;
    }
    nlohmann::json& losses = r["losses"];
    if (!losses.is_array()) losses = nlohmann::json::array();
    losses.push_back({{"step", step}, {"loss", loss}});
  } else if (event == "measurement") {
    r["measurement"] = std::move(body);
  } else if (event == "checkpoint") {
    const nlohmann::json phase = body.value("phase", nlohmann::json());
    if (phase == "started") {
      last_started_ = IntegerMember(body, "step");
      r["save_started"] = std::move(body);
    } else if (phase == "committed") {
      last_committed_ = IntegerMember(body, "step");
      r["save"] = std::move(body);
    } else {
      Problem("a checkpoint event whose phase is neither \"started\" nor \"committed\"");
    }
  } else if (event == "eval") {
    const nlohmann::json when = Take(body, "when");
    const nlohmann::json loss = Take(body, "loss");
    if (!loss.is_number())
      Problem("an eval event without a numeric loss");
    else if (when == "after_save")
      r["eval_after_save"] = loss;
    else if (when == "after_restore")
      r["eval_after_restore"] = loss;
    else if (when == "portable")
      r["eval"] = loss;
    else
      Problem("an eval event of an unknown \"when\"");
  } else if (event == "state") {
    nlohmann::json digests = Take(body, "digests");
    const bool strings =
        digests.is_object() && std::all_of(digests.begin(), digests.end(),
                                           [](const nlohmann::json& d) { return d.is_string(); });
    if (!strings) {
      Problem("a state event whose digests are not an object of strings");
      return;
    }
    r["final_state"] = {{"fingerprints", std::move(digests)}, {"bytes", Take(body, "bytes")}};
    if (const nlohmann::json file = Take(body, "file"); file.is_string())
      r["final_state"]["file"] = file;
  } else if (event == "error") {
    // The checks read a kind and a one-line message: an engine's error always has both.
    const nlohmann::json kind = body.value("kind", nlohmann::json());
    const nlohmann::json message = body.value("message", nlohmann::json());
    if (!kind.is_string()) body["kind"] = "training";
    if (!message.is_string()) body["message"] = "the engine reported an error without a message";
    r["error"] = std::move(body);
  } else if (event == "done") {
    r["done"] = true;
  } else {
    Problem("an unknown event " + nlohmann::json(event).dump());
  }
}

std::optional<int64_t> EngineTranscript::LastCheckpoint(std::string_view phase) const {
  return phase == "started" ? last_started_ : last_committed_;
}

}  // namespace trainlock::validate
