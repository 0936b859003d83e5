// How the coordinator starts one process of the round trip for the engine the lock names: the
// native engine is this binary's `worker` role; a Python engine is the shipped package
// (project/round_trip_engines.h), verified against the lock's pin and copied into the run's
// own work directory, run by the image's Python with the protocol's options (docs/validate.md,
// "The engine protocol").
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "project/project.h"

namespace trainlock::validate {

struct EngineLaunch {
  std::vector<std::string> argv;  // argv[0] a path
  std::map<std::string, std::string> env;
  bool python = false;
  // A Python engine runs isolated (docs/validate.md, "Isolation"): `env` is its whole
  // environment, its working directory the run's work directory, and it and everything it
  // starts live in a PID namespace (on a GPU, and where the kernel refuses one, a process
  // group) that ends with it.
  bool clean_env = false;
  std::filesystem::path cwd;
};

// Whether a variable of the caller's environment reaches a Python engine: the device's and
// the collectives' (CUDA_*, NCCL_*, NVIDIA_*, GLOO_*, TORCH_*, HF_*), the rank variables
// (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,
// SLURM_*), PATH, HOME, TMPDIR, LANG, LC_*, TZ, USER, LOGNAME, LD_LIBRARY_PATH (a container's
// driver libraries), OMP_NUM_THREADS, CUBLAS_WORKSPACE_CONFIG, TRAINLOCK_ENGINE_DIST_TIMEOUT,
// TRAINLOCK_NODE_NAME. Never PYTHON* (PYTHONPATH, PYTHONUSERBASE, PYTHONSTARTUP, ...), nor
// LD_PRELOAD, nor a name holding TOKEN (HF_TOKEN).
bool EngineMayInherit(const std::string& name);

// The variables of this process's environment that EngineMayInherit lets through, and
// HF_HUB_OFFLINE=1: the whole environment of a Python engine, and of the probe that asks its
// interpreter (engine_probe.h).
std::map<std::string, std::string> EngineEnvironment();

// The Python package the engines run from: the image's installed copy when there is one (the
// Containerfile installs it), else the copy compiled into this binary, after its listing
// hash (PythonEngineSha256) was found equal to the lock's validate.engine-sha256. Writes it to
// work_dir/engine and returns that directory. Throws Failure (exit 1) naming both hashes when
// the files are not the pinned ones, and Failure (exit 3) when there are none.
std::filesystem::path InstallVerifiedEngine(const Lockfile& lock,
                                            const std::filesystem::path& work_dir);

// The interpreter a Python engine runs under: `requested` when given (an executable path or
// a name on PATH), else the image's venv Python when it exists, else python3 on PATH. Throws
// Failure (exit 3) naming what was tried when there is none.
std::filesystem::path EnginePython(const std::string& requested);

// The variable that hands a Python engine (and the probe of its interpreter) the sys.path an
// image recorded for it (checks/python_files.h); isolated.py reads it.
inline constexpr const char* kEngineSysPathVariable = "TRAINLOCK_ENGINE_SYS_PATH";

// The isolated interpreter's options before its script or -c: `-I -S -u`, and bytecode read
// and written only under `pycache` (never a `__pycache__` of the interpreter's trees).
std::vector<std::string> IsolatedPythonOptions(const std::filesystem::path& pycache);

// The command of one process: `common` are the protocol's options every process of this run
// gets, `extra` those of this process (--steps, --save-at, --restore, ...). A Python engine is
// `python IsolatedPythonOptions(<work>/pycache) <package_dir>/trainlock_engine/isolated.py`,
// with the caller's environment filtered through EngineMayInherit, `sys_path` (when not empty:
// the image's recorded path) in kEngineSysPathVariable, and package_dir's parent (the run's
// work directory, <work>) as its working directory.
EngineLaunch EngineCommand(const std::string& engine, const std::filesystem::path& python,
                           const std::filesystem::path& package_dir,
                           const std::vector<std::string>& sys_path,
                           const std::vector<std::string>& common,
                           const std::vector<std::string>& extra);

// `sys_path` as the value of kEngineSysPathVariable (':'-separated).
std::string EngineSysPathValue(const std::vector<std::string>& sys_path);

}  // namespace trainlock::validate
