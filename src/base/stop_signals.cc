// Stop signals for a process that is process 1 of its PID namespace (see stop_signals.h).
#include "base/stop_signals.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>

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

}  // namespace

void StopOnSignalsWhenProcessOne(const char* program) {
  if (::getpid() != 1) return;
  g_program = program;
  SetAction(StopNow);
}

void RestoreDefaultStopSignals() {
  SetAction(SIG_DFL);
}

}  // namespace trainlock
