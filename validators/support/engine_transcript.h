// What an engine process said, in the engine protocol (`trainlock.engine/1`, docs/validate.md
// "The engine protocol"): JSON lines on its stdout, folded into one typed value (EngineFold)
// that the round trip's checks read, whatever engine ran. The engine's output is untrusted: lines
// (how many, and each one's length) and events are capped, a line that is not a JSON object with a
// known "event" is counted and ignored, and members the checks read are read tolerantly by them
// (support/engine_events.h). What would make a result count that is not the lock's run is a
// violation instead, which fails the process's result: an event before `hello`, a hello that is not
// the protocol's or not the lock's engine, framework or world size, a number that is not finite or
// out of range, more lines, events or artifacts than the caps, a line longer than
// kMaxEngineLineBytes (named with its byte offset: the reader stops there rather than discard an
// endless line), an exit without `done` or `error`.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/check_metrics.h"
#include "support/engine_fold.h"

namespace trainlock::validate {

inline constexpr size_t kMaxEngineEvents = 100000;
// Lines of any kind (events, blank lines, lines that are not JSON or not an event) one process
// may write on stdout: twice the event cap. The engines write events alone there (the Python
// Emitter points fd 1 at stderr; the native worker prints nothing else), one `step` per step and
// a few dozen others, so only a flood of lines that are not events comes near it.
inline constexpr size_t kMaxEngineLines = 2 * kMaxEngineEvents;
inline constexpr size_t kMaxEngineArtifacts = 4096;
inline constexpr size_t kMaxEngineArtifactBytes = 8192;  // one artifact event, serialized
// Every number an event carries: finite and within [0, kMaxEngineNumber]; a member named
// *_bytes may also be -1 (the protocol's "unknown", a CPU's device memory).
inline constexpr double kMaxEngineNumber = 1e18;

// What the lock says the engine's hello must say (docs/validate.md, "The engine protocol").
struct EngineExpectation {
  std::string engine;              // the lock's validate.engine
  std::vector<std::string> torch;  // the torch versions the lock's targets pin; empty: unchecked
  int64_t world_size = 1;          // this process's --nproc
};

class EngineTranscript {
 public:
  // Without an expectation the fold checks numbers and caps only (the fold's own tests); the
  // coordinator always gives one, and then the hello rules hold too.
  EngineTranscript() = default;
  explicit EngineTranscript(EngineExpectation expect) : expect_(std::move(expect)) {}

  // Folds one stdout line in (without its newline; a reader that cuts a long line hands over
  // more than kMaxEngineLineBytes of it, which is a violation); returns the event's name ("" for
  // a line that is not an event).
  std::string Add(std::string_view line);

  // What the process said so far.
  const EngineFold& result() const { return result_; }

  // The step of the last checkpoint event of `phase` ("started", "held", "committed"); nullopt
  // if none.
  std::optional<int64_t> LastCheckpoint(std::string_view phase) const;

  // After the process's output ended: without `hello`, or (when `exited_cleanly`, neither
  // killed nor timed out nor failed) without `done` or `error`, the transcript is a violation.
  void End(bool exited_cleanly);
  // Records a violation found outside the events (a cap on the output's bytes).
  void Violate(const std::string& why);
  // The first violation, "" when none: the process's result must not count.
  const std::string& violation() const { return violation_; }

 private:
  void Fold(const std::string& event, const nlohmann::json& body);
  void Problem(const std::string& why);
  bool CheckHello(const nlohmann::json& body);

  std::optional<EngineExpectation> expect_;
  std::string violation_;
  bool hello_ = false, world_said_ = false, torch_said_ = false;
  EngineFold result_;
  size_t lines_ = 0;
  uint64_t offset_ = 0;  // bytes of stdout before the next line
  size_t events_ = 0;
  size_t artifacts_ = 0;
  std::optional<int64_t> last_started_, last_committed_, last_held_;
};

}  // namespace trainlock::validate
