// Shared helpers for the test suite: temporary project directories and running the CLI.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace trainlock::testing {

std::filesystem::path SourceDir();
std::filesystem::path BinDir();
std::string ReadFile(const std::filesystem::path& path);
void WriteFile(const std::filesystem::path& path, const std::string& text);

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Copies examples/<name> into `dest` (which must exist) and returns dest.
std::filesystem::path CopyExample(const std::string& name, const std::filesystem::path& dest);

// examples/tiny copied to `dest` (created) without its lock, for `trainlock lock` tests: the
// cpu target's base set to `base`, or removed when `base` is empty; `extra` appended to the
// manifest. Its [python] packages come from `python_index` (tests/servers/pypi_server.py
// --demo); without one the [python] table and the index are removed, so that locking needs no
// package index. Returns dest.
std::filesystem::path UnlockedTiny(const std::filesystem::path& dest, const std::string& base,
                                   const std::string& extra = {},
                                   const std::string& python_index = {});

// examples/tiny copied to DIR/tiny with `extra` appended to its manifest and lock (or
// `lock_extra` to the lock when given), `validate_extra` added to their [validate] tables, and
// the lock's manifest-sha256 updated as `trainlock lock` would leave it. Returns DIR/tiny.
std::filesystem::path TinyWith(const std::filesystem::path& dir, const std::string& extra,
                               const std::string& validate_extra = {},
                               const std::optional<std::string>& lock_extra = std::nullopt);

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs build/bin/<program> with `args` (no shell), capturing stdout and stderr.
RunResult RunProgram(const std::string& program, const std::vector<std::string>& args,
                     const std::vector<std::string>& env = {});
inline RunResult RunTrainlock(const std::vector<std::string>& args) {
  return RunProgram("trainlock", args);
}

// Runs any program found on PATH (argv[0]), capturing stdout and stderr.
RunResult RunCommand(const std::vector<std::string>& argv,
                     const std::vector<std::string>& env = {});

// True when `program` is on PATH.
bool HaveProgram(const std::string& program);

// A server or proxy the test starts (argv[0] from PATH, output to `log`) and kills with
// SIGKILL when it goes out of scope.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const std::filesystem::path& log);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

 private:
  int pid_ = -1;
};

// True when `pid` has exited (gone, or a zombie nobody reaped yet), waiting up to 5 s for a
// SIGKILL to land.
bool ProcessIsGone(int pid);

// The process id a test's command wrote to `file` (sh: echo $! > file).
int PidFrom(const std::filesystem::path& file);

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreeLoopbackPort();

// Polls `url` until it answers with any HTTP status; false after `seconds`.
bool WaitForHttp(const std::string& url, int seconds);

}  // namespace trainlock::testing
