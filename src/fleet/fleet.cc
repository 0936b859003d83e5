// Resolving and checking what `trainlock fleet k8s|slurm` generates from (fleet.h): the
// target, the digest-pinned image and a job name every scheduler accepts.
#include "fleet/fleet.h"

#include <algorithm>
#include <cmath>
#include <regex>

#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/refs.h"
#include "base/terminal_text.h"
#include "image/in_image_paths.h"
#include "plan/memory_model.h"

namespace trainlock {
namespace {

// Indexed Job pods get the hostname "<job>-<index>", itself a 63-character label: leave room
// for the index of the largest fleet ("-9999").
constexpr size_t kMaxJobNameLength = 63 - 5;

bool IsGpuTarget(const std::string& name) {
  return name == "cuda" || name == "rocm";
}

std::string ResolveTarget(const Project& project, const std::string& requested) {
  const Lockfile& lock = *project.lock;
  if (!requested.empty()) {
    if (!IsGpuTarget(requested)) {
      throw InputError(Diagnostic{"--target",
                                  {},
                                  "must be cuda or rocm, not " + Quoted(requested),
                                  "a fleet validates GPU nodes"});
    }
    if (!lock.targets.contains(requested)) {
      throw InputError(
          Diagnostic{project.lock_path,
                     {},
                     "the lock has no " + requested + " target",
                     "add [targets." + requested + "] to trainlock.toml and run `trainlock lock`"});
    }
    return requested;
  }
  std::vector<std::string> gpu_targets;
  for (const auto& [name, target] : lock.targets) {
    if (IsGpuTarget(name)) gpu_targets.push_back(name);
  }
  if (gpu_targets.empty()) {
    throw InputError(Diagnostic{project.lock_path,
                                {},
                                "the lock has no cuda or rocm target",
                                "a fleet validates GPU nodes: add [targets.cuda] or "
                                "[targets.rocm] to trainlock.toml and run `trainlock lock`"});
  }
  if (gpu_targets.size() > 1) {
    throw InputError(Diagnostic{project.lock_path,
                                {},
                                "the lock has both cuda and rocm targets",
                                "pass --target cuda or --target rocm"});
  }
  return gpu_targets.front();
}

ImageRef ParsePinnedImage(const std::string& text, const std::string& where) {
  std::string why;
  std::optional<ImageRef> ref = ParseImageRef(text, &why);
  if (!ref) {
    throw InputError(
        Diagnostic{where, {}, "invalid image reference " + Quoted(text) + ": " + why, ""});
  }
  if (!ref->pinned()) {
    throw InputError(Diagnostic{where,
                                {},
                                "image " + Quoted(text) + " is not pinned by digest",
                                "images are pinned by digest: pass REF@sha256:<64 hex> (`trainlock "
                                "image build --push REF` prints the digest)"});
  }
  return *ref;
}

std::string ResolveImage(const Project& project, const std::string& target,
                         const std::string& requested) {
  if (!requested.empty()) return ParsePinnedImage(requested, "--image").ToString();
  const auto built = project.lock->images.find(target);
  if (built == project.lock->images.end()) {
    throw InputError(Diagnostic{project.lock_path,
                                {},
                                "no built " + target + " image in the lock",
                                "run `trainlock image build DIR --target " + target +
                                    " --push REF` to build and record it, or pass --image "
                                    "REF@sha256:<64 hex>"});
  }
  // The lock records the name pushed to and the digest separately; the digest is what runs.
  const std::string where = project.lock_path + " [images." + target + "]";
  const std::string& ref = built->second.ref;
  return ParsePinnedImage(ref.substr(0, ref.find('@')) + "@" + built->second.digest, where)
      .ToString();
}

std::string ResolveName(const FleetOptions& requested, const std::string& project_name) {
  const std::string wanted =
      requested.name.empty() ? "trainlock-validate-" + project_name : requested.name;
  std::string name = Dns1123Label(wanted);
  if (name.size() > kMaxJobNameLength) name = Dns1123Label(name.substr(0, kMaxJobNameLength));
  if (name.empty()) {
    throw InputError(Diagnostic{"--name",
                                {},
                                "no usable job name in " + Quoted(wanted),
                                "use lower-case letters, digits and '-'"});
  }
  return name;
}

void CheckKubernetesNames(const FleetOptions& options) {
  if (!options.k8s_namespace.empty() &&
      Dns1123Label(options.k8s_namespace) != options.k8s_namespace) {
    throw InputError(Diagnostic{"--namespace",
                                {},
                                "not a Kubernetes namespace name: " + Quoted(options.k8s_namespace),
                                "lower-case letters, digits and '-', at most 63 characters"});
  }
  static const std::regex kSubdomain(
      R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$)");
  if (!options.reports_pvc.empty() &&
      (options.reports_pvc.size() > 253 || !std::regex_match(options.reports_pvc, kSubdomain))) {
    throw InputError(Diagnostic{"--reports-pvc",
                                {},
                                "not a PersistentVolumeClaim name: " + Quoted(options.reports_pvc),
                                "lower-case letters, digits, '-' and '.'"});
  }
}

bool IsSubdomain(const std::string& name) {
  static const std::regex kSubdomain(
      R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$)");
  return name.size() <= 253 && std::regex_match(name, kSubdomain);
}

// --node, --image-pull-secret and --label-nodes: names Kubernetes accepts, a node count that
// matches the named nodes, and a labeller image pinned like every image here.
void CheckKubernetesGate(FleetOptions& options) {
  for (const std::string& secret : options.image_pull_secrets) {
    if (!IsSubdomain(secret)) {
      throw InputError(
          Diagnostic{"--image-pull-secret", {}, "not a Secret name: " + Quoted(secret), ""});
    }
  }
  if (!options.label_nodes) return;
  // The ClusterRoleBinding names the ServiceAccount's namespace: the Job must run in that one.
  if (options.k8s_namespace.empty()) options.k8s_namespace = "default";
  if (options.kubectl_image.empty()) {
    throw InputError(Diagnostic{"--kubectl-image",
                                {},
                                "--label-nodes needs an image with kubectl and sh to label nodes",
                                "give REF@sha256:<64 hex>"});
  }
  options.kubectl_image = ParsePinnedImage(options.kubectl_image, "--kubectl-image").ToString();
  if (!IsSubdomain(options.keys_secret)) {
    throw InputError(
        Diagnostic{"--keys-secret",
                   {},
                   "--label-nodes needs the Secret holding trainlock.key and "
                   "trainlock.pub: " +
                       Quoted(options.keys_secret),
                   "kubectl create secret generic NAME --from-file=trainlock.key=KEY.key "
                   "--from-file=trainlock.pub=KEY.pub"});
  }
  if (!IsSubdomain(options.service_account))
    throw InputError(Diagnostic{"--service-account", {}, "not a ServiceAccount name", ""});
}

void CheckCounts(const FleetOptions& options) {
  if (options.nodes < 1 || options.nodes > kMaxFleetNodes) {
    throw InputError(Diagnostic{"--nodes", {}, "must be 1.." + std::to_string(kMaxFleetNodes), ""});
  }
  if (options.gpus_per_node < 1 || options.gpus_per_node > 64) {
    throw InputError(Diagnostic{"--gpus-per-node", {}, "must be 1..64", ""});
  }
  if (options.cpu_request < 0 || options.cpu_request > 1024) {
    throw InputError(Diagnostic{"--cpu", {}, "must be 1..1024 cores", ""});
  }
  if (options.memory_request_gib < 0 || options.memory_request_gib > 65536) {
    throw InputError(Diagnostic{"--memory-gib", {}, "must be 1..65536", ""});
  }
  if (options.timeout_s < 1) {
    throw InputError(Diagnostic{"--timeout", {}, "must be at least one second", ""});
  }
}

// Slurm names partitions and accounts with these; anything else would not survive an #SBATCH
// line (which sbatch reads without a shell).
void CheckSlurmName(const char* option, const std::string& value) {
  static const std::regex kName(R"(^[A-Za-z0-9._-]{1,128}$)");
  if (!value.empty() && !std::regex_match(value, kName)) {
    throw InputError(Diagnostic{
        option, {}, "not a Slurm name: " + Quoted(value), "letters, digits, '.', '_' and '-'"});
  }
}

// --node: names the scheduler accepts, each once (a name given twice would ask for two runs
// on one node: Kubernetes' one-pod-per-node anti-affinity would never schedule the second),
// and as many as --nodes.
void CheckNodeNames(const FleetOptions& options) {
  for (size_t i = 0; i < options.node_names.size(); ++i) {
    const std::string& node = options.node_names[i];
    if (options.slurm) {
      if (node.empty()) throw InputError(Diagnostic{"--node", {}, "an empty node name", ""});
      CheckSlurmName("--node", node);
    } else if (!IsSubdomain(node)) {
      throw InputError(Diagnostic{"--node", {}, "not a Kubernetes node name: " + Quoted(node), ""});
    }
    if (std::find(options.node_names.begin(), options.node_names.begin() + i, node) !=
        options.node_names.begin() + i) {
      throw InputError(
          Diagnostic{"--node", {}, "names node " + Quoted(node) + " twice", "name each node once"});
    }
  }
  if (!options.node_names.empty() && options.nodes != static_cast<int>(options.node_names.size())) {
    throw InputError(Diagnostic{"--nodes",
                                {},
                                std::to_string(options.nodes) + " nodes, but " +
                                    std::to_string(options.node_names.size()) + " --node names",
                                "leave --nodes out: it defaults to the number of --node names"});
  }
}

// The product label values of every accelerator of the target; empty when one is missing
// (selecting by the others would keep the Job off nodes the lock allows).
std::vector<std::string> GpuProducts(const Lockfile& lock, const std::string& target,
                                     const Catalog& catalog) {
  std::vector<std::string> products;
  for (const std::string& name : lock.targets.at(target).accelerators) {
    const GpuModel* gpu = catalog.FindGpu(name);
    if (gpu == nullptr || gpu->k8s_gpu_product.empty()) return {};
    if (std::find(products.begin(), products.end(), gpu->k8s_gpu_product) == products.end())
      products.push_back(gpu->k8s_gpu_product);
  }
  return products;
}

void CheckReportsDir(const std::string& dir, const char* option = "--reports-dir") {
  // pyxis splits --container-mounts at ',' and ':'; such a path cannot be mounted.
  if (dir.find_first_of(",:") != std::string::npos) {
    throw InputError(Diagnostic{option,
                                {},
                                "contains ',' or ':': " + Quoted(dir),
                                "pyxis's --container-mounts cannot mount such a path"});
  }
}

// A value a generated script, Prolog or manifest carries: one line of printable text. A newline
// would end a here-document and start a command of its own (as root, in a Prolog), and an escape
// sequence would act on the terminal of whoever reads the script (issue #61). Shell quoting keeps
// the value one word; only this keeps it one line.
void CheckScriptValue(const char* option, const std::string& value) {
  for (size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    const auto next = i + 1 < value.size() ? static_cast<unsigned char>(value[i + 1]) : 0;
    const bool c1 = c == 0xC2 && next >= 0x80 && next <= 0x9F;  // U+0080-U+009F in UTF-8
    if (c < 0x20 || c == 0x7F || c1) {
      throw InputError(Diagnostic{
          option,
          {},
          "a control character at byte " + std::to_string(i) + ": " + TerminalLine(value),
          "give it as one line of printable text"});
    }
  }
}

void CheckScriptValues(const FleetOptions& o) {
  const std::pair<const char*, const std::string*> values[] = {
      {"--reports-dir", &o.reports_dir},
      {"--partition", &o.partition},
      {"--account", &o.account},
      {"--sign-key", &o.sign_key},
      {"--reservation", &o.reservation},
      {"--key", &o.key},
      {"--node-lock", &o.node_lock},
      {"--trainlock", &o.trainlock_bin},
      {"--name", &o.name},
      {"--image", &o.image},
      {"--kubectl-image", &o.kubectl_image},
      {"--keys-secret", &o.keys_secret},
      {"--service-account", &o.service_account},
      {"--namespace", &o.k8s_namespace},
      {"--reports-pvc", &o.reports_pvc}};
  for (const auto& [option, value] : values) CheckScriptValue(option, *value);
  for (const std::string& node : o.node_names) CheckScriptValue("--node", node);
  for (const std::string& secret : o.image_pull_secrets)
    CheckScriptValue("--image-pull-secret", secret);
}

// A path every node reads: absolute (a Prolog's working directory is not the submitter's), on
// one line. It is shell-quoted where it is used.
void CheckNodePath(const char* option, const std::string& path, const std::string& what) {
  if (path.empty()) {
    throw InputError(Diagnostic{option, {}, "a node gate needs it: " + what, ""});
  }
  if (path.front() != '/' || path.find_first_of("\n\r") != std::string::npos) {
    throw InputError(Diagnostic{option,
                                {},
                                "not an absolute path on one line: " + Quoted(path),
                                "give " + what +
                                    " as every node sees it, e.g. on a shared "
                                    "filesystem"});
  }
}

// A node lock inside a git work tree here is a checkout: what the nodes read would change with
// every pull or branch switch, and a node gate must judge against the lock that was installed.
void CheckNotInWorkTree(const std::string& node_lock) {
  std::error_code ec;
  const std::filesystem::path lock = std::filesystem::path(node_lock).lexically_normal();
  for (std::filesystem::path dir = lock.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (std::filesystem::exists(dir / ".git", ec)) {
      throw InputError(Diagnostic{"--node-lock",
                                  {},
                                  node_lock + " is inside the git work tree " + dir.string() +
                                      ": the nodes would read whatever that checkout holds",
                                  "install the lock on every node at a path of its own, e.g. " +
                                      NodeLockPath("NAME") +
                                      " (docs/fleet.md, \"What each node needs\")"});
    }
    if (dir == dir.root_path()) break;
  }
}

}  // namespace

std::string Dns1123Label(std::string_view text) {
  std::string label;
  for (char c : text) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (alnum) {
      label.push_back(c);
    } else if (!label.empty() && label.back() != '-') {
      label.push_back('-');  // every run of other characters becomes one '-'
    }
  }
  if (label.size() > 63) label.resize(63);
  while (!label.empty() && label.back() == '-') label.pop_back();
  return label;
}

