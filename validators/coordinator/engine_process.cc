// The round trip's process mechanics; see engine_process.h. roundtrip.cc's plan drives them.
#include "coordinator/engine_process.h"

#include <algorithm>
#include <csignal>
#include <thread>
#include <utility>

#include "base/file_io.h"
#include "coordinator/state_file.h"
#include "support/engine_events.h"
#include "support/engine_protocol.h"
#include "support/torch_build.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

// How often the coordinator looks at an engine's stderr while it waits for its output, how
// long output may go on after the engine itself exited (something it left holding stdout),
// and the caps on what an engine writes (docs/validate.md, "The engine protocol").
constexpr std::chrono::milliseconds kEngineWatchSlice(100);
constexpr std::chrono::milliseconds kEngineLeftoverGrace(500);
constexpr uint64_t kMaxEngineOutputBytes = uint64_t{256} << 20;
// Final states up to this size stay in the work directory, for the element-wise difference.
constexpr uint64_t kKeptStateBytes = uint64_t{1} << 30;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A process's event log, opened as a regular file of ours: whatever an engine planted at its
// name in the work directory (a FIFO would block the open, a link would write elsewhere) is
// removed first.
std::unique_ptr<std::ofstream> OpenEventLog(const fs::path& file) {
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(file, ec);
  if (fs::exists(status) && !fs::is_regular_file(status)) fs::remove(file, ec);
  return std::make_unique<std::ofstream>(file);
}

// A cap's violation, as the transcript records it.
std::string CapPassed(const char* what, uint64_t cap) {
  return std::string("its ") + what + " passed " + std::to_string(cap >> 20) + " MiB";
}

}  // namespace

EngineProcess::EngineProcess(const EngineProcessSettings& settings, EngineStart start)
    : settings_(settings), start_(std::move(start)), transcript_(start_.expectation) {
  run_.name = start_.name;
  run_.stderr_file = settings_.work_dir / (run_.name + ".stderr");
  if (start_.gate) {
    std::error_code ec;
    fs::remove(*start_.gate, ec);  // a gate left from before must not release it early
  }
  if (!start_.held || start_.gate) Spawn();
}

double EngineProcess::SinceEpoch() const {
  return Seconds(settings_.epoch);
}

void EngineProcess::Spawn() {
  started_ = Clock::now();
  run_.spawned_s = run_.started_s = SinceEpoch();
  run_.oom_kills_before = CgroupOomKills();
  const EngineLaunch& launch = start_.command;
  // CUDA refuses to start inside a new PID namespace in some sandboxes (cudaGetDeviceCount: error
  // 304, "operation not supported on this OS", on the H200 machine of bench/results/
  // 2026-12-02-h200-pilot-pass): an engine that may train on a GPU gets its own process group,
  // and what holds its stdout after it ends is found through /proc and killed.
  const bool may_use_gpu = BuiltTorchFlavour() != "cpu" && settings_.device != "cpu";
  ChildIsolation isolation{launch.env, launch.clean_env, launch.python,
                           launch.python && !may_use_gpu, launch.cwd};
  child_ = std::make_unique<Child>(launch.argv, run_.stderr_file, isolation);
  run_.pid = child_->pid();
  rss_ = std::make_unique<RssSampler>(run_.pid);
}

void EngineProcess::Release() {
  if (!start_.held) return;  // started at its turn: running already
  if (!child_) {
    Spawn();
    return;
  }
  if (start_.gate) WriteFileAtomically(*start_.gate, "");
  started_ = Clock::now();
  run_.started_s = SinceEpoch();
}

