// Validating nodes as a fleet: the Kubernetes Job and the Slurm batch script that run
// `trainlock-validate` once on every node in the lock's built image, and the summary of the
// reports they leave behind (one row per node, pass/fail and the failing checks).
//
// Generation is pure (options in, text out); SummarizeReports reads a directory. Everything a
// user typed is checked in ResolveFleetOptions, so the generators never see a tag-only image,
// a name Kubernetes would reject or an unpinned reference.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compat/catalog.h"
#include "fleet/fleet_round.h"
#include "image/in_image_paths.h"
#include "project/project.h"
#include "report/golden_compare.h"
#include "report/golden_digest.h"
#include "report/golden_pin.h"

namespace trainlock {

// Where `trainlock image generate`'s Containerfile installs the project (lock, manifest and
// training config) and the validator inside the image (images/Containerfile.in).
// Where the reports volume is mounted inside the pod or container.
inline constexpr const char* kReportsInContainer = "/reports";
// The lines around the report a Kubernetes pod prints to its log after the run: without a
// --reports-pvc the report lives in the pod's emptyDir, and `kubectl logs` is how it leaves.
inline constexpr const char* kReportLogBegin = "--- trainlock report ";
inline constexpr const char* kReportLogEnd = "--- end of trainlock report ---";
// The node label NVIDIA GPU Feature Discovery sets to the GPU's product name.
inline constexpr const char* kGpuProductLabel = "nvidia.com/gpu.product";

inline constexpr int kMaxFleetNodes = 10000;
inline constexpr int64_t kDefaultFleetTimeoutS = 2 * 3600;
// How long a passing report opens a node when the lock's [validate] names no valid-for.
inline constexpr int64_t kDefaultValidForS = 24 * 3600;
// Every drain reason and taint a node gate sets starts with this; the gate lifts only these.
inline constexpr const char* kNodeGateReasonPrefix = "trainlock:";
// Slurm: the operators' reservation a drained or new node is validated in (`fleet slurm
// --revalidate`). The gate neither gates a job of it nor drains a node in it; only root or
// SlurmUser create reservations and name their users, so no ordinary job can enter it.
inline constexpr const char* kDefaultRevalidationReservation = "trainlock-revalidate";
// Where the Slurm gate logs what it would do in report-only mode (slurmd keeps no hook output).
inline constexpr const char* kDefaultGateLog = "/var/log/trainlock-node-gate.log";
// node-problem-detector's custom plugins cut their output at max_output_length (default 80):
// the plugin's first line, the condition's message, fits in it.
inline constexpr size_t kNpdMessageLength = 80;

// What to generate. Fields marked "resolved" may be left empty by the caller;
// ResolveFleetOptions fills them from the project.
struct FleetOptions {
  int nodes = 0;                              // 1..kMaxFleetNodes
  std::string target;                         // resolved: "cuda" | "rocm"
  int gpus_per_node = 8;                      // GPUs requested and validated on each node
  std::string image;                          // resolved: "name[:tag]@sha256:<64 hex>"
  std::string name;                           // resolved: job name, a DNS-1123 label
  int64_t timeout_s = kDefaultFleetTimeoutS;  // activeDeadlineSeconds / #SBATCH --time
  std::string k8s_namespace;                  // Kubernetes: "" = the current namespace
  std::string reports_pvc;                    // Kubernetes: "" = an emptyDir, reports in the log
  int cpu_request = 0;                        // Kubernetes, resolved: cores, default 4 per GPU
  int64_t memory_request_gib = 0;             // Kubernetes, resolved: see KubernetesMemoryGiB
  // Kubernetes, resolved: nvidia.com/gpu.product values of the target's accelerators (from
  // the catalog); empty when one of them has none, and then no node selection by product.
  std::vector<std::string> gpu_products;
  std::string reports_dir;  // Slurm: "" = $SLURM_SUBMIT_DIR/trainlock-reports/<job id>
  std::string partition;    // Slurm: "" = the cluster's default partition
  std::string account;      // Slurm: "" = the user's default account
  std::string sign_key;     // Slurm: "" = unsigned reports; else the private key, absolute
  // Slurm: the validation job's #SBATCH --reservation ("" = none); the gate's and
  // --revalidate's revalidation reservation ("" = kDefaultRevalidationReservation).
  std::string reservation;
  bool slurm = false;  // node names and the reservation are Slurm's (else Kubernetes')

