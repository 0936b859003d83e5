// Child process handling; see subprocess.h.
#include "support/worker_process.h"

#include <deque>
#include <fstream>
#include <stdexcept>

#include "base/failure.h"

namespace trainlock::validate {
namespace {

SpawnOptions WorkerSpawnOptions(const std::vector<std::string>& argv,
                                const std::filesystem::path& stderr_file,
                                const ChildIsolation& isolation) {
  SpawnOptions o;
  o.env = isolation.env;
  o.clean_env = isolation.clean_env;
  o.own_group = isolation.own_group;
  o.own_pid_namespace = isolation.own_pid_namespace;
  o.cwd = isolation.cwd;
  o.argv = argv;
  o.program = argv.at(0);    // a path: never looked up on PATH
  o.die_with_parent = true;  // never outlive the coordinator
  o.null_stdin = true;
  o.out = Stream::kPipe;
  o.err = Stream::kFile;
  o.err_file = stderr_file;
  return o;
}

}  // namespace

Child::Child(const std::vector<std::string>& argv, const std::filesystem::path& stderr_file,
             const std::map<std::string, std::string>& env, bool own_group)
    : Child(argv, stderr_file, ChildIsolation{env, false, own_group, false, {}}) {}

Child::Child(const std::vector<std::string>& argv, const std::filesystem::path& stderr_file,
             const ChildIsolation& isolation)
    : process_(WorkerSpawnOptions(argv, stderr_file, isolation)) {
  if (process_.pid() < 0) throw Failure(process_.start_error(), kExitEnvironment);
}

std::optional<int> Child::Wait(std::chrono::steady_clock::time_point deadline) {
  if (std::optional<int> code = process_.Wait(deadline)) return code;
  Kill();
  return std::nullopt;
}

std::string TailOfFile(const std::filesystem::path& file, int lines) {
  std::ifstream in(file);
  std::deque<std::string> tail;
  std::string line;
  while (std::getline(in, line)) {
    tail.push_back(line);
    if (static_cast<int>(tail.size()) > lines) tail.pop_front();
  }
  std::string out;
  for (const std::string& l : tail) out += (out.empty() ? "" : "\n") + l;
  return out;
}

}  // namespace trainlock::validate
