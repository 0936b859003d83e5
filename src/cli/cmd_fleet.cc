// `trainlock fleet k8s|slurm DIR --nodes N` writes the Kubernetes Job or sbatch script that
// validates N nodes in the lock's image; `trainlock fleet summarize DIR` tables the reports
// they wrote and exits 1 when any node failed (fleet.h).
#include <iostream>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "base/time_text.h"
#include "cli/commands.h"
#include "fleet/fleet.h"
#include "project/project.h"

namespace trainlock::cli {
namespace {

struct FleetScriptOptions {
  std::string dir = ".";
  std::string out;      // "" = stdout
  std::string timeout;  // seconds, or a duration ("2h", "90m")
  FleetOptions fleet;
};

int64_t ParseTimeout(const std::string& text) {
  if (text.empty()) return kDefaultFleetTimeoutS;
  if (text.find_first_not_of("0123456789") == std::string::npos && text.size() <= 9)
    return std::stoll(text);
  if (std::optional<int64_t> seconds = ParseDurationSeconds(text)) return *seconds;
  throw InputError(Diagnostic{
      "--timeout", {}, "not a duration: " + Quoted(text), "seconds (7200) or e.g. 2h, 90m, 1h30m"});
}

int WriteFleetScript(const FleetScriptOptions& o, const GlobalOptions& global,
                     std::string (*generate)(const FleetOptions&)) {
  FleetOptions requested = o.fleet;
  requested.timeout_s = ParseTimeout(o.timeout);
  Project project = LoadProject(o.dir, ManifestRequirement::kOptional);
  const std::string text = generate(ResolveFleetOptions(project, LoadCatalog(global), requested));
  if (o.out.empty()) {
    std::cout << text << std::flush;
  } else {
    WriteFileAtomically(o.out, text);
    if (!global.quiet()) std::cerr << "wrote " << o.out << "\n";
  }
  return kExitOk;
}

// The options `k8s` and `slurm` share.
void AddGenerateOptions(CLI::App* cmd, FleetScriptOptions& o) {
  cmd->add_option("DIR", o.dir, "Project directory holding trainlock.lock (or the lock file)")
      ->transform(ProjectDirArgument())
      ->capture_default_str();
  cmd->add_option("--nodes", o.fleet.nodes, "Number of nodes to validate, one run per node")
      ->required()
      ->check(CLI::Range(1, kMaxFleetNodes));
  cmd->add_option("--target", o.fleet.target, "cuda or rocm (default: the lock's only GPU target)");
  cmd->add_option("--gpus-per-node", o.fleet.gpus_per_node, "GPUs on each node")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--image", o.fleet.image,
                  "Image to run, REF@sha256:<64 hex> (default: the lock's built image for the "
                  "target)");
  cmd->add_option("--name", o.fleet.name,
                  "Job name (default: trainlock-validate-<project>; made a DNS-1123 label)");
  cmd->add_option("--timeout", o.timeout,
                  "Limit for the whole job, seconds or e.g. 2h (default 2h)");
  cmd->add_option("--out", o.out, "Write to FILE (atomically) instead of stdout");
}

struct SummarizeOptions {
  std::string dir;
  int expected_nodes = 0;
  bool json = false;
};

int RunSummarize(const SummarizeOptions& o) {
  FleetSummary summary = SummarizeReports(o.dir, o.dir, o.expected_nodes);
  if (o.json) {
    // Report strings are valid UTF-8 (the parser checks); file names need not be.
    std::cout << DumpJsonOutput(FleetSummaryJson(summary)) << "\n";
  } else {
    std::cout << RenderFleetSummaryText(summary);
  }
  return summary.all_passed() ? kExitOk : kExitVerdict;
}

}  // namespace

