// The engine protocol's fold; see engine_transcript.h.
#include "support/engine_transcript.h"

#include <algorithm>
#include <cmath>

#include "base/json_file.h"
#include "base/version.h"
#include "project/validate_defaults.h"
#include "report/check_metrics.h"
#include "support/engine_protocol.h"

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

// A text member as the engine said it, for a message: quoted, or null when it said none.
std::string Said(const std::optional<std::string>& text) {
  return text ? nlohmann::json(*text).dump() : "null";
}

// The first number in `value` (at `where`) that is not finite or outside the protocol's range,
// described; "" when every number is in range.
std::string NumberOutOfRange(const nlohmann::json& value, const std::string& where) {
  if (value.is_structured()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string member = value.is_object() ? it.key() : "[]";
      if (std::string why = NumberOutOfRange(*it, where + "." + member); !why.empty()) return why;
    }
    return "";
  }
  if (!value.is_number()) return "";
  const double x = value.get<double>();
  const bool unknown_bytes =
      x == -1 && where.size() > 6 && where.compare(where.size() - 6, 6, "_bytes") == 0;
  if (std::isfinite(x) && ((x >= 0 && x <= kMaxEngineNumber) || unknown_bytes)) return "";
  return where + " is " + value.dump() + ", not a finite number in [0, 1e18]";
}

// The release a framework's version names: a distribution's source build of 1.13.0 says
// "1.13.0a0" (Debian's python3-torch); the pre-release marker goes, a local label stays.
std::optional<Version> FrameworkRelease(const std::string& text) {
  const size_t plus = text.find('+');
  std::string release = text.substr(0, plus);
  const size_t marker = release.find_first_not_of("0123456789.");
  if (marker != std::string::npos) release.erase(marker);
  return ParseVersion(release + (plus == std::string::npos ? "" : text.substr(plus)));
}

}  // namespace

void EngineTranscript::Violate(const std::string& why) {
  if (violation_.empty()) violation_ = why;
}

void EngineTranscript::End(bool exited_cleanly) {
  if (!expect_) return;
  if (!hello_ && !result_.error) return Violate("the engine never said hello");
  const bool ended = result_.done || result_.error;
  if (exited_cleanly && !ended) Violate("the engine exited without done or error");
  if (result_.done && expect_ && (!world_said_ || (!torch_said_ && !expect_->torch.empty())))
    Violate("the engine's hello named no world size or torch version, yet it said done");
}

// Whether the hello is the protocol's and, when the lock's expectation is known, the lock's
// engine, torch and world size. A refusal's hello (cli.py) may leave the world size and the
// versions null: End() then refuses a `done`.
bool EngineTranscript::CheckHello(const nlohmann::json& body) {
  if (!expect_) return true;
  const HelloEvent hello = ReadMetrics<HelloEvent>(body);
  if (hello.protocol != kEngineProtocol) {
    Violate("the engine's hello speaks " + Said(hello.protocol) + ", not " + kEngineProtocol);
    return false;
  }
  if (hello.engine != expect_->engine) {
    Violate("the engine's hello names engine " + Said(hello.engine) + ", the lock's is " +
            expect_->engine);
    return false;
  }
  world_said_ = hello.world_size.has_value();
  if (world_said_ && hello.world_size != expect_->world_size) {
    Violate("the engine's hello names world size " + std::to_string(*hello.world_size) +
            ", this process runs " + std::to_string(expect_->world_size));
    return false;
  }
  const nlohmann::json versions = hello.versions.value_or(nlohmann::json::object());
  const nlohmann::json torch =
      versions.is_object() ? versions.value("torch", nlohmann::json()) : nlohmann::json();
  torch_said_ = torch.is_string();
  if (expect_->torch.empty() || torch.is_null()) return true;
  const std::optional<Version> have =
      torch.is_string() ? FrameworkRelease(torch.get<std::string>()) : std::nullopt;
  for (const std::string& pinned : expect_->torch) {
    const std::optional<Version> want = ParseVersion(pinned);
    if (have && want && *have == *want) return true;
  }
  Violate("the engine's hello names torch " + torch.dump() + ", the lock pins " +
          expect_->torch.front());
  return false;
}

void EngineTranscript::Problem(const std::string& why) {
  if (result_.ignored_lines++ == 0) result_.first_ignored = why;
}

