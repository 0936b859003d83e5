// The validator's option table; see validator_options.h.
#include "project/validator_options.h"

#include <array>
#include <vector>

#include "base/strings.h"
#include "project/validate_defaults.h"

namespace trainlock {
namespace {

// The help texts are the validator's own (`trainlock-validate --help`).
const std::array<ValidatorOption, 26> kValidatorOptionTable = {{
    {"--out,-o", "FILE",
     "Where to write the report (default: DIR/.trainlock/reports/report.json, where `trainlock "
     "gate` looks)",
     "", 0, -1, false, true},
    {"--checkpoint-dir", "DIR",
     "Checkpoint storage to test, an existing writable directory (default: the lock's "
     "validate.checkpoint-dir, else the work dir)",
     ""},
    {"--work-dir", "DIR",
     "Directory under which each run makes a fresh one for its worker results "
     "(default: the temporary directory)",
     ""},
    {"--keep-work", nullptr, "Keep the work directory and checkpoints afterwards", ""},
    {"--state-dir", "DIR",
     "Where the round trip's processes write their final states, an existing directory (default: "
     "a private directory in /dev/shm when the host's memory holds them, else the work dir)",
     ""},
    {"--device", "auto|cpu|cuda", "auto, cpu or cuda", "auto|cpu|cuda"},
    {"--threads", "N", "CPU threads per process (0: LibTorch's default)", "", 0, 1024},
    {"--timeout", "S", "Seconds each worker process may run before it is killed", "", 1, 86400},
    {"--json", nullptr, "Print the report JSON instead of the summary", "", 0, -1, false, true},
    {"--progress", "auto|terminal|log|json|none",
     "Progress of each phase and each check as it completes on stderr: auto (terminal when "
     "stderr is one, else log), terminal, log (a timestamped line per step), json (the same as "
     "JSON lines) or none",
     "auto|terminal|log|json|none"},
    {"-q,--quiet", nullptr, "No progress on stderr (the same as --progress none)", ""},
    {"-v,--verbose", nullptr,
     "The summary shows each check's measurements (the report's metrics) under it", ""},
    {"--allow-drift", nullptr,
     "Validate although the lock is stale or the config changed since it was made; the drift is "
     "recorded in the report",
     ""},
    {"--nproc", "N|auto",
     "Start N ranks (auto: one per visible GPU) that join comm.allreduce and comm.ddp; under "
     "torchrun or srun the launcher's RANK/WORLD_SIZE or SLURM_* are used",
     ""},
    {"--join-timeout", "S", "Seconds every rank has to join the rendezvous", "", 1, 86400},
    {"--collective-timeout", "S", "Seconds one collective may take before the ranks give up", "", 1,
     86400},
    {"--comm-max-mib", "N", "Largest all-reduce in MiB (default 1024 on GPUs, 16 on CPU)", "", 1,
     65536},
    {"--only", "CHECK,...", "Run only these checks (ids); the others are skipped", "", 0, -1, true},
    {"--sign", "KEY",
     "Sign the report with this Ed25519 private key (PEM, from `trainlock keygen`); `trainlock "
     "gate --key` verifies it",
     "", 0, -1, false, true},
    {"--negative-control", "none|rng|data|corrupt|torn-snapshot|bitflip",
     "Deliberately break the resume to prove the check fails: rng (skip RNG restore), data (skip "
     "data-loader restore), corrupt (flip a checkpoint byte), torn-snapshot (with "
     "--kill-during-save, native engine: the saved tensors are a step newer than the "
     "checkpoint), bitflip (native engine: one weight's lowest mantissa bit flipped after the "
     "first step; only the golden digest differs from the key's other nodes)",
     "none|rng|data|corrupt|torn-snapshot|bitflip"},
    {"--engine-nproc", "N",
     "Processes of one run of the lock's engine (its world size; Python engines, default 1)", "", 1,
     1024},
    {"--reshard-to", "M",
     "Also restore the round trip's checkpoint at world size M and train to the end: the resume "
     "must still equal the uninterrupted run (engines that reshard: ddp, fsdp2)",
     "", 1, 1024},
    {"--kill-during-save", nullptr,
     "Save again after the committed checkpoint and SIGKILL the process while that save is being "
     "written: the resume must use the committed one (engines that save asynchronously); the "
     "kill lands where --kill-point says, mid-file unless given",
     ""},
    {"--kill-point", "POINT",
     "Where --kill-during-save kills the second save (and implies it): before-files, mid-file, "
     "after-files, after-metadata (before the commit record) or after-commit (the new checkpoint "
     "must then be the one restored)",
     "before-files|mid-file|after-files|after-metadata|after-commit"},
    {"--steady-saves", "N",
     "Saves the saving process makes after its checkpoint, in the run's mode, each timed with the "
     "steps after it: what a save costs training once its buffers exist (default 1; 0 none)",
     "", 0, kMaxSteadySaves},
    {"--python", "PATH",
     "The Python that runs a Python engine (default: the image's /opt/venv/bin/python3, else "
     "python3 on PATH)",
     ""},
}};

// The names of "--out,-o": "--out", "-o".
std::vector<std::string_view> NamesOf(std::string_view names) {
  std::vector<std::string_view> parts;
  for (size_t start = 0; start <= names.size();) {
    size_t end = names.find(',', start);
    if (end == std::string_view::npos) end = names.size();
    parts.push_back(names.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace

std::string_view ValidatorOption::long_name() const {
  for (std::string_view name : NamesOf(names))
    if (name.starts_with("--")) return name;
  return NamesOf(names).front();
}

std::vector<std::string_view> ValidatorOption::all_names() const {
  return NamesOf(names);
}

bool ValidatorOption::Names(std::string_view arg) const {
  const size_t eq = arg.find('=');
  if (eq != std::string_view::npos && arg.starts_with("--")) arg = arg.substr(0, eq);
  for (std::string_view name : NamesOf(names))
    if (name == arg) return true;
  return false;
}

std::span<const ValidatorOption> ValidatorOptions() {
  return kValidatorOptionTable;
}

const ValidatorOption* FindValidatorOption(std::string_view arg) {
  for (const ValidatorOption& option : ValidatorOptions())
    if (option.Names(arg)) return &option;
  return nullptr;
}

std::string ValidatorOptionsSummary() {
  std::vector<std::string> parts;
  for (const ValidatorOption& option : ValidatorOptions()) {
    std::string name(option.long_name());
    if (name == "--quiet") name = "-q";
    if (name == "--verbose") name = "-v";
    parts.push_back(option.is_flag() ? name : name + " " + option.value);
  }
  return JoinStrings(parts, ", ");
}

std::string ValidateExitCodesHelp() {
  return "Exit codes: 0 pass; 1 fail (a check failed, or a required check did not pass);\n"
         "2 bad input or usage (nothing ran, no report); 3 the environment failed (a setup that\n"
         "cannot run: the report's verdict is error; with --image, one that wrote no report);\n"
         "128+N stopped by signal N (SIGTERM, SIGINT or SIGHUP; no report).";
}

}  // namespace trainlock