Command RegisterFleet(CLI::App& app, const GlobalOptions& global) {
  CLI::App* fleet = app.add_subcommand(
      "fleet", "Validate many nodes: generate a Kubernetes Job or Slurm script, summarise reports");
  fleet->require_subcommand(1);

  auto k8s = std::make_shared<FleetScriptOptions>();
  CLI::App* k8s_cmd = fleet->add_subcommand(
      "k8s",
      "Write a Kubernetes batch/v1 indexed Job validating --nodes nodes: one pod per node\n"
      "(required pod anti-affinity on kubernetes.io/hostname) on nodes of the lock's\n"
      "accelerators (nvidia.com/gpu.product), all --gpus-per-node GPUs (nvidia.com/gpu or\n"
      "amd.com/gpu) and CPU and memory requests, the lock's image by digest running\n"
      "`trainlock-validate " +
          std::string(kProjectInImage) +
          " --nproc auto --out /reports/<node>.json` and printing\n"
          "the report to the log, TRAINLOCK_NODE_NAME from the downward API, /dev/shm in memory,\n"
          "no retries, restartPolicy Never.");
  AddGenerateOptions(k8s_cmd, *k8s);
  k8s_cmd->add_option("--reports-pvc", k8s->fleet.reports_pvc,
                      "PersistentVolumeClaim (ReadWriteMany) for the reports (default: an "
                      "emptyDir; the reports leave through the pods' logs)");
  k8s_cmd->add_option("--cpu", k8s->fleet.cpu_request, "CPU cores to request (default 4 per GPU)")
      ->check(CLI::Range(1, 1024));
  k8s_cmd
      ->add_option("--memory-gib", k8s->fleet.memory_request_gib,
                   "Memory to request, GiB (default per GPU: 12 bytes a parameter for the "
                   "checkpoint staging + 4 GiB)")
      ->check(CLI::Range(1, 65536));
  k8s_cmd->add_option("--namespace", k8s->fleet.k8s_namespace, "Namespace of the Job");

  auto slurm = std::make_shared<FleetScriptOptions>();
  CLI::App* slurm_cmd = fleet->add_subcommand(
      "slurm",
      "Write an sbatch script validating --nodes nodes: one task per node with all GPUs,\n"
      "exclusive, the lock's image by digest through pyxis/enroot (an Apptainer line in a\n"
      "comment), each node writing <reports>/<hostname>.json, then `trainlock fleet summarize`.");
  AddGenerateOptions(slurm_cmd, *slurm);
  slurm_cmd->add_option("--reports-dir", slurm->fleet.reports_dir,
                        "Reports directory on a shared filesystem (default: "
                        "$SLURM_SUBMIT_DIR/trainlock-reports/<job id>)");
  slurm_cmd->add_option("--partition", slurm->fleet.partition,
                        "Slurm partition (#SBATCH --partition)");
  slurm_cmd->add_option("--account", slurm->fleet.account, "Slurm account (#SBATCH --account)");

  auto summarize = std::make_shared<SummarizeOptions>();
  CLI::App* summarize_cmd = fleet->add_subcommand(
      "summarize",
      "Print one row per report in DIR (every *.json, not recursive): node, verdict, GPUs,\n"
      "duration, lock, failing checks (failed, errored, and required ones skipped). A file that\n"
      "is not a valid report is an `unreadable` row. Warns when nodes validated different\n"
      "locks. Exit 0 all passed, 1 any failed, unreadable or missing, 2 no DIR or no *.json.");
  summarize_cmd->add_option("DIR", summarize->dir, "Directory of <node>.json reports")->required();
  summarize_cmd
      ->add_option("--nodes", summarize->expected_nodes,
                   "Nodes expected to report; fewer reports is a failure")
      ->check(CLI::Range(1, kMaxFleetNodes));
  summarize_cmd->add_flag("--json", summarize->json, "Print the summary as JSON");

  return [&global, k8s, k8s_cmd, slurm, slurm_cmd, summarize] {
    if (k8s_cmd->parsed()) return WriteFleetScript(*k8s, global, KubernetesJobYaml);
    if (slurm_cmd->parsed()) return WriteFleetScript(*slurm, global, SlurmBatchScript);
    return RunSummarize(*summarize);
  };
}

}  // namespace trainlock::cli