int64_t KubernetesMemoryGiB(double parameters, int gpus_per_node) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const double per_gpu = parameters * 12.0 + 4.0 * kGiB;
  return static_cast<int64_t>(std::ceil(per_gpu * gpus_per_node / kGiB));
}

// The lock pins golden digests (`lock --golden`): the jobs hold each report to its key's pin,
// reading the lock where the nodes have it (Slurm) or as the project holds it (Kubernetes).
namespace {
void ResolveGoldenPins(const Project& project, FleetOptions& options) {
  const Lockfile& lock = *project.lock;
  options.lock_pins_golden = !lock.golden.empty();
  if (!options.lock_pins_golden) return;
  if (options.node_lock.empty()) options.node_lock = NodeLockPath(lock.name);
  options.lock_path = project.lock_path;
  options.lock_text = ReadInputFile(project.lock_path, project.lock_path);
}
}  // namespace

FleetOptions ResolveFleetOptions(const Project& project, const Catalog& catalog,
                                 const FleetOptions& requested) {
  const Lockfile& lock = RequireLock(
      project, "cannot read: no such file: the fleet runs the lock's image",
      "run `trainlock lock " + project.dir.string() + "` and `trainlock image build` first");
  FleetOptions options = requested;
  CheckCounts(options);
  CheckKubernetesNames(options);
  CheckKubernetesGate(options);
  if (!options.reports_dir.empty()) CheckReportsDir(options.reports_dir);
  if (!options.sign_key.empty()) {
    CheckNodePath("--sign-key", options.sign_key, "the private key every node reads");
    CheckReportsDir(options.sign_key, "--sign-key");  // mounted like the reports directory
  }
  CheckSlurmName("--partition", options.partition);
  CheckSlurmName("--account", options.account);
  CheckSlurmName("--reservation", options.reservation);
  CheckNodeNames(options);
  options.target = ResolveTarget(project, requested.target);
  options.gpu_products = GpuProducts(lock, options.target, catalog);
  if (options.cpu_request == 0) options.cpu_request = 4 * options.gpus_per_node;
  if (options.memory_request_gib == 0) {
    options.memory_request_gib = KubernetesMemoryGiB(
        EstimateTrainingMemory(project.config).parameters, options.gpus_per_node);
  }
  options.image = ResolveImage(project, options.target, requested.image);
  options.project_name = lock.name;
  options.lock_sha256 = project.lock->lock_build_sha256;
  ResolveGoldenPins(project, options);
  options.name = ResolveName(requested, options.project_name);
  options.valid_for_from_lock = lock.validate.valid_for_s > 0;
  options.valid_for_s = options.valid_for_from_lock ? lock.validate.valid_for_s : kDefaultValidForS;
  CheckScriptValues(options);  // after the checks that name what a value must be
  return options;
}

