// Starting the ranks of a standalone distributed validation; see launch.h.
#include "launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "base/rank_env.h"
#include "subprocess.h"

namespace trainlock::validate {
namespace {

std::vector<std::string> WithoutNproc(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--nproc") {
      ++i;
    } else if (argv[i].rfind("--nproc=", 0) != 0) {
      out.push_back(argv[i]);
    }
  }
  return out;
}

pid_t StartRank(const std::vector<std::string>& argv, int rank, int nproc, int port) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setenv("RANK", std::to_string(rank).c_str(), 1);
  ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
  ::setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("TRAINLOCK_LAUNCHER", "standalone", 1);
  ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string self = SelfExecutable().string();
  ::execv(self.c_str(), args.data());
  std::fprintf(stderr, "trainlock-validate: cannot start rank %d: %s\n", rank,
               std::strerror(errno));
  ::_exit(127);
}

}  // namespace

int LaunchRanks(const std::vector<std::string>& argv, int nproc) {
  const std::vector<std::string> rank_argv = WithoutNproc(argv);
  const int port = FreeLoopbackPort();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < nproc; ++rank) pids.push_back(StartRank(rank_argv, rank, nproc, port));
  std::vector<int> codes(static_cast<size_t>(nproc), 0);
  for (int rank = 0; rank < nproc; ++rank) {
    int status = 0;
    while (::waitpid(pids[static_cast<size_t>(rank)], &status, 0) < 0 && errno == EINTR) {
    }
    codes[static_cast<size_t>(rank)] =
        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (codes[static_cast<size_t>(rank)] != 0 && codes[static_cast<size_t>(rank)] != 1) {
      std::fprintf(stderr, "trainlock-validate: rank %d exited with %d\n", rank,
                   codes[static_cast<size_t>(rank)]);
    }
  }
  if (codes[0] != 0) return codes[0];
  for (int code : codes) {
    if (code != 0) return 1;
  }
  return 0;
}

}  // namespace trainlock::validate
