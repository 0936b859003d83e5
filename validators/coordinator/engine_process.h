// One engine process of the round trip, as process mechanics and nothing more: started from its
// command (engine_command.h), held ahead of its turn and released, watched one slice at a time
// as its events come (its output and stderr capped, every line kept in its event log beside the
// results, SIGKILLed where the caller's preemption predicate says), and collected into a
// WorkerRun (roundtrip_runs.h) with the final state it was told to write digested here. Which
// processes run, with which options, in which order, and when one is preempted is the plan's
// (roundtrip.cc); what they prove is the judges' (roundtrip_checks.h). Nothing here knows A to E.
//
// It lives in coordinator/, not support/: it fills the coordinator's WorkerRun, digests states
// with coordinator/state_file.h, starts an EngineLaunch (coordinator/engine_command.h) and samples
// memory with probes/host_memory.h, and support/ may include none of them.
#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "coordinator/engine_command.h"
#include "coordinator/roundtrip_runs.h"
#include "probes/host_memory.h"
#include "support/engine_transcript.h"
#include "support/worker_process.h"

namespace trainlock::validate {

// What every process of one round trip shares.
struct EngineProcessSettings {
  std::filesystem::path work_dir;  // each process's <name>.stderr and <name>.jsonl
  int timeout_s = 900;             // per process, counted from its release
  std::string device;              // "cpu": it trains on no GPU (so it may get a PID namespace)
  std::chrono::steady_clock::time_point epoch;  // the round trip's start: what times count from
};

// One process to start.
struct EngineStart {
  std::string name;  // its name in the report and of its files
  EngineLaunch command;
  EngineExpectation expectation;  // what its hello must say
  // The state file its command tells it to write (--final-state), digested when it is collected
  // unless the plan digests it itself (DigestFinalState) beside the next process.
  std::optional<std::filesystem::path> final_state;
  bool digest_state_later = false;
  // Started ahead of its turn: it starts training only at Release. With a gate (an engine told
  // --start-after GATE) it is spawned now, loads its libraries and waits for the gate file;
  // without one it is spawned at Release.
  bool held = false;
  std::optional<std::filesystem::path> gate;
};

// Whether the process is to die now (SIGKILL), asked at each event with what it has said so far;
// an empty predicate never preempts.
using PreemptWhen = std::function<bool(const EngineTranscript&)>;

class EngineProcess {
 public:
  // Starts `start` (or, held without a gate, only prepares it). Throws std::runtime_error when
  // no process could be made.
  EngineProcess(const EngineProcessSettings& settings, EngineStart start);
  EngineProcess(EngineProcess&&) = default;
  EngineProcess& operator=(EngineProcess&&) = default;

  // Lets a held process go (spawning it if it waits unspawned); its times and its deadline
  // count from now. A process started at its turn runs already: nothing changes.
  void Release();
  // Reads what is there of its output into its transcript and event log, waiting at most one
  // watch slice, and SIGKILLs it at a checkpoint event where `preempt` says. False once its
  // output is done: ended, past its deadline, over a cap, broken, or held past a grace by
  // something it started after it exited.
  bool Watch(const PreemptWhen& preempt);
  // Whether it sent a step after a checkpoint's start (its save's staging is behind it).
  bool stepped_after_save() const { return stepped_after_save_; }
  // What it has said so far.
  const EngineTranscript& transcript() const { return transcript_; }
  // After its output is done: waits for it, ends what it left, folds what it said (a protocol
  // violation is its result's error) and digests its final state.
  WorkerRun Collect();
  // Ends a held process that will not be released.
  void Abandon();

 private:
  void Spawn();
  bool Done();
  double SinceEpoch() const;

  EngineProcessSettings settings_;
  EngineStart start_;
  WorkerRun run_;
  EngineTranscript transcript_;
  std::unique_ptr<Child> child_;
  std::unique_ptr<RssSampler> rss_;
  std::chrono::steady_clock::time_point started_;
  std::unique_ptr<std::ofstream> log_;  // every line while its output is read, up to the cap
  uint64_t logged_ = 0;
  std::optional<std::chrono::steady_clock::time_point> exited_at_;
  bool output_done_ = false;
  std::chrono::steady_clock::time_point output_done_at_;
  bool stepped_after_save_ = false;
};

// Digests the state file `run`'s process was told to write into run.state (state_file.h), on
// `threads` threads (0: one per core, at most 16); a large one is deleted once digested. Collect
// calls it, or the plan for a digest_state_later process.
void DigestFinalState(const std::filesystem::path& file, WorkerRun& run, unsigned threads = 0);

// Watches `process` until its output is done (preempting it as `preempt` says) and collects it.
WorkerRun Finish(EngineProcess process, const PreemptWhen& preempt = {});

}  // namespace trainlock::validate