  // Resolved from the project, for labels and comments.
  std::string project_name;
  std::string lock_sha256;
  // Resolved: the lock pins golden digests (`lock --golden`). The Slurm job then passes
  // `--lock node_lock` (default NodeLockPath) to summarize, which holds each report to its pin.
  bool lock_pins_golden = false;
  // Resolved with lock_pins_golden: the project's lock as given (the Kubernetes round's
  // summarize reads it) and its text (--label-nodes: a ConfigMap the pods gate against, since
  // the image's copy of the lock carries no pins).
  std::string lock_path;
  std::string lock_text;

  // Node gates (SlurmNodeGateScript): where every node finds the lock, the public key reports
  // are signed for, and trainlock; all absolute paths as the nodes see them. The lock is the
  // one project file a node needs (`trainlock gate` relies on the report for the config and
  // manifest, which it holds to the lock's hashes).
  std::string node_lock;  // resolved: default NodeLockPath(project name)
  std::string key;        // required by a gate: an Ed25519 public key (PEM)
  std::string trainlock_bin = "trainlock";
  int64_t valid_for_s = 0;           // resolved: the lock's valid-for, else kDefaultValidForS
  bool valid_for_from_lock = false;  // resolved: the lock names valid-for

  // The nodes to validate by name (Kubernetes: kubernetes.io/hostname; Slurm: --nodelist;
  // --nodes defaults to their count, a name given twice is bad input), the pull secrets of a
  // private registry, and --label-nodes: after the run the pod gates its own report and labels its
  // node (kNodeLabel*) or taints it (kNodeGateTaint).
  std::vector<std::string> node_names;
  std::vector<std::string> image_pull_secrets;
  bool label_nodes = false;
  std::string kubectl_image;  // --label-nodes: an image with kubectl and sh, pinned by digest
  std::string keys_secret;    // --label-nodes: Secret with trainlock.key and trainlock.pub
  std::string service_account = "trainlock-node-labeler";

