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
#include <string>
#include <string_view>
#include <vector>

#include "compat/catalog.h"
#include "image/in_image_paths.h"
#include "project/project.h"

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

  // Resolved from the project, for labels and comments.
  std::string project_name;
  std::string lock_sha256;
};

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

// An sbatch script running the validator in the image on every node through pyxis/enroot, then
// `trainlock fleet summarize` on the reports.
std::string SlurmBatchScript(const FleetOptions& options);

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
  std::string status;  // "pass" | "fail" | "unreadable"
  std::string reason;  // unreadable: the first problem (of `problems` in all)
  int gpu_count = 0;
  std::string gpu_model;  // "NVIDIA H200"; models joined with " + " on a mixed node
  double duration_s = 0;
  std::string started_at;
  std::string lock_sha256;
  std::vector<FailingCheck> failing;
};

struct FleetSummary {
  std::string dir;                 // as the user wrote it
  std::vector<NodeSummary> nodes;  // sorted by node name, then file name
  int expected_nodes = 0;          // 0 = not given

  int passed() const;
  int failed() const;   // fail and unreadable
  int missing() const;  // expected_nodes minus reports, when more were expected
  bool all_passed() const { return failed() == 0 && missing() == 0; }
  // Distinct lock_sha256 values of the readable reports, most common first.
  std::vector<std::pair<std::string, int>> Locks() const;
  // Lines a person should notice: different locks, several reports of one node, missing nodes.
  std::vector<std::string> Warnings() const;
};

// Reads every *.json directly in `dir` (not recursively) through ReadReportFile; a file that is
// not a valid report becomes an "unreadable" row. Throws InputError (exit 2) when `dir` is not a
// directory or holds no *.json file.
FleetSummary SummarizeReports(const std::filesystem::path& dir, const std::string& display,
                              int expected_nodes = 0);

// The table, warnings and footer ("4 nodes: 2 passed, 2 failed") for a terminal.
std::string RenderFleetSummaryText(const FleetSummary& summary);
// The same as data.
nlohmann::json FleetSummaryJson(const FleetSummary& summary);

}  // namespace trainlock
