// The round trip's judging half (roundtrip.cc runs the processes): train.step,
// train.roundtrip, train.eval and ckpt.portable, each judged by free functions from what the
// processes did (roundtrip_runs.h) and the options and config they ran with, so everything a
// verdict rests on is in its arguments.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/failure.h"
#include "coordinator/roundtrip.h"
#include "coordinator/roundtrip_runs.h"
#include "project/project.h"
#include "report/report.h"

namespace trainlock::validate {

// What the checks judge with besides the runs.
struct JudgeInputs {
  const RoundtripOptions& o;
  const Project& project;        // its config: the shape the step must have run at
  std::filesystem::path python;  // a Python engine's interpreter, named when it cannot run
};

// Whether A's run decides the verdict alone: the engine cannot run here, the step does not
// fit, or only train.step was selected. Then no other process runs.
bool DecidedByA(const JudgeInputs& in, const WorkerRun& a);
// The four checks, in report order, from what the processes did: the refusal when none ran,
// A's run alone when it decided the verdict, else every process's run with where each
// process's time went.
std::vector<CheckResult> JudgeRoundtrip(const JudgeInputs& in, const RoundtripRuns& runs);

}  // namespace trainlock::validate