  // The gates' rollout mode: the Prolog/HealthCheckProgram and the label container decide as
  // always but only log what they would drain, resume, label or taint, and change nothing (a
  // Prolog then never requeues a job). The Slurm gate appends each such line to gate_log.
  bool report_only = false;
  std::string gate_log = kDefaultGateLog;
  // Where `trainlock watch` keeps each node's revocation record: the gates pass it to `trainlock
  // gate --watch-state`, which refuses a report older than the node's last revoking event.
  std::string watch_state = kWatchStateDir;
  std::string watch_image;  // --watch-daemonset: an image with trainlock and kubectl, by digest
};

// The node labels --label-nodes writes on a pass, which the long run's nodeAffinity requires
// (KubernetesLongRunAffinityYaml): label values hold 63 characters, so the lock and the image
// are named by their first 32 hex digits; valid-until is seconds since the epoch.
inline constexpr const char* kNodeLabelValidated = "trainlock.io/validated";  // pass | fail
inline constexpr const char* kNodeLabelLock = "trainlock.io/lock";
inline constexpr const char* kNodeLabelImage = "trainlock.io/image";
inline constexpr const char* kNodeLabelValidUntil = "trainlock.io/valid-until";
// `trainlock watch --revoke k8s` (watch/revoke_action.h): validated=revoked and the event's UTC
// time ("20261207T190239Z"), with the gate's taint, value "revoked".
inline constexpr const char* kNodeLabelRevokedAt = "trainlock.io/revoked-at";
// The taint a refusal sets (value: the gate's first topic, effect NoSchedule).
inline constexpr const char* kNodeGateTaint = "trainlock.io/gate";
inline constexpr size_t kLabelHexDigits = 32;

// Checks `requested` against the project's lock and fills the resolved fields: the target
// (default: the lock's only GPU target), the image (default: the lock's [images.<target>]),
// the name (default trainlock-validate-<project>, sanitised). Throws InputError (exit 2) for a
// missing lock, an absent or ambiguous target, no image, an image not pinned by digest, or an
// invalid namespace or claim name.
FleetOptions ResolveFleetOptions(const Project& project, const Catalog& catalog,
                                 const FleetOptions& requested);

// The host memory a node's validation asks Kubernetes for, in GiB: per GPU, the rank's
// checkpoint staging buffers (the fp32 weights and both AdamW moments, 12 bytes a parameter,
// pinned on CUDA) and 4 GiB for the rank and its worker processes (the H200 pilot's rank
// peaked at 1.0 GiB RSS before staging), rounded up.
int64_t KubernetesMemoryGiB(double parameters, int gpus_per_node);

// `text` as a DNS-1123 label (lower case, [a-z0-9-], starting and ending alphanumeric, at most
// 63 characters); "" when nothing usable remains.
std::string Dns1123Label(std::string_view text);

// A Kubernetes batch/v1 indexed Job running the validator once on each of `nodes` nodes (see
// README.md, "trainlock fleet"), as YAML with a leading comment on applying it.
std::string KubernetesJobYaml(const FleetOptions& options);

// --label-nodes: the label container's sh script. Reads /reports/gate.status and gate.txt
// (left by the validate init container), then on a pass labels $TRAINLOCK_NODE_NAME validated=
// pass, lock, image and valid-until (now + valid_for_s) and removes the gate taint; on a
// refusal labels it validated=fail, removes lock, image and valid-until, and taints it
// trainlock.io/gate=<first topic>:NoSchedule. Exits with the gate's code. With report_only it
// changes nothing: it prints what it would label or taint, with the gate's first reason, and
// exits 0.
std::string KubernetesLabelScript(const FleetOptions& options);

// The Job's header lines that wait for it and return at the first failed pod (kubectl wait
// --for=condition=complete would sit out the whole timeout when a node fails). Exit 0 when all
// `nodes` pods succeeded, 1 at the first Failed pod, 124 past `timeout_s`.
std::string KubernetesWaitScript(const FleetOptions& options);

// The nodeAffinity (YAML, to put under a long-run pod's spec.affinity) that admits only nodes
// --label-nodes labelled as passing this lock and image, valid until after `now_s`.
std::string KubernetesLongRunAffinityYaml(const FleetOptions& options, int64_t now_s);

// A node-problem-detector custom plugin (sh): gates <reports_dir>/<node>.json on the node like
// the Slurm gate, exit 0 ok, 1 problem (refused, or no report), 2 unknown (the gate could not
// decide); its first output line is the reason NPD shows on the node condition.
std::string NodeProblemDetectorPlugin(const FleetOptions& options);

// `fleet k8s --watch-daemonset`: the ServiceAccount, ClusterRole (get, list, patch nodes), its
// binding and the DaemonSet running `trainlock watch --revoke k8s` on every node in watch_image
// (pinned by digest: InputError otherwise), the host's /dev/kmsg and watch_state mounted.
std::string KubernetesWatchDaemonSetYaml(const FleetOptions& options);

// An sbatch script running the validator in the image on every node through pyxis/enroot, then
// `trainlock fleet summarize` on the reports.
std::string SlurmBatchScript(const FleetOptions& options);

// `fleet slurm --revalidate`: the operator's bash script that brings named nodes (drained by
// the gate, or never validated) back through Slurm: it reserves them for the operator in the
// revalidation reservation, resumes those only the gate drained, runs SlurmBatchScript on
// exactly them in the reservation (sbatch --wait) and deletes the reservation, after which the
// gate decides on the new reports. Requires node_names, reports_dir and sign_key.
std::string SlurmRevalidateScript(const FleetOptions& options);

// The node gate for Slurm, one bash script for both hooks: as Prolog it runs on each node
// before a job, as HealthCheckProgram every HealthCheckInterval. It gates the node's own report
// (<reports_dir>/<node>.json) with `trainlock gate --key --image --node` against the lock and its
// validity window; a refusal drains the node with "trainlock: <topic>: <why>" (never replacing
// a reason it did not set) and exits 1, so a Prolog requeues the job held; a pass resumes a node
// that only a trainlock reason drained. A job of the revalidation reservation is not gated and
// a node in it is not drained (SlurmRevalidateScript). Requires key, reports_dir and node_lock
// (absolute).
std::string SlurmNodeGateScript(const FleetOptions& options);

// Where a node gate reads the lock by default: a path of its own on every node, installed
// there (docs/fleet.md, "What each node needs"), never the checkout the gate was generated from.
std::string NodeLockPath(const std::string& project_name);

// Checks what a node gate needs (--key, --reports-dir, --node-lock, --gate-log: absolute,
// shell-safe paths; --node-lock not inside a git work tree on this machine, whose checkout would
// change under the nodes) and resolves node_lock; throws InputError (exit 2) naming the option.
void ResolveNodeGate(const Project& project, FleetOptions& options);

// `value` as one word for bash and POSIX sh: single-quoted, with embedded single quotes as '\''.
// Words made only of safe characters are left bare.
std::string ShellQuote(std::string_view value);

// A pinned image reference as pyxis/enroot's --container-image takes it: "registry#repo@digest",
// or "repo@digest" for Docker Hub (enroot separates the registry with '#').
std::string EnrootImageRef(const std::string& image);

// One failing check of a node: a fail or error, or a required check that was skipped.
struct FailingCheck {
  std::string id;
  std::string status;  // "fail" | "error" | "skip"
};

// One report file in the summarised directory.
struct NodeSummary {
  std::string node;    // host.hostname, else the file name without ".json"
  std::string file;    // the file's name in the directory
  std::string status;  // "pass" | "fail" | "error" (not judged) | "unreadable" | "partial"
  std::string reason;  // unreadable: the first problem (of `problems` in all); error: why
  int gpu_count = 0;
  std::string gpu_model;  // "NVIDIA H200"; models joined with " + " on a mixed node
  double duration_s = 0;
  std::string started_at;
  std::string lock_sha256;
  std::vector<FailingCheck> failing;
  // Why the start time it states is not trusted (UntrustedStartReason), "" when it is.
  std::string untrusted;
  // Why it does not count in the round (NotInRound), "" when it does.
  std::string not_in_round;
  std::optional<GoldenDigest> golden;  // the report's golden digest and its key
  // Why its golden digest names it as computing differently (CompareGolden), "" when it does
  // not; such a node fails the round whatever its verdict.
  std::string golden_problem;
  bool golden_against_pin = false;  // golden_problem is against the lock's pin (summarize --lock)
};

// A round's reports under one golden key (CompareRoundGolden).
struct GoldenGroup {
  std::string key_sha256;
  GoldenKey key;
  std::vector<std::string> nodes;  // one witness per node, sorted
  std::string digest;  // the pinned digest, else the one they share or the majority's; "" otherwise
  // The lock pins a digest for this key (`summarize --lock`): every node is held to the pin
  // (CompareWithLockPin, the gate's rule), however many agree among themselves.
  bool pinned = false;
  GoldenVerdict verdict;
};

struct FleetSummary {
  std::string dir;  // as the user wrote it
  FleetRound round;
  // The reports that count in the round, sorted by node name, then file name.
  std::vector<NodeSummary> nodes;
  // The other reports, in the same order: each shown with why it does not count, none of them
  // deciding the verdict.
  std::vector<NodeSummary> outside;
  // Ranks' own reports (`<node>.rank-N.json`, IsPartialReport) of nodes that have their merged
  // report: set aside, never a row. A node with rank reports only is one "partial" row (failed:
  // its merged report was never written).
  std::vector<std::string> rank_reports;
  // The counted reports with a golden digest, grouped by key (CompareRoundGolden).
  std::vector<GoldenGroup> golden_groups;

