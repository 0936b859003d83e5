// The validator's worker processes. The coordinator (roundtrip.h) starts the same binary in a
// worker role for each process of the resume test:
//   train (A): N uninterrupted steps, measuring one representative step;
//   train (B): K steps, a checkpoint, an announcement on stdout, then more steps until the
//              coordinator's SIGKILL arrives;
//   train (C): a fresh process that restores the newest checkpoint and runs K+1..N;
//   portable (D): rebuilds everything from the checkpoint alone and reproduces the eval loss;
//   node: a known-answer kernel launch, bf16 matmul TFLOP/s and copy TB/s on every device.
// The train and portable roles speak the engine protocol on stdout (support/engine_transcript.h)
// and nothing else, as every engine does; the node and ops roles write their findings to a JSON
// result file (--result) instead.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace trainlock::validate {

// Worker exit codes beyond 0.
inline constexpr int kWorkerCheckpointRefused = 4;  // restore verification failed
inline constexpr int kWorkerTrainingFailed = 5;     // e.g. out of memory at the intended shape
inline constexpr int kWorkerBadInput = 2;

struct WorkerOptions {
  std::string role = "train";  // "train" | "portable" | "node" | "ops"
  // The engine spec the train role trains (run/engine_spec.h) and the SHA-256 the coordinator
  // wrote it with, which the worker verifies on the bytes it reads.
  std::filesystem::path spec;
  std::string spec_sha256;
  // The ops role's: the custom-op libraries the coordinator resolved from the lock
  // (ops/ops_spec.h) and the SHA-256 it wrote them with.
  std::filesystem::path ops_spec;
  std::string ops_spec_sha256;
  std::filesystem::path checkpoint_root;
  std::filesystem::path result;       // the node and ops roles' findings (WorkerWritesResult)
  std::filesystem::path final_state;  // where to write the final parameters and moments
  int64_t steps = 0;
  int64_t save_at = 0;  // 0: never save
  // A second --save-at (the kill during a save's): 0 none. It starts once the first is
  // committed; --hold-save-at (a point of support/engine_events.h's TRAINLOCK_SAVE_POINTS)
  // writes it on the training thread and stops it at that point, saying `checkpoint` phase
  // "held", until the coordinator's SIGKILL.
  int64_t save_again_at = 0;
  std::string hold_save_at;
  // --state-at STEP FILE: the state after step STEP, written to FILE (the torn-snapshot check's
  // reference); --restored-state FILE: the state just restored.
  int64_t state_at = 0;
  std::filesystem::path state_at_file;
  std::filesystem::path restored_state;
  // A planted fault for the torn-snapshot check's tests (--leak-step-into-save): the first
  // save's tensors are staged only after the next optimizer step changed them.
  bool leak_step_into_save = false;
  // --steady-saves N: after the run-mode measurement, N more saves into --steady-root (never
  // restored), each said as a `checkpoint` phase "steady" with the steps after it timed.
  int steady_saves = 0;
  std::filesystem::path steady_root;
  int64_t measure_step = 0;  // 0: measure nothing
  int64_t keep_last = 0;  // complete checkpoints kept: --keep-last, else kDefaultKeepLast (main.cc)
  bool restore = false;
  bool restore_rng = true;
  bool restore_data = true;
  // --flip-bit-at STEP (--negative-control bitflip): after that step, one weight's lowest
  // mantissa bit is flipped (Trainer::FlipLowestMantissaBit); 0: never.
  int64_t flip_bit_at = 0;
  std::string device = "auto";
  int threads = 0;  // 0: LibTorch's default
  // --start-after FILE: started ahead of its turn, the train or portable process waits before it
  // opens a device or reads anything until FILE exists (the coordinator's release), and fails if
  // the process that started it ends first.
  std::filesystem::path start_after;
};

int RunWorker(const WorkerOptions& options);

// Whether `role` writes a result file (node, ops); train and portable only speak the protocol.
bool WorkerWritesResult(const std::string& role);

}  // namespace trainlock::validate