std::string NodeLockPath(const std::string& project_name) {
  return std::string(kProjectInImage) + "/" + project_name + "/trainlock.lock";
}

void ResolveNodeGate(const Project& project, FleetOptions& options) {
  if (options.node_lock.empty()) options.node_lock = NodeLockPath(project.lock->name);
  CheckScriptValue("--node-lock", options.node_lock);  // the project's name, too
  CheckNodePath("--key", options.key, "the Ed25519 public key (`trainlock keygen`'s .pub)");
  CheckNodePath("--reports-dir", options.reports_dir,
                "the directory the validation jobs write <node>.json into");
  CheckNodePath("--node-lock", options.node_lock, "where every node reads trainlock.lock");
  CheckNotInWorkTree(options.node_lock);
  CheckScriptValue("--gate-log", options.gate_log);
  CheckNodePath("--gate-log", options.gate_log, "the file report-only decisions are logged to");
  CheckScriptValue("--watch-state", options.watch_state);
  CheckNodePath("--watch-state", options.watch_state,
                "the directory `trainlock watch` keeps each node's revocation record in");
  if (options.trainlock_bin.empty() || options.trainlock_bin.find('\n') != std::string::npos) {
    throw InputError(Diagnostic{"--trainlock", {}, "must name the trainlock program", ""});
  }
}

}  // namespace trainlock
