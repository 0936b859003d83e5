// What the round trip's processes did: the value roundtrip.cc's plan fills as it runs
// processes A to E (each collected by engine_process.h), and the only thing roundtrip_checks.h's
// checks judge (with the options and the config the processes ran with).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "coordinator/checkpoint_verify.h"
#include "coordinator/state_file.h"
#include "report/check_metrics.h"
#include "support/engine_fold.h"

namespace trainlock::validate {

// One process of the round trip, as the runner saw it.
struct WorkerRun {
  std::string name;
  int pid = -1;
  std::optional<int> exit_code;       // nullopt: timed out
  EngineFold result;                  // what it said (its error, when it broke the protocol)
  std::filesystem::path stderr_file;  // where the coordinator kept its stderr
  std::string stderr_tail;            // that file's last lines
  bool killed_by_us = false;
  uint64_t peak_rss_bytes = 0;                                // sampled while it ran
  std::optional<uint64_t> oom_kills_before, oom_kills_after;  // the cgroup's OOM-killer count
  double seconds = 0;                                         // from its start to its end
  // Seconds from the round trip's start until it was spawned, released (its clock's start:
  // the same as spawned unless it was started ahead of its turn) and its output ended.
  double spawned_s = 0, started_s = 0, ended_s = 0;
  // Its final state, as this process read it from the file it told the engine to write.
  std::optional<StateDigest> state;
  std::filesystem::path state_file;  // that file while it is kept (small enough to diff)
  // Seconds from its start to the first event of each name: where a process's time goes
  // (interpreter and imports before `hello`, the model and restore before the first `step`).
  nlohmann::json first_event_s = nlohmann::json::object();
};

// Why no process of a round trip ran: it was refused before any started.
struct RoundtripRefusal {
  enum class Why { kEngineFiles, kPinnedFileOutside };
  Why why = Why::kEngineFiles;
  std::string message;  // the refusal; for a pinned file "PATH: WHY"
};

// Every process of one round trip. Nothing ran when `refused`; B, C and D are empty when A's
// run decided the verdict alone (`decided_by_a`, roundtrip_checks.h's DecidedByA); C and D are
// empty (never started) when B's checkpoint did not verify; E ran only for --reshard-to with
// train.roundtrip selected.
struct RoundtripRuns {
  std::optional<RoundtripRefusal> refused;
  bool decided_by_a = false;
  std::filesystem::path python;  // the interpreter a Python engine ran under
  WorkerRun a, b, c, d;
  // B's checkpoint as the coordinator read it once B ended, before C or D was released
  // (checkpoint_verify.h); nullopt when B announced no committed checkpoint.
  std::optional<VerifiedCheckpoint> checkpoint;
  std::optional<WorkerRun> e;
  double a_s = 0, b_s = 0, e_s = 0;  // wall times; B's includes its waiting for the kill
  bool beside = false;               // C and D ran side by side
  bool beside_end = false;           // D started once C had trained its last step
  // Where the final states were written (state_dir.h): "memory", "option" or "work-dir", and
  // why not in memory when they were not.
  std::string states_in, states_not_in_memory;
  TelemetryMetrics telemetry;  // NVML's samples while the processes trained
};

}  // namespace trainlock::validate
