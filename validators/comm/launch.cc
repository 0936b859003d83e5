// Starting the ranks of a standalone distributed validation; see launch.h.
#include "comm/launch.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "base/program_path.h"
#include "base/rank_env.h"
#include "base/subprocess.h"
#include "support/worker_process.h"

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

// One rank: this executable with the torchrun variables, sharing this process's streams.
std::unique_ptr<Subprocess> StartRank(const std::vector<std::string>& argv, int rank, int nproc,
                                      int port) {
  SpawnOptions o;
  o.argv = argv;
  o.program = RunningExecutable();
  o.out = o.err = Stream::kInherit;
  o.env = {{"RANK", std::to_string(rank)},        {"LOCAL_RANK", std::to_string(rank)},
           {"WORLD_SIZE", std::to_string(nproc)}, {"LOCAL_WORLD_SIZE", std::to_string(nproc)},
           {"MASTER_ADDR", "127.0.0.1"},          {"MASTER_PORT", std::to_string(port)},
           {"TRAINLOCK_LAUNCHER", "standalone"}};
  auto child = std::make_unique<Subprocess>(o);
  if (!child->started()) {
    std::fprintf(stderr, "trainlock-validate: cannot start rank %d: %s\n", rank,
                 std::strerror(child->start_errno()));
  }
  return child;
}

}  // namespace

int LaunchRanks(const std::vector<std::string>& argv, int nproc) {
  const std::vector<std::string> rank_argv = WithoutNproc(argv);
  const int port = FreeLoopbackPort();
  std::vector<std::unique_ptr<Subprocess>> ranks;
  for (int rank = 0; rank < nproc; ++rank) ranks.push_back(StartRank(rank_argv, rank, nproc, port));
  std::vector<int> codes;
  for (int rank = 0; rank < nproc; ++rank) {
    codes.push_back(*ranks[static_cast<size_t>(rank)]->Wait(ProcessClock::time_point::max()));
    if (codes.back() != 0 && codes.back() != 1) {
      std::fprintf(stderr, "trainlock-validate: rank %d exited with %d\n", rank, codes.back());
    }
  }
  if (codes[0] != 0) return codes[0];
  for (int code : codes) {
    if (code != 0) return 1;
  }
  return 0;
}

}  // namespace trainlock::validate