  int passed() const;
  int failed() const;    // fail, error, unreadable and partial
  int reported() const;  // distinct nodes among the rows: copies of one node's report count once
  // The nodes the round names that have no report counting in it, sorted.
  std::vector<std::string> MissingNodes() const;
  // Named nodes without a report of the round, or the round's expected count minus the nodes
  // reported, whichever is more.
  int missing() const;
  bool all_passed() const { return failed() == 0 && missing() == 0; }
  // Distinct lock_sha256 values of the readable reports, most common first.
  std::vector<std::pair<std::string, int>> Locks() const;
  // Lines a person should notice: different locks, several reports of one node, missing nodes.
  std::vector<std::string> Warnings() const;
};

// Reads every *.json directly in `dir` (not recursively) through ReadReportFile; a file that is
// not a valid report becomes an "unreadable" row, a rank's own report is set aside (above), and a
// report that does not count in `round` goes to `outside` (fleet_round.h). Throws InputError
// (exit 2) when `dir` is not a directory or holds no *.json file, KeyError when the round's key
// is not an Ed25519 public key.
// With `lock`, a key the lock pins a digest for is judged against that pin (CompareRoundGolden).
FleetSummary SummarizeReports(const std::filesystem::path& dir, const std::string& display,
                              const FleetRound& round = {}, const Lockfile* lock = nullptr);

// Compares the golden digests of the round's reports key by key (CompareGolden, one witness per
// node) into `golden_groups`; each node named gets its golden_problem and, if it passed, fails.
// A key `lock` pins a digest for is compared with the pin instead (CompareWithLockPin, the rule
// `trainlock gate` applies), so one new node is judged without the others present.
void CompareRoundGolden(FleetSummary& summary, const Lockfile* lock = nullptr);

// The table, warnings and footer ("4 nodes: 2 passed, 2 failed") for a terminal.
std::string RenderFleetSummaryText(const FleetSummary& summary);
// The same as data.
nlohmann::json FleetSummaryJson(const FleetSummary& summary);

}  // namespace trainlock