bool EngineProcess::Watch(const PreemptWhen& preempt) {
  const auto deadline = started_ + std::chrono::seconds(settings_.timeout_s);
  if (output_done_ || Clock::now() >= deadline) return Done();
  if (!log_) log_ = OpenEventLog(settings_.work_dir / (run_.name + ".jsonl"));
  auto line = child_->ReadLine(std::min(deadline, Clock::now() + kEngineWatchSlice));
  if (child_->StderrBytes() > kMaxChildStderrBytes) {
    transcript_.Violate(CapPassed("stderr", kMaxChildStderrBytes));
    return Done();
  }
  if (!line) {
    if (child_->OutputEnded()) return Done();
    // Exited, but something it started holds its stdout: that one is not waited for.
    if (!exited_at_ && child_->Exited()) exited_at_ = Clock::now();
    if (exited_at_ && Clock::now() - *exited_at_ > kEngineLeftoverGrace) return Done();
    return true;
  }
  logged_ += line->size() + 1;
  if (logged_ > kMaxEngineOutputBytes) {
    transcript_.Violate(CapPassed("output", kMaxEngineOutputBytes));
    return Done();
  }
  if (line->size() <= kMaxEngineLineBytes) *log_ << *line << "\n";
  const std::string event = transcript_.Add(*line);
  if (!event.empty() && !run_.first_event_s.contains(event))
    run_.first_event_s[event] = Seconds(started_);
  if (event == kEventStep && transcript_.LastCheckpoint("started")) stepped_after_save_ = true;
  if (!transcript_.violation().empty()) return Done();  // nothing more it says counts
  if (!event.empty() && !run_.killed_by_us && preempt && preempt(transcript_)) {
    child_->Kill();
    run_.killed_by_us = true;
  }
  return true;
}

bool EngineProcess::Done() {
  if (output_done_) return false;
  if (!transcript_.violation().empty()) child_->Kill();
  output_done_ = true;
  output_done_at_ = Clock::now();
  run_.ended_s = SinceEpoch();
  return false;
}

WorkerRun EngineProcess::Collect() {
  WorkerRun run = std::move(run_);
  log_.reset();
  run.exit_code = child_->Wait(started_ + std::chrono::seconds(settings_.timeout_s));
  if (child_->stderr_capped()) {  // after its stdout ended, still writing stderr: stopped
    if (!run.exit_code) run.exit_code = 128 + SIGKILL;  // or it ended by itself over the cap
    transcript_.Violate(CapPassed("stderr", kMaxChildStderrBytes));
  }
  child_->KillLeftovers();  // what it started ends with it (a daemon holding its stdout too)
  run.seconds = std::chrono::duration<double>(output_done_at_ - started_).count();
  run.peak_rss_bytes = rss_->peak_bytes();
  rss_.reset();
  run.oom_kills_after = CgroupOomKills();
  transcript_.End(run.exit_code == 0 && !run.killed_by_us);
  run.result = transcript_.result();
  if (!transcript_.violation().empty()) {
    // Nothing this process said counts: its result is the violation.
    ErrorEvent broke;
    broke.kind = kErrorProtocol;
    broke.message =
        "process " + run.name + " broke the engine protocol: " + transcript_.violation();
    run.result.error = broke;
  }
  run.stderr_tail = TailOfFile(run.stderr_file, 5);
  if (start_.final_state && !start_.digest_state_later) DigestFinalState(*start_.final_state, run);
  return run;
}

void EngineProcess::Abandon() {
  if (!child_) return;  // a native process waits unspawned
  child_->Kill();
  child_->KillLeftovers();
}

// A large state is deleted once digested: the next process's state must fit beside the
// checkpoints, and only small states are diffed.
void DigestFinalState(const fs::path& file, WorkerRun& run, unsigned threads) {
  if (threads == 0) threads = std::thread::hardware_concurrency();
  run.state = DigestStateFile(file, std::clamp(threads, 1u, 16u));
  std::error_code ec;
  // A process killed while it wrote leaves the file it allocated (state_writer.h) unrenamed.
  const fs::path prepared = file.string() + kPreparedStateSuffix;
  if (fs::is_regular_file(fs::symlink_status(prepared, ec))) fs::remove(prepared, ec);
  if (run.state->problem.empty() && run.state->bytes <= kKeptStateBytes) {
    run.state_file = file;
  } else if (fs::is_regular_file(fs::symlink_status(file, ec))) {
    fs::remove(file, ec);
  }
}

WorkerRun Finish(EngineProcess process, const PreemptWhen& preempt) {
  while (process.Watch(preempt)) {
  }
  return process.Collect();
}

}  // namespace trainlock::validate
