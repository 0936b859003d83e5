// Reading the launcher's rank variables; see rank_env.h.
#include "base/rank_env.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <cstdlib>
#include <filesystem>

#include "base/diagnostic.h"
#include "base/failure.h"

namespace trainlock {
namespace {

using Getenv = std::function<const char*(const char*)>;

std::optional<std::string> Var(const Getenv& getenv, const char* name) {
  const char* value = getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

[[noreturn]] void Bad(const std::string& variable, const std::string& message) {
  throw InputError(Diagnostic{variable, {}, message, "check the launcher's environment"});
}

int IntVar(const Getenv& getenv, const char* name, int min, int max) {
  std::optional<std::string> text = Var(getenv, name);
  if (!text) Bad(name, "not set, but the other launcher variables are");
  char* end = nullptr;
  long value = std::strtol(text->c_str(), &end, 10);
  if (*end != '\0' || value < min || value > max)
    Bad(name, "'" + *text + "' is not an integer in [" + std::to_string(min) + ", " +
                  std::to_string(max) + "]");
  return static_cast<int>(value);
}

// Slurm names no rendezvous address; in an sbatch job task 0 runs on the node that launched
// srun, so its address is where rank 0 listens. The port is derived from the job id so that
// two jobs sharing a node do not collide.
void SlurmRendezvous(const Getenv& getenv, RankEnv& env) {
  env.master_addr =
      Var(getenv, "MASTER_ADDR").value_or(Var(getenv, "SLURM_LAUNCH_NODE_IPADDR").value_or(""));
  if (env.master_addr.empty())
    Bad("MASTER_ADDR", "not set, and Slurm gave no SLURM_LAUNCH_NODE_IPADDR");
  if (Var(getenv, "MASTER_PORT")) {
    env.master_port = IntVar(getenv, "MASTER_PORT", 1, 65535);
  } else {
    int job = Var(getenv, "SLURM_JOB_ID") ? IntVar(getenv, "SLURM_JOB_ID", 0, 2147483647) : 0;
    env.master_port = 20000 + job % 20000;
  }
}

}  // namespace

std::optional<RankEnv> DetectRankEnv(const Getenv& getenv) {
  RankEnv env;
  if (Var(getenv, "RANK") || Var(getenv, "WORLD_SIZE")) {
    env.launcher = "torchrun";
    env.world_size = IntVar(getenv, "WORLD_SIZE", 1, 65536);
    env.rank = IntVar(getenv, "RANK", 0, env.world_size - 1);
    env.local_rank =
        Var(getenv, "LOCAL_RANK") ? IntVar(getenv, "LOCAL_RANK", 0, env.world_size - 1) : 0;
    env.node_rank =
        Var(getenv, "GROUP_RANK") ? IntVar(getenv, "GROUP_RANK", 0, env.world_size - 1) : 0;
    env.master_addr = Var(getenv, "MASTER_ADDR").value_or("");
    if (env.master_addr.empty()) Bad("MASTER_ADDR", "not set, but RANK and WORLD_SIZE are");
    env.master_port = IntVar(getenv, "MASTER_PORT", 1, 65535);
    // trainlock-validate --nproc sets the torchrun variables and says it was the launcher.
    if (Var(getenv, "TRAINLOCK_LAUNCHER").value_or("") == "standalone") env.launcher = "standalone";
    return env;
  }
  if (Var(getenv, "SLURM_PROCID") && Var(getenv, "SLURM_NTASKS")) {
    env.launcher = "slurm";
    env.world_size = IntVar(getenv, "SLURM_NTASKS", 1, 65536);
    env.rank = IntVar(getenv, "SLURM_PROCID", 0, env.world_size - 1);
    env.local_rank =
        Var(getenv, "SLURM_LOCALID") ? IntVar(getenv, "SLURM_LOCALID", 0, env.world_size - 1) : 0;
    env.node_rank =
        Var(getenv, "SLURM_NODEID") ? IntVar(getenv, "SLURM_NODEID", 0, env.world_size - 1) : 0;
    SlurmRendezvous(getenv, env);
    return env;
  }
  return std::nullopt;
}

int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw Failure("no free loopback port: " + why, kExitEnvironment);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string HostName() {
  if (const char* node = std::getenv("TRAINLOCK_NODE_NAME"); node && *node) return node;
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

std::string RankReportPath(const std::string& out, int rank) {
  std::filesystem::path p(out);
  std::string stem = p.stem().string();
  std::string ext = p.extension().string();
  return (p.parent_path() / (stem + ".rank-" + std::to_string(rank) + ext)).string();
}

int RanksOnThisHost(const std::optional<RankEnv>& env, const Getenv& getenv) {
  if (!env || env->world_size <= 1) return 1;
  for (const char* name : {"LOCAL_WORLD_SIZE", "SLURM_TASKS_PER_NODE"}) {
    const std::optional<std::string> text = Var(getenv, name);
    if (!text) continue;
    char* end = nullptr;
    const long n = std::strtol(text->c_str(), &end, 10);
    if (end != text->c_str() && n >= 1 && n <= 65536) return static_cast<int>(n);
  }
  return env->world_size;
}

}  // namespace trainlock
