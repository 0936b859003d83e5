// How a trainlock program that is process 1 of its PID namespace (a container's entrypoint:
// `docker run`, a Kubernetes pod, `trainlock validate --image`) still stops when it is told to.
#pragma once

#include <signal.h>
#include <sys/types.h>

namespace trainlock {

// The kernel delivers no signal to a namespace's process 1 for which it has no handler (only
// SIGKILL and SIGSTOP from outside): `docker stop`, a pod's deletion and Slurm's scancel send
// SIGTERM, which such a process ignores until the SIGKILL of their grace period (10 s, 30 s),
// and Ctrl-C on `docker run -it` does nothing. When this process is process 1, SIGTERM, SIGINT
// and SIGHUP end it at once with 128 + the signal, the exit a shell reports for a process they
// killed, after one line to stderr naming `program` and the signal. A run stopped so leaves
// no report (it is written whole at the end, by rename), as when it is killed. What it started dies
// with it (the processes it spawns die with their parent, and the kernel kills what is left in the
// namespace when its process 1 exits). Elsewhere nothing changes: the signals' default actions
// already end the process. `program` must outlive the process (a string literal).
void StopOnSignalsWhenProcessOne(const char* program);

// The three signals' default actions back, in a child forked from a process 1 that does not
// exec (an init of its own namespace, whose parent's grace period must apply to its program).
void RestoreDefaultStopSignals();

// While one lives, SIGTERM, SIGINT and SIGHUP that reach this process are passed on to a
// child's process group. A child run in a group of its own (so that its time limit can kill
// everything it started, not its pid alone) is out of the terminal's foreground group: Ctrl-C,
// or a CI runner's SIGTERM to us, would no longer reach it. A signal this process ignores stays
// ignored (the child inherits that). One at a time; the first signal is remembered, so the
// caller can end by it once the child has handled it (EndByStopSignal).
class StopSignalForwarding {
 public:
  StopSignalForwarding();   // a signal from now on is held until To() names the group
  ~StopSignalForwarding();  // the previous actions back
  StopSignalForwarding(const StopSignalForwarding&) = delete;
  StopSignalForwarding& operator=(const StopSignalForwarding&) = delete;
  // Forwards to the group `group` from now on, and a signal held since construction now.
  void To(pid_t group);
  int received() const;  // the first signal that came, 0 when none

 private:
  struct sigaction previous_[3] = {};
};

// Ends this process by `signal` as it would have ended had it not been forwarded (its default
// action, or the process-1 handler of StopOnSignalsWhenProcessOne); returns when the action in
// place does not end it. For the caller of a child that got a forwarded signal, once the child
// has ended.
void EndByStopSignal(int signal);

}  // namespace trainlock
