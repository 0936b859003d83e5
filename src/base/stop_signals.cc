// Stop signals for a process that is process 1 of its PID namespace (see stop_signals.h).
#include "base/stop_signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <iterator>

namespace trainlock {
namespace {

constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP};

const char* g_program = "trainlock";

// Async-signal-safe: write(2) of fixed text and _exit(2), nothing that allocates or locks.
void WriteText(const char* text) {
  (void)!::write(STDERR_FILENO, text, std::strlen(text));
}

void StopNow(int signal) {
  WriteText(g_program);
  WriteText(": stopped by ");
  WriteText(signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : "SIGHUP");
  WriteText(" (process 1 of its container)\n");
  ::_exit(128 + signal);
}

void SetAction(void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  for (int signal : kStopSignals) sigaddset(&action.sa_mask, signal);  // one message, one exit
  for (int signal : kStopSignals) ::sigaction(signal, &action, nullptr);
}

volatile sig_atomic_t g_forward_group = 0;  // 0: none named yet
volatile sig_atomic_t g_received = 0;

// Async-signal-safe: kill(2) and plain stores.
void Forward(int signal) {
  if (g_received == 0) g_received = signal;
  if (g_forward_group > 0) ::kill(-static_cast<pid_t>(g_forward_group), signal);
}

// The stop signals blocked in this thread while it lives.
class BlockStopSignals {
 public:
  BlockStopSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int signal : kStopSignals) sigaddset(&set, signal);
    ::pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~BlockStopSignals() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

 private:
  sigset_t old_;
};

}  // namespace

StopSignalForwarding::StopSignalForwarding() {
  BlockStopSignals blocked;
  g_forward_group = 0;
  g_received = 0;
  struct sigaction action {};
  action.sa_handler = Forward;
  sigemptyset(&action.sa_mask);
  for (int signal : kStopSignals) sigaddset(&action.sa_mask, signal);
  for (size_t i = 0; i < std::size(kStopSignals); ++i) {
    ::sigaction(kStopSignals[i], nullptr, &previous_[i]);
    if (previous_[i].sa_handler != SIG_IGN) ::sigaction(kStopSignals[i], &action, nullptr);
  }
}

StopSignalForwarding::~StopSignalForwarding() {
  BlockStopSignals blocked;
  for (size_t i = 0; i < std::size(kStopSignals); ++i)
    ::sigaction(kStopSignals[i], &previous_[i], nullptr);
  g_forward_group = 0;
}

void StopSignalForwarding::To(pid_t group) {
  BlockStopSignals blocked;  // a signal now is forwarded once, by the handler after this
  g_forward_group = group;
  if (g_received != 0 && group > 0) ::kill(-group, g_received);
}

int StopSignalForwarding::received() const {
  return g_received;
}

void EndByStopSignal(int signal) {
  if (signal != 0) ::raise(signal);
}

void StopOnSignalsWhenProcessOne(const char* program) {
  if (::getpid() != 1) return;
  g_program = program;
  SetAction(StopNow);
}

void RestoreDefaultStopSignals() {
  SetAction(SIG_DFL);
}

}  // namespace trainlock