std::string EngineTranscript::Add(std::string_view line) {
  const uint64_t at = offset_;
  offset_ += line.size() + 1;
  if (++lines_ > kMaxEngineLines) {
    Violate("more than " + std::to_string(kMaxEngineLines) + " lines on its stdout");
    return "";
  }
  if (line.size() > kMaxEngineLineBytes) {  // whatever it holds: the reader stops here
    Violate("a line longer than " + std::to_string(kMaxEngineLineBytes) + " bytes at byte offset " +
            std::to_string(at) + " of its stdout");
    return "";
  }
  if (line.empty() || line.front() != '{') return "";  // not an event: a library's print
  if (events_ >= kMaxEngineEvents) {
    Violate("more than " + std::to_string(kMaxEngineEvents) + " events");
    return "";
  }
  std::string why;
  std::optional<nlohmann::json> parsed = TryParseJsonText(line, &why);
  if (!parsed || !parsed->is_object()) {
    Problem(parsed ? "a JSON line that is not an object" : "a line that is not JSON: " + why);
    return "";
  }
  nlohmann::json body = std::move(*parsed);
  const nlohmann::json event = Take(body, kEventMember);
  if (!event.is_string()) {
    Problem("a JSON line without an \"event\" name");
    return "";
  }
  ++events_;
  const std::string name = event.get<std::string>();
  if (const std::string range = NumberOutOfRange(body, name); !range.empty()) {
    Violate("the engine's " + range);
    return "";
  }
  // Before hello only a failure may be said: an error and the pinned files read before it (the
  // native worker reports a mismatching pinned file that way).
  if (expect_ && !hello_ && name != kEventHello && name != kEventError && name != kEventArtifact) {
    Violate("the engine's event " + nlohmann::json(name).dump() + " came before its hello");
    return "";
  }
  Fold(name, body);
  return name;
}

void EngineTranscript::Fold(const std::string& event, const nlohmann::json& body) {
  EngineFold& r = result_;
  if (event == kEventHello) {
    if (hello_ && expect_) return Violate("the engine said hello twice");
    hello_ = true;
    if (!CheckHello(body)) return;
    r.hello = ReadMetrics<HelloEvent>(body);
    // The device it trains on names train.step's device members.
    r.said.device = r.hello->device;
    r.said.device_name = r.hello->device_name;
  } else if (event == kEventArtifact) {
    if (artifacts_ == kMaxEngineArtifacts)
      return Violate("more than " + std::to_string(kMaxEngineArtifacts) + " artifact events");
    if (body.dump().size() > kMaxEngineArtifactBytes)
      return Violate("an artifact event longer than " + std::to_string(kMaxEngineArtifactBytes) +
                     " bytes");
    ArtifactRow row = ReadMetrics<ArtifactRow>(body);
    row.verified_by = "worker";  // the engine process hashed what it read (the protocol's rule)
    ++artifacts_;
    if (!r.said.artifacts) r.said.artifacts.emplace();
    r.said.artifacts->push_back(std::move(row));
  } else if (event == kEventSetup) {
    const SetupEvent said = ReadMetrics<SetupEvent>(body);
    if (said.data) r.said.data = said.data;
    if (said.model) r.said.model = said.model;
    r.setup_s = said.seconds;
  } else if (event == kEventRestored) {
    r.restore = ReadMetrics<RestoredEvent>(body);
  } else if (event == kEventStep) {
    StepEvent said = ReadMetrics<StepEvent>(body);
    const nlohmann::json loss = said.loss.value_or(nullptr);
    if (!said.step || !(loss.is_number() || loss.is_null()))
      return Problem("a step event without an integer step and a numeric loss");
    said.loss = loss;
    r.losses.push_back(std::move(said));
  } else if (event == kEventMeasurement) {
    r.measurement = ReadMetrics<TrainStepMetrics>(body);
  } else if (event == kEventCheckpoint) {
    const CheckpointEvent said = ReadMetrics<CheckpointEvent>(body);
    if (said.phase == "started") {
      last_started_ = said.step;
      r.save_started = said;
    } else if (said.phase == "committed") {
      last_committed_ = said.step;
      r.save = said;
    } else if (said.phase == "held") {
      last_held_ = said.step;
      r.save_held = said;
    } else if (said.phase == "steady") {
      if (r.steady_saves.size() == kMaxSteadySaves)
        return Violate("more than " + std::to_string(kMaxSteadySaves) + " steady-state saves");
      r.steady_saves.push_back(said);
    } else {
      Problem(
          "a checkpoint event whose phase is not \"started\", \"held\", \"committed\" or "
          "\"steady\"");
    }
  } else if (event == kEventEval) {
    const EvalEvent said = ReadMetrics<EvalEvent>(body);
    if (!said.loss)
      Problem("an eval event without a numeric loss");
    else if (said.when == "after_save") {
      r.eval_after_save = said.loss;
      if (said.step) r.eval_after_save_at[*said.step] = *said.loss;
    } else if (said.when == "after_restore")
      r.eval_after_restore = said.loss;
    else if (said.when == "portable")
      r.eval = said.loss;
    else
      Problem("an eval event of an unknown \"when\"");
  } else if (event == kEventState) {
    // Only where the state went and its size: the coordinator digests the file itself
    // (coordinator/state_file.h), so digests an engine adds are not read.
    StateEvent said = ReadMetrics<StateEvent>(body);
    said.step.reset();
    r.final_state = said;
  } else if (event == kEventError) {
    // The checks read a kind and a one-line message: an engine's error always has both.
    ErrorEvent said = ReadMetrics<ErrorEvent>(body);
    if (!said.kind) said.kind = "training";
    if (!said.message) said.message = "the engine reported an error without a message";
    r.error = said;
  } else if (event == kEventDone) {
    r.done = true;
  } else {
    Problem("an unknown event " + nlohmann::json(event).dump());
  }
}

std::optional<int64_t> EngineTranscript::LastCheckpoint(std::string_view phase) const {
  if (phase == "held") return last_held_;
  return phase == "started" ? last_started_ : last_committed_;
}

}  // namespace trainlock::validate
