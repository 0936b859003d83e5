// `trainlock-validate`: the in-container validator's command line. The default command
// validates a project; the hidden `worker` subcommand is how the validator runs the
// processes of its own resume test.
#include <CLI/CLI.hpp>

#include <iostream>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/progress_option.h"
#include "base/version_info.h"
#include "project/artifact_paths.h"
#include "project/check_ids.h"
#include "project/project.h"
#include "coordinator/validate.h"
#include "worker/worker.h"

namespace {

using namespace trainlock;
using namespace trainlock::validate;

int Main(int argc, char** argv) {
  CLI::App app{
      "trainlock-validate: prove this node and image can run the locked training job.\n"
      "Reads DIR/trainlock.lock and its training config, runs every check (node probes,\n"
      "pinned data, custom ops, one measured training step, a train -> checkpoint -> SIGKILL\n"
      "-> restore -> resume round trip that must be bitwise equal to an uninterrupted run,\n"
      "eval agreement, checkpoint portability) and writes report.json\n"
      "(trainlock.report/v1). Exit 0 pass, 1 fail, 2 bad input, 3 environment failure."};
  app.set_version_flag("--version", std::string(kTrainlockVersion) + " (torch " +
                                        BuiltTorchVersion() + ", " + BuiltTorchFlavour() + ")");
  ValidateOptions v;
  std::string project = ".", out, ckpt, work, control = "none";
  app.add_option("DIR", project,
                 "Project directory (holding trainlock.lock), or its trainlock.lock")
      ->transform(CLI::Validator(ProjectDirFromArgument, "DIR", "project directory"))
      ->capture_default_str();
  app.add_option("--out,-o", out,
                 "Where to write the report (default: DIR/.trainlock/reports/report.json, where "
                 "`trainlock gate` looks)");
  app.add_option("--checkpoint-dir", ckpt,
                 "Checkpoint storage to test (default: the lock's validate.checkpoint-dir, else "
                 "the work dir)");
  app.add_option("--work-dir", work,
                 "Directory for worker results (default: a fresh temporary one)");
  app.add_flag("--keep-work", v.keep_work, "Keep the work directory and checkpoints afterwards");
  app.add_option("--device", v.device, "auto, cpu or cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--threads", v.threads, "CPU threads per process (0: LibTorch's default)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--timeout", v.timeout_s,
                 "Seconds each worker process may run before it is killed")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_flag("--json", v.json, "Print the report JSON instead of the summary");
  AddProgressOption(app, v.progress, "each phase and each check as it completes");
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "No progress on stderr (the same as --progress none)");
  app.add_flag("-v,--verbose", v.verbose,
               "The summary shows each check's measurements (the report's metrics) under it");
  app.add_flag("--allow-drift", v.allow_drift,
               "Validate although the lock is stale or the config changed since it was made; "
               "the drift is recorded in the report");
  std::string nproc;
  app.add_option("--nproc", nproc,
                 "Start N ranks (auto: one per visible GPU) that join comm.allreduce and comm.ddp; "
                 "under torchrun or srun the launcher's RANK/WORLD_SIZE or SLURM_* are used");
  app.add_option("--join-timeout", v.join_timeout_s,
                 "Seconds every rank has to join the rendezvous")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--collective-timeout", v.collective_timeout_s,
                 "Seconds one collective may take before the ranks give up")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--comm-max-mib", v.comm_max_mib,
                 "Largest all-reduce in MiB (default 1024 on GPUs, 16 on CPU)")
      ->check(CLI::Range(1, 65536));
  app.add_option("--only", v.only, "Run only these checks (ids); the others are skipped")
      ->delimiter(',')
      ->check(CLI::IsMember(std::vector<std::string>(kCheckIds.begin(), kCheckIds.end())));
  std::string sign_key;
  app.add_option("--sign", sign_key,
                 "Sign the report with this Ed25519 private key (PEM, from `trainlock keygen`); "
                 "`trainlock gate --key` verifies it");
  app.add_option("--negative-control", control,
                 "Deliberately break the resume to prove the check fails: rng (skip RNG restore), "
                 "data (skip data-loader restore), corrupt (flip a checkpoint byte)")
      ->check(CLI::IsMember({"none", "rng", "data", "corrupt"}))
      ->capture_default_str();

  WorkerOptions w;
  std::string w_project, w_ckpt, w_result, w_final;
  CLI::App* worker = app.add_subcommand("worker", "internal: one process of the resume test");
  worker->group("");  // hidden from --help
  worker->add_option("--role", w.role)->check(CLI::IsMember({"train", "portable", "node", "ops"}));
  worker->add_option("--project", w_project);
  worker->add_option("--checkpoint-root", w_ckpt);
  worker->add_option("--result", w_result)->required();
  worker->add_option("--final-state", w_final);
  worker->add_option("--steps", w.steps);
  worker->add_option("--save-at", w.save_at);
  worker->add_option("--measure-step", w.measure_step);
  worker->add_option("--keep-last", w.keep_last);
  worker->add_flag("--restore", w.restore);
  worker->add_flag("!--no-restore-rng", w.restore_rng);
  worker->add_flag("!--no-restore-data", w.restore_data);
  worker->add_option("--device", w.device);
  worker->add_option("--threads", w.threads);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }
  if (worker->parsed()) {
    w.project = w_project;
    w.checkpoint_root = w_ckpt;
    w.result = w_result;
    w.final_state = w_final;
    return RunWorker(w);
  }
  v.project = project;
  v.out = out.empty() ? DefaultReportPath(project) : std::filesystem::path(out);
  v.checkpoint_dir = ckpt;
  v.work_dir = work;
  v.sign_key = sign_key;
  if (quiet) v.progress = "none";
  v.argv.assign(argv, argv + argc);
  if (nproc == "auto") {
    v.nproc = -1;
  } else if (!nproc.empty()) {
    char* end = nullptr;
    long n = std::strtol(nproc.c_str(), &end, 10);
    if (*end != '\0' || n < 1 || n > 1024) {
      std::cerr << "trainlock-validate: error: --nproc: '" << nproc
                << "' is not auto or a count in [1, 1024]\n";
      return kExitBadInput;
    }
    v.nproc = static_cast<int>(n);
  }
  v.negative_control = control == "rng"       ? NegativeControl::kSkipRngRestore
                       : control == "data"    ? NegativeControl::kSkipDataRestore
                       : control == "corrupt" ? NegativeControl::kCorruptCheckpoint
                                              : NegativeControl::kNone;
  return RunValidate(v);
}

}  // namespace

int main(int argc, char** argv) {
  return trainlock::RunWithExitCodes("trainlock-validate", [&] { return Main(argc, argv); });
}
