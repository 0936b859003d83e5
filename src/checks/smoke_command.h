// The project's own smoke command (`[ext.command]` in the lock), run by the validator as the
// ext.command check: no shell, a hard timeout, and the whole process group (and, where the
// kernel allows, PID namespace) killed afterwards so that nothing the command started outlives
// the check. Output that is not UTF-8 is kept with U+FFFD in place of the bad bytes.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "project/lockfile.h"
#include "report/report.h"

namespace trainlock {

struct SmokeRun {
  int exit_code = -1;           // the command's exit status; 128 + N when killed by signal N
  bool started = false;         // false when it could not be executed (see `output_tail`)
  bool timed_out = false;       // killed because it ran past the timeout
  double duration_s = 0;        // until the command exited or was killed
  std::string output_tail;      // the last lines of stdout and stderr, interleaved
  int output_lines = 0;         // lines of output in all
  bool left_processes = false;  // its group or namespace still had processes after it (killed)
  // What ended them: "pid-namespace" (also what left the group with setsid), or
  // "process-group only: <why no namespace>" (a process that called setsid may survive).
  std::string containment;
};

// Runs `command` in `project_dir` (or its `cwd` below it) with its environment additions.
// Waits at most `command.timeout_s`, then sends SIGTERM to the process group, and SIGKILL
// after a 2-second grace. Never throws for the command's own failures.
SmokeRun RunSmokeCommand(const ExtCommand& command, const std::filesystem::path& project_dir);

// The ext.command check of the report from a run.
CheckResult SmokeCommandCheck(const ExtCommand& command, const SmokeRun& run);

}  // namespace trainlock
