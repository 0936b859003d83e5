// `trainlock fleet k8s|slurm DIR --nodes N` writes the Kubernetes Job or sbatch script that
// validates N nodes in the lock's image; `trainlock fleet summarize DIR` tables the reports
// they wrote and exits 1 when any node failed (fleet.h).
#include <algorithm>
#include <chrono>
#include <iostream>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "base/time_text.h"
#include "cli/commands.h"
#include "fleet/fleet.h"
#include "project/project.h"
#include "report/report_signing.h"

namespace trainlock::cli {
namespace {

struct FleetScriptOptions {
  std::string dir = ".";
  std::string out;                 // "" = stdout
  std::string timeout;             // seconds, or a duration ("2h", "90m")
  bool prolog = false;             // slurm: the node gate instead of the validation job
  bool npd_plugin = false;         // k8s: the node-problem-detector plugin instead
  bool long_run_affinity = false;  // k8s: the long run's nodeAffinity instead
  bool revalidate = false;         // slurm: the operator's way back for --node nodes
  bool watch_daemonset = false;    // k8s: the DaemonSet running `trainlock watch` instead
  FleetOptions fleet;
};

std::string LongRunAffinityNow(const FleetOptions& options) {
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  return KubernetesLongRunAffinityYaml(options, now);
}

int64_t ParseTimeout(const std::string& text) {
  if (text.empty()) return kDefaultFleetTimeoutS;
  if (text.find_first_not_of("0123456789") == std::string::npos && text.size() <= 9)
    return std::stoll(text);
  if (std::optional<int64_t> seconds = ParseDurationSeconds(text)) return *seconds;
  throw InputError(Diagnostic{
      "--timeout", {}, "not a duration: " + Quoted(text), "seconds (7200) or e.g. 2h, 90m, 1h30m"});
}

// --revalidate runs the validation the gate trusts: on named nodes, its signed reports where
// the gate reads them.
void CheckRevalidate(const FleetOptions& o) {
  const char* missing = o.node_names.empty()    ? "--node"
                        : o.reports_dir.empty() ? "--reports-dir"
                        : o.sign_key.empty()    ? "--sign-key"
                                                : nullptr;
  if (missing == nullptr) return;
  throw InputError(Diagnostic{missing,
                              {},
                              "--revalidate needs it: the nodes to bring back, the gate's "
                              "reports directory and the validator's signing key",
                              ""});
}

// --report-only changes what a gate does to its nodes: only a gate has it.
void CheckReportOnly(const FleetScriptOptions& o) {
  if (!o.fleet.report_only || o.prolog || o.fleet.label_nodes) return;
  throw InputError(
      Diagnostic{"--report-only",
                 {},
                 "only a node gate has a report-only mode",
                 o.fleet.slurm ? "give it with --prolog" : "give it with --label-nodes"});
}

int WriteFleetScript(const FleetScriptOptions& o, const GlobalOptions& global,
                     std::string (*generate)(const FleetOptions&)) {
  FleetOptions requested = o.fleet;
  requested.timeout_s = ParseTimeout(o.timeout);
  if (requested.nodes == 0 && !requested.node_names.empty())
    requested.nodes = static_cast<int>(requested.node_names.size());
  const bool node_gate = o.prolog || o.npd_plugin;
  if (o.watch_daemonset) {
    requested.nodes = 1;  // every node
    generate = KubernetesWatchDaemonSetYaml;
  } else if (node_gate || o.long_run_affinity) {
    requested.nodes = 1;  // these run on, or select, whichever node they are given
    if (o.prolog) generate = SlurmNodeGateScript;
    if (o.npd_plugin) generate = NodeProblemDetectorPlugin;
    if (o.long_run_affinity) generate = LongRunAffinityNow;
  } else if (o.revalidate) {
    CheckRevalidate(requested);
    generate = SlurmRevalidateScript;
  }
  if (!node_gate && !o.long_run_affinity && requested.nodes == 0) {
    throw InputError(Diagnostic{"--nodes", {}, "is required: how many nodes to validate", ""});
  }
  CheckReportOnly(o);
  Project project = LoadProject(o.dir, ManifestRequirement::kOptional);
  FleetOptions resolved = ResolveFleetOptions(project, LoadCatalog(global), requested);
  if (node_gate) ResolveNodeGate(project, resolved);
  const std::string text = generate(resolved);
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
  cmd->add_option("--nodes", o.fleet.nodes,
                  "Number of nodes to validate, one run per node (required, but by the node gates; "
                  "with --node, their count)")
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
  std::vector<std::string> node_names;  // the round's nodes
  std::string since;                    // the round's start, RFC 3339
  std::string key;                      // verifies each report's start time
  bool allow_unsigned = false;
  std::string lock;  // --lock: its golden pins judge the reports under their keys
  bool json = false;
};

// The round's nodes: each once (an empty name, as a trailing comma leaves, is no name), and no
// fewer than --nodes says when both are given.
std::vector<std::string> RoundNodes(const SummarizeOptions& o) {
  std::vector<std::string> nodes;
  for (const std::string& node : o.node_names) {
    if (node.empty()) continue;
    if (std::find(nodes.begin(), nodes.end(), node) != nodes.end())
      throw InputError(
          Diagnostic{"--node", {}, "names node " + Quoted(node) + " twice", "name each node once"});
    nodes.push_back(node);
  }
  return nodes;
}

// The key every counted report must be signed with: a public key, or the signing key itself
// (the generated Slurm job has that one at hand), whose public half is used.
std::string RoundKey(const std::string& file) {
  const std::string pem = ReadInputFile(file, file);
  try {
    const bool is_private = pem.find("PRIVATE KEY") != std::string::npos;
    const std::string public_pem = is_private ? PublicPemOf(pem) : pem;
    PublicKeyId(public_pem);  // refuses what is no Ed25519 public key
    return public_pem;
  } catch (const KeyError& e) {
    throw InputError(Diagnostic{file, {}, e.what(), "give the .pub file from keygen"});
  }
}

FleetRound RoundOf(const SummarizeOptions& o) {
  FleetRound round;
  round.expected_nodes = o.expected_nodes;
  round.nodes = RoundNodes(o);
  round.allow_unsigned = o.allow_unsigned;
  if (!o.key.empty()) round.public_key_pem = RoundKey(o.key);
  if (o.since.empty()) return round;
  round.since_s = ParseRfc3339(o.since);
  if (!round.since_s)
    throw InputError(Diagnostic{"--since",
                                {},
                                "not an RFC 3339 time: " + Quoted(o.since),
                                "e.g. 2026-12-07T16:00:00Z (date -u +%Y-%m-%dT%H:%M:%SZ)"});
  round.since = o.since;
  if (!round.public_key_pem && !round.allow_unsigned)
    throw InputError(Diagnostic{"--since",
                                {},
                                "needs --key: a report's start time is trusted only under its "
                                "signature",
                                "give --key PUB, or --allow-unsigned to take unsigned reports at "
                                "their word"});
  return round;
}

int RunSummarize(const SummarizeOptions& o) {
  const FleetRound round = RoundOf(o);
  // --lock: the lock alone (as a node holds it), for its golden pins.
  std::optional<Project> project;
  if (!o.lock.empty()) {
    project = LoadProject(LockDirOf(o.lock), ManifestRequirement::kLockAlone);
    RequireLock(*project,
                "cannot read: no such file: --lock names the lock whose golden digests "
                "the reports are held to");
  }
  FleetSummary summary = SummarizeReports(o.dir, o.dir, round, project ? &*project->lock : nullptr);
  if (o.json) {
    // Report strings are valid UTF-8 (the parser checks); file names need not be.
    std::cout << DumpJsonOutput(FleetSummaryJson(summary)) << "\n";
  } else {
    std::cout << RenderFleetSummaryText(summary);
  }
  return summary.all_passed() ? kExitOk : kExitVerdict;
}

// `fleet k8s`: the Job's options, and the node-problem-detector plugin and affinity it can
// write instead.
CLI::App* AddK8sCommand(CLI::App* fleet, FleetScriptOptions& k8s) {
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
  AddGenerateOptions(k8s_cmd, k8s);
  k8s_cmd->add_option("--reports-pvc", k8s.fleet.reports_pvc,
                      "PersistentVolumeClaim (ReadWriteMany) for the reports (default: an "
                      "emptyDir; the reports leave through the pods' logs)");
  k8s_cmd->add_option("--cpu", k8s.fleet.cpu_request, "CPU cores to request (default 4 per GPU)")
      ->check(CLI::Range(1, 1024));
  k8s_cmd
      ->add_option("--memory-gib", k8s.fleet.memory_request_gib,
                   "Memory to request, GiB (default per GPU: 12 bytes a parameter for the "
                   "checkpoint staging + 4 GiB)")
      ->check(CLI::Range(1, 65536));
  k8s_cmd->add_option("--namespace", k8s.fleet.k8s_namespace, "Namespace of the Job");
  k8s_cmd
      ->add_option("--node", k8s.fleet.node_names,
                   "Validate these nodes (kubernetes.io/hostname; repeated or a,b), e.g. the "
                   "freshly provisioned ones; --nodes defaults to their count")
      ->delimiter(',');
  k8s_cmd
      ->add_option("--image-pull-secret", k8s.fleet.image_pull_secrets,
                   "imagePullSecrets of the pods, for a private registry (repeated or a,b)")
      ->delimiter(',');
  k8s_cmd->add_flag("--label-nodes", k8s.fleet.label_nodes,
                    "After validating, each pod gates its signed report in the locked image and "
                    "labels its node (trainlock.io/validated=pass, lock, image, valid-until) or "
                    "taints it (trainlock.io/gate=<topic>:NoSchedule); adds the ServiceAccount "
                    "and RBAC. Needs --kubectl-image and --keys-secret");
  k8s_cmd->add_option("--kubectl-image", k8s.fleet.kubectl_image,
                      "--label-nodes: an image with kubectl and sh, REF@sha256:<64 hex>");
  k8s_cmd->add_option("--keys-secret", k8s.fleet.keys_secret,
                      "--label-nodes: the Secret holding trainlock.key (signs) and trainlock.pub "
                      "(the gate's key)");
  k8s_cmd
      ->add_option("--service-account", k8s.fleet.service_account,
                   "--label-nodes: the pods' ServiceAccount")
      ->capture_default_str();
  k8s_cmd->add_flag("--long-run-affinity", k8s.long_run_affinity,
                    "Write instead the nodeAffinity a long run's pods need: nodes labelled "
                    "passing this lock and image, valid until after now");
  k8s_cmd->add_flag("--watch-daemonset", k8s.watch_daemonset,
                    "Write instead the DaemonSet running `trainlock watch --revoke k8s` on every "
                    "node, with its ServiceAccount and RBAC; needs --watch-image");
  k8s_cmd->add_option("--watch-image", k8s.fleet.watch_image,
                      "--watch-daemonset: an image with trainlock and kubectl, "
                      "REF@sha256:<64 hex>");
  k8s_cmd->add_flag("--npd-plugin", k8s.npd_plugin,
                    "Write instead a node-problem-detector custom plugin gating the node's "
                    "report (exit 0 ok, 1 problem, 2 unknown); needs --key and --reports-dir");
  k8s_cmd->add_option("--key", k8s.fleet.key,
                      "--npd-plugin: the Ed25519 public key (PEM) on the node, absolute");
  k8s_cmd->add_option("--reports-dir", k8s.fleet.reports_dir,
                      "--npd-plugin: the directory of <node>.json reports on the node, absolute");
  k8s_cmd->add_option("--node-lock", k8s.fleet.node_lock,
                      "--npd-plugin: trainlock.lock as installed on the node (default: " +
                          NodeLockPath("<project>") + "; not in a git work tree)");
  k8s_cmd
      ->add_option("--watch-state", k8s.fleet.watch_state,
                   "--npd-plugin: where `trainlock watch` keeps the node's revocation record")
      ->capture_default_str();
  k8s_cmd->add_option("--trainlock", k8s.fleet.trainlock_bin,
                      "--npd-plugin: the trainlock program on the node (default: on PATH)");
  k8s_cmd->add_flag("--report-only", k8s.fleet.report_only,
                    "--label-nodes: gate each node as always but label and taint nothing: the "
                    "label container logs what it would label or taint, with the reason");
  return k8s_cmd;
}

// `fleet slurm`: the sbatch script's options, and the prolog and revalidation it can write
// instead.
CLI::App* AddSlurmCommand(CLI::App* fleet, FleetScriptOptions& slurm) {
  CLI::App* slurm_cmd = fleet->add_subcommand(
      "slurm",
      "Write an sbatch script validating --nodes nodes: one task per node with all GPUs,\n"
      "exclusive, the lock's image by digest through pyxis/enroot (an Apptainer line in a\n"
      "comment), each node writing <reports>/<hostname>.json, then `trainlock fleet summarize`.");
  AddGenerateOptions(slurm_cmd, slurm);
  slurm_cmd->add_option("--reports-dir", slurm.fleet.reports_dir,
                        "Reports directory on a shared filesystem (default: "
                        "$SLURM_SUBMIT_DIR/trainlock-reports/<job id>)");
  slurm_cmd->add_option("--partition", slurm.fleet.partition,
                        "Slurm partition (#SBATCH --partition)");
  slurm_cmd->add_option("--account", slurm.fleet.account, "Slurm account (#SBATCH --account)");
  slurm.fleet.slurm = true;
  slurm_cmd
      ->add_option("--node", slurm.fleet.node_names,
                   "Validate these nodes (#SBATCH --nodelist; repeated or a,b), each once; --nodes "
                   "defaults to their count")
      ->delimiter(',');
  slurm_cmd->add_option("--reservation", slurm.fleet.reservation,
                        "The validation job's reservation (#SBATCH --reservation); --prolog and "
                        "--revalidate: the operators' revalidation reservation (default " +
                            std::string(kDefaultRevalidationReservation) + ")");
  slurm_cmd->add_flag(
      "--revalidate", slurm.revalidate,
      "Write instead the operator's script bringing --node nodes back (drained by the gate, or\n"
      "new): reserve them in the revalidation reservation, resume those a trainlock reason\n"
      "drained, run the validation job there (sbatch --wait), delete the reservation. Needs\n"
      "--node, --reports-dir and --sign-key.");
  slurm_cmd->add_option("--sign-key", slurm.fleet.sign_key,
                        "The validator signs each report with this Ed25519 private key (an "
                        "absolute path every node reads; mounted read-only)");
  slurm_cmd->add_flag(
      "--prolog", slurm.prolog,
      "Write the node gate instead: a bash script for slurm.conf's Prolog and\n"
      "HealthCheckProgram that gates <reports-dir>/<node>.json with `trainlock gate --key\n"
      "--image --node` (and the lock's valid-for, default 24h); a refusal drains the node\n"
      "with Reason=\"trainlock: <topic>: <why>\" and exits 1 (the job is requeued held), a\n"
      "pass resumes a node only trainlock drained. Needs --key and --reports-dir.");
  slurm_cmd->add_option("--key", slurm.fleet.key,
                        "--prolog: the Ed25519 public key (PEM) reports must be signed with, as "
                        "an absolute path every node reads");
  slurm_cmd->add_option(
      "--node-lock", slurm.fleet.node_lock,
      "--prolog: trainlock.lock as installed on the nodes (default: " + NodeLockPath("<project>") +
          "; not in a git work tree); the validation job's summarize reads it "
          "when the lock pins golden digests");
  slurm_cmd
      ->add_option("--watch-state", slurm.fleet.watch_state,
                   "--prolog: where `trainlock watch` keeps each node's revocation record")
      ->capture_default_str();
  slurm_cmd->add_option("--trainlock", slurm.fleet.trainlock_bin,
                        "--prolog: the trainlock program on the nodes (default: trainlock on "
                        "PATH)");
  slurm_cmd->add_flag("--report-only", slurm.fleet.report_only,
                      "--prolog: decide as always but drain, resume and requeue nothing: log each "
                      "drain or resume it would make, with the reason, to --gate-log and syslog "
                      "(a rollout's first step, on a staging partition)");
  slurm_cmd
      ->add_option("--gate-log", slurm.fleet.gate_log,
                   "--prolog --report-only: the file on each node the gate appends to")
      ->capture_default_str();
  return slurm_cmd;
}

// `fleet summarize`: one row per report.
CLI::App* AddSummarizeCommand(CLI::App* fleet, SummarizeOptions& summarize) {
  CLI::App* summarize_cmd = fleet->add_subcommand(
      "summarize",
      "Print one row per report in DIR (every *.json, not recursive): node, verdict, GPUs,\n"
      "duration, lock, failing checks (failed, errored, and required ones skipped). A file that\n"
      "is not a valid report is an `unreadable` row. Warns when nodes validated different\n"
      "locks. A round (--since, --node) counts only reports its nodes started after it began,\n"
      "by their signed start time; a named node without one is missing, any other report is\n"
      "shown as not in this round. With --lock, reports are held to its golden pins.\n"
      "Exit 0 all passed, 1 any failed, unreadable or missing, 2\n"
      "no DIR or no *.json.");
  summarize_cmd->add_option("DIR", summarize.dir, "Directory of <node>.json reports")->required();
  summarize_cmd
      ->add_option("--nodes", summarize.expected_nodes,
                   "Nodes expected to report; fewer reports is a failure")
      ->check(CLI::Range(1, kMaxFleetNodes));
  summarize_cmd
      ->add_option("--node", summarize.node_names,
                   "The round's nodes (repeated or a,b): only their reports count, and one "
                   "without a report of the round is missing")
      ->delimiter(',');
  summarize_cmd->add_option("--since", summarize.since,
                            "The round's start (RFC 3339): a report that started before it is "
                            "of an earlier round; needs --key or --allow-unsigned");
  summarize_cmd->add_option("--key", summarize.key,
                            "Ed25519 public key (PEM; or the signing key, whose public half is "
                            "used) every counted report must be signed with");
  summarize_cmd->add_flag("--allow-unsigned", summarize.allow_unsigned,
                          "Take an unsigned report's start time at its word");
  summarize_cmd->add_option("--lock", summarize.lock,
                            "The lock (trainlock.lock or its project directory): a report under "
                            "a key it pins a golden digest for (lock --golden) must have computed "
                            "that digest, as at the gate");
  summarize_cmd->add_flag("--json", summarize.json, "Print the summary as JSON");
  return summarize_cmd;
}

}  // namespace

Command RegisterFleet(CLI::App& app, const GlobalOptions& global) {
  CLI::App* fleet = app.add_subcommand(
      "fleet", "Validate many nodes: generate a Kubernetes Job or Slurm script, summarise reports");
  fleet->require_subcommand(1);
  auto k8s = std::make_shared<FleetScriptOptions>();
  auto slurm = std::make_shared<FleetScriptOptions>();
  auto summarize = std::make_shared<SummarizeOptions>();
  CLI::App* k8s_cmd = AddK8sCommand(fleet, *k8s);
  CLI::App* slurm_cmd = AddSlurmCommand(fleet, *slurm);
  AddSummarizeCommand(fleet, *summarize);

  return [&global, k8s, k8s_cmd, slurm, slurm_cmd, summarize] {
    if (k8s_cmd->parsed()) return WriteFleetScript(*k8s, global, KubernetesJobYaml);
    if (slurm_cmd->parsed()) return WriteFleetScript(*slurm, global, SlurmBatchScript);
    return RunSummarize(*summarize);
  };
}

}  // namespace trainlock::cli
