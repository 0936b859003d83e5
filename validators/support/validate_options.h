// What one validation was asked to do: the validator's command line, parsed. Every part of the
// validator reads its settings from here (the coordinator, the ranks, the work directories), so
// it sits below all of them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "project/validate_defaults.h"

namespace trainlock::validate {

// Negative controls: deliberately break the resume to prove the check can fail.
// kTornSnapshot (with --kill-during-save, the native engine): B's first save stages its tensors
// only after the next optimizer step, so the checkpoint of step N holds step N+1's tensors.
// kFlipBit (the native engine): the uninterrupted run flips the lowest mantissa bit of one weight
// after its first step, before the checkpoint: its resume still agrees with itself, bitwise, and
// only its golden digest differs from its key's peers (a node computing differently).
enum class NegativeControl {
  kNone,
  kSkipRngRestore,
  kSkipDataRestore,
  kCorruptCheckpoint,
  kTornSnapshot,
  kFlipBit
};

struct ValidateOptions {
  std::filesystem::path project = ".";
  std::filesystem::path out = "report.json";
  std::filesystem::path
      checkpoint_dir;              // "" = the lock's validate.checkpoint-dir, else the work dir
  std::filesystem::path work_dir;  // "" = a fresh temporary directory
  bool keep_work = false;
  std::filesystem::path state_dir;  // --state-dir: "" = in memory when it has room (state_dir.h)
  std::string device = "auto";
  int threads = 0;
  int timeout_s = 900;
  bool json = false;  // print the report to stdout instead of the summary
  int nproc = 0;      // --nproc: 0 not given, -1 auto (one per visible device), else the count
  int join_timeout_s = 120;        // every rank must reach the rendezvous within this
  int collective_timeout_s = 120;  // one collective may take this long
  int64_t comm_max_mib = 0;        // largest all-reduce; 0: 1024 on GPUs, 16 on CPU
  std::vector<std::string> only;   // --only: run these checks, skip the rest
  std::vector<std::string> argv;   // this process's command line, for --nproc's ranks
  std::filesystem::path sign_key;  // Ed25519 private key (PEM) to sign the report with; "" = none
  NegativeControl negative_control = NegativeControl::kNone;
  bool allow_drift = false;       // train although the lock does not match the manifest or config
  bool verbose = false;           // -v: the summary shows each check's metrics
  std::string progress = "auto";  // --progress: auto, terminal, log, json or none (base/progress.h)
  // The round trip's engine runs (docs/validate.md, "Engines").
  int engine_nproc = 1;                    // --engine-nproc: processes of one engine run
  int reshard_to = 0;                      // --reshard-to: 0 none
  bool kill_during_save = false;           // --kill-during-save, or --kill-point
  std::string kill_point;                  // --kill-point: where B's second save is held and killed
  int steady_saves = kDefaultSteadySaves;  // --steady-saves: B's saves after its checkpoint
  std::string python;                      // --python: "" the image's, else python3 on PATH
};

}  // namespace trainlock::validate
