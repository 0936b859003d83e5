// Starting a round-trip process for the lock's engine; see engine_command.h.
#include "coordinator/engine_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include "base/exit_code.h"
#include "base/failure.h"
#include "base/file_io.h"
#include "base/program_path.h"
#include "image/in_image_paths.h"
#include "project/round_trip_engines.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxEngineFiles = 256;

// The installed package under `root` as (relative path, bytes): regular .py files only, never
// through a symlink (a planted link is not the engine), bounded in number and size.
std::vector<std::pair<std::string, std::string>> ReadInstalledEngine(const fs::path& root) {
  std::vector<std::pair<std::string, std::string>> files;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    const fs::path& path = it->path();
    if (it->is_symlink())
      throw Failure(path.string() + ": a symbolic link in the installed engine", kExitVerdict);
    if (path.filename() == "__pycache__") {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || path.extension() != ".py") continue;
    if (files.size() == kMaxEngineFiles)
      throw Failure(root.string() + ": more than 256 engine files", kExitVerdict);
    files.emplace_back(path.lexically_relative(root).generic_string(),
                       ReadInputFile(path, path.string()));
  }
  return files;
}

}  // namespace

bool EngineMayInherit(const std::string& name) {
  static const char* const kNames[] = {"PATH",
                                       "HOME",
                                       "TMPDIR",
                                       "LANG",
                                       "TZ",
                                       "USER",
                                       "LOGNAME",
                                       "LD_LIBRARY_PATH",
                                       "RANK",
                                       "WORLD_SIZE",
                                       "LOCAL_RANK",
                                       "LOCAL_WORLD_SIZE",
                                       "GROUP_RANK",
                                       "MASTER_ADDR",
                                       "MASTER_PORT",
                                       "OMP_NUM_THREADS",
                                       "CUBLAS_WORKSPACE_CONFIG",
                                       "TRAINLOCK_ENGINE_DIST_TIMEOUT",
                                       "TRAINLOCK_NODE_NAME"};
  static const char* const kPrefixes[] = {"CUDA_",  "NCCL_", "NVIDIA_", "GLOO_",
                                          "TORCH_", "HF_",   "SLURM_",  "LC_"};
  for (const char* n : kNames)
    if (name == n) return true;
  // A credential is never handed on: the engines train from verified local files and never
  // reach the Hub (HF_TOKEN, HF_TOKEN_PATH would otherwise pass as HF_*).
  if (name.find("TOKEN") != std::string::npos) return false;
  for (const char* p : kPrefixes)
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

std::map<std::string, std::string> EngineEnvironment() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const size_t eq = text.find('=');
    if (eq != std::string::npos && EngineMayInherit(text.substr(0, eq)))
      env[text.substr(0, eq)] = text.substr(eq + 1);
  }
  env["HF_HUB_OFFLINE"] = "1";  // nothing an engine imports may fetch what the lock did not pin
  return env;
}

fs::path InstallVerifiedEngine(const Lockfile& lock, const fs::path& work_dir) {
  std::vector<std::pair<std::string, std::string>> files;
  std::string origin;
  if (fs::is_directory(kEnginesInImage)) {
    files = ReadInstalledEngine(kEnginesInImage);
    origin = kEnginesInImage;
  } else {
    for (const EmbeddedFile& f : EmbeddedPythonEngineFiles())
      files.emplace_back(std::string(f.name), std::string(f.contents));
    origin = "this validator's copy";
  }
  if (files.empty())
    throw Failure("no Python engine files (" + origin + "): this validator was built without them",
                  kExitEnvironment);
  std::vector<EmbeddedFile> views;
  for (const auto& [name, contents] : files) views.push_back({name, contents});
  const std::string sha = PythonEngineSha256(views);
  if (sha != lock.validate.engine_sha256) {
    throw Failure("the Python engine files (" + origin + ", sha256 " + sha.substr(0, 12) +
                      "...) are not the ones the lock pins (validate.engine-sha256 " +
                      lock.validate.engine_sha256.substr(0, 12) +
                      "...): re-lock with this trainlock, or use the image built from the lock",
                  kExitVerdict);
  }
  const fs::path dir = work_dir / "engine";
  for (const auto& [name, contents] : files) {
    fs::create_directories((dir / name).parent_path());
    WriteFileAtomically(dir / name, contents);
  }
  return dir;
}

fs::path EnginePython(const std::string& requested) {
  std::vector<std::string> tried;
  auto executable = [](const std::string& p) { return ::access(p.c_str(), X_OK) == 0; };
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env ? path_env : kDefaultPath;
  std::vector<std::string> candidates;
  if (!requested.empty()) {
    candidates = ProgramCandidates(requested, path);
  } else {
    candidates.push_back(kPythonInImage);
    for (const std::string& c : ProgramCandidates("python3", path)) candidates.push_back(c);
  }
  for (const std::string& c : candidates) {
    if (executable(c) && fs::is_regular_file(c)) return c;
  }
  throw Failure(
      "no Python to run the engine: tried " +
          (requested.empty() ? std::string(kPythonInImage) + " and python3 on PATH" : requested) +
          " (--python names another)",
      kExitEnvironment);
}

std::vector<std::string> IsolatedPythonOptions(const fs::path& pycache) {
  // -I: no working directory, PYTHON* variables or user site on the path; -S: no site module,
  // so no .pth file runs; -u: events unbuffered; the prefix: bytecode of the run's own, so a
  // planted __pycache__/*.pyc in the verified trees is never read (and the copy stays as
  // verified).
  return {"-I", "-S", "-u", "-X", "pycache_prefix=" + pycache.string()};
}

std::string EngineSysPathValue(const std::vector<std::string>& sys_path) {
  std::string value;
  for (const std::string& p : sys_path) value += (value.empty() ? "" : ":") + p;
  return value;
}

EngineLaunch EngineCommand(const std::string& engine, const fs::path& python,
                           const fs::path& package_dir, const std::vector<std::string>& sys_path,
                           const std::vector<std::string>& common,
                           const std::vector<std::string>& extra) {
  EngineLaunch launch;
  if (engine == "native") {
    launch.argv = {RunningExecutable().string(), "worker"};
  } else {
    // isolated.py (part of the verified package) sets sys.path itself.
    launch.python = true;
    launch.cwd = package_dir.parent_path();
    launch.argv = {python.string()};
    for (const std::string& option : IsolatedPythonOptions(launch.cwd / "pycache"))
      launch.argv.push_back(option);
    for (const std::string& arg : {(package_dir / "trainlock_engine" / "isolated.py").string(),
                                   std::string("--engine"), engine})
      launch.argv.push_back(arg);
    launch.clean_env = true;
    launch.env = EngineEnvironment();
    if (!sys_path.empty()) launch.env[kEngineSysPathVariable] = EngineSysPathValue(sys_path);
  }
  launch.argv.insert(launch.argv.end(), common.begin(), common.end());
  launch.argv.insert(launch.argv.end(), extra.begin(), extra.end());
  return launch;
}

}  // namespace trainlock::validate
