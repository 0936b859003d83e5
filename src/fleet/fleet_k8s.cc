// `trainlock fleet k8s`: a batch/v1 indexed Job that runs the validator once per node (fleet.h).
//
// One pod per node: completions = parallelism = N with a required pod anti-affinity on the
// job's own label over kubernetes.io/hostname, so no two pods share a node, and only on nodes
// whose nvidia.com/gpu.product is one of the lock's accelerators. Each pod asks for all G GPUs
// and the CPU and memory the run needs, runs `trainlock-validate /etc/trainlock --nproc auto`
// in the lock's image (by digest) and writes /reports/<node name>.json, the node name coming
// from the downward API as TRAINLOCK_NODE_NAME (which also names the node inside the report).
// /reports is a ReadWriteMany claim with --reports-pvc, else an emptyDir: the pod then prints
// the report to its log between two marker lines, and `kubectl logs` collects it.
#include <yaml-cpp/yaml.h>

#include <regex>

#include "base/refs.h"
#include "fleet/fleet.h"

namespace trainlock {
namespace {

constexpr const char* kJobLabel = "trainlock.io/job";
// --label-nodes: the Secret's keys and where the pod mounts them.
constexpr const char* kKeysInContainer = "/var/run/secrets/trainlock";
constexpr const char* kSigningKeyFile = "trainlock.key";
constexpr const char* kPublicKeyFile = "trainlock.pub";
// --label-nodes with a lock that pins golden digests: the ConfigMap holding the project's lock
// and where the pod mounts it (the image's copy of the lock carries no pins).
constexpr const char* kPinnedLockInContainer = "/var/run/trainlock-lock";
constexpr const char* kPinnedLockFile = "trainlock.lock";

// The lock the pod's gate reads: the pinned one when there are pins, else the image's.
bool GatesAgainstPinnedLock(const FleetOptions& o) {
  return o.label_nodes && o.lock_pins_golden;
}
std::string PinnedLockConfigMap(const FleetOptions& o) {
  return o.name + "-lock";
}

// YAML reads some plain scalars as booleans, nulls or numbers ("true", "no", "8", "1e5",
// "0x1f"); Kubernetes wants strings for names, labels and env values, so those get quoted.
bool PlainScalarIsNotAString(const std::string& s) {
  static const std::regex kNonString(
      R"(^(|~|null|Null|NULL|y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|)"
      R"(on|On|ON|off|Off|OFF|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)|)"
      R"([-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?|)"
      R"([-+]?0[xXoObB][0-9a-fA-F_]+|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?)$)");
  return std::regex_match(s, kNonString);
}

void String(YAML::Emitter& out, const std::string& value) {
  if (PlainScalarIsNotAString(value)) out << YAML::DoubleQuoted;
  out << value;
}

void Key(YAML::Emitter& out, const char* key) {
  out << YAML::Key << key << YAML::Value;
}

void StringField(YAML::Emitter& out, const char* key, const std::string& value) {
  Key(out, key);
  String(out, value);
}

const char* GpuResource(const std::string& target) {
  return target == "rocm" ? "amd.com/gpu" : "nvidia.com/gpu";
}

void Labels(YAML::Emitter& out, const FleetOptions& o) {
  Key(out, "labels");
  out << YAML::BeginMap;
  StringField(out, "app.kubernetes.io/name", "trainlock-validate");
  StringField(out, "app.kubernetes.io/instance", o.name);
  StringField(out, kJobLabel, o.name);
  out << YAML::EndMap;
}

void JobMetadata(YAML::Emitter& out, const FleetOptions& o) {
  Key(out, "metadata");
  out << YAML::BeginMap;
  StringField(out, "name", o.name);
  if (!o.k8s_namespace.empty()) StringField(out, "namespace", o.k8s_namespace);
  Labels(out, o);
  // A label value holds at most 63 characters: the 64-hex lock identity goes in an annotation.
  Key(out, "annotations");
  out << YAML::BeginMap;
  StringField(out, "trainlock.io/project", o.project_name);
  StringField(out, "trainlock.io/lock-sha256", o.lock_sha256);
  StringField(out, "trainlock.io/target", o.target);
  out << YAML::EndMap;
  out << YAML::EndMap;
}

// One requirement of a node affinity term: `key` In `values`.
void InExpression(YAML::Emitter& out, const char* key, const std::vector<std::string>& values) {
  out << YAML::BeginMap;
  StringField(out, "key", key);
  StringField(out, "operator", "In");
  Key(out, "values");
  out << YAML::BeginSeq;
  for (const std::string& value : values) String(out, value);
  out << YAML::EndSeq;
  out << YAML::EndMap;
}

// A nodeSelector says one value per key, so only a single product without named nodes uses it.
bool UsesNodeSelector(const FleetOptions& o) {
  return o.gpu_products.size() == 1 && o.node_names.empty();
}

// Pods only on nodes of the lock's accelerators (and, with --node, only on those nodes): a
// nodeSelector for one product, a node affinity otherwise (a nodeSelector cannot say "either").
void NodeSelection(YAML::Emitter& out, const FleetOptions& o) {
  if (UsesNodeSelector(o)) {
    Key(out, "nodeSelector");
    out << YAML::BeginMap;
    StringField(out, kGpuProductLabel, o.gpu_products.front());
    out << YAML::EndMap;
    return;
  }
  if (o.gpu_products.empty() && o.node_names.empty()) return;
  Key(out, "nodeAffinity");
  out << YAML::BeginMap;
  Key(out, "requiredDuringSchedulingIgnoredDuringExecution");
  out << YAML::BeginMap;
  Key(out, "nodeSelectorTerms");
  out << YAML::BeginSeq << YAML::BeginMap;
  Key(out, "matchExpressions");
  out << YAML::BeginSeq;
  if (!o.gpu_products.empty()) InExpression(out, kGpuProductLabel, o.gpu_products);
  if (!o.node_names.empty()) InExpression(out, "kubernetes.io/hostname", o.node_names);
  out << YAML::EndSeq;
  out << YAML::EndMap << YAML::EndSeq;
  out << YAML::EndMap << YAML::EndMap;
}

void OnePodPerNode(YAML::Emitter& out, const FleetOptions& o) {
  if (UsesNodeSelector(o)) NodeSelection(out, o);
  Key(out, "affinity");
  out << YAML::BeginMap;
  if (!UsesNodeSelector(o)) NodeSelection(out, o);
  Key(out, "podAntiAffinity");
  out << YAML::BeginMap;
  Key(out, "requiredDuringSchedulingIgnoredDuringExecution");
  out << YAML::BeginSeq << YAML::BeginMap;
  Key(out, "labelSelector");
  out << YAML::BeginMap;
  Key(out, "matchLabels");
  out << YAML::BeginMap;
  StringField(out, kJobLabel, o.name);
  out << YAML::EndMap << YAML::EndMap;
  StringField(out, "topologyKey", "kubernetes.io/hostname");
  out << YAML::EndMap << YAML::EndSeq;
  out << YAML::EndMap << YAML::EndMap;
}

void EnvValue(YAML::Emitter& out, const std::string& name, const std::string& value) {
  out << YAML::BeginMap;
  StringField(out, "name", name);
  StringField(out, "value", value);
  out << YAML::EndMap;
}

void Env(YAML::Emitter& out, const FleetOptions& o) {
  Key(out, "env");
  out << YAML::BeginSeq;
  out << YAML::BeginMap;
  StringField(out, "name", "TRAINLOCK_NODE_NAME");
  Key(out, "valueFrom");
  out << YAML::BeginMap;
  Key(out, "fieldRef");
  out << YAML::BeginMap;
  StringField(out, "fieldPath", "spec.nodeName");
  out << YAML::EndMap << YAML::EndMap;
  out << YAML::EndMap;
  // The report records the image it ran in (gate compares it with the lock); an image cannot
  // know its own digest, so the pod tells it.
  ImageRef image = *ParseImageRef(o.image, nullptr);
  const std::string digest = image.digest;
  image.digest.clear();
  EnvValue(out, "TRAINLOCK_IMAGE_REF", image.ToString());
  EnvValue(out, "TRAINLOCK_IMAGE_DIGEST", digest);
  out << YAML::EndSeq;
}

// The validator's run, then its report on stdout between the marker lines, keeping the
// validator's exit code as the container's (the pod fails when the node fails). With
// --label-nodes the report is signed and gated here, in the locked image (which holds
// trainlock and the lock), and the label container acts on the decision it leaves in
// /reports: gate.txt (the gate's output) and gate.status (its exit code).
std::string ValidateScript(const FleetOptions& o) {
  const std::string report = std::string(kReportsInContainer) + "/$TRAINLOCK_NODE_NAME.json";
  const std::string sign =
      o.label_nodes ? std::string(" --sign ") + kKeysInContainer + "/" + kSigningKeyFile : "";
  const std::string validate = std::string(kValidatorInImage) + " " + kProjectInImage +
                               " --nproc auto" + sign + " --out \"" + report + "\"; ";
  const std::string print = "echo \"" + std::string(kReportLogBegin) +
                            "$TRAINLOCK_NODE_NAME ---\"; " + "cat \"" + report +
                            "\"; echo; echo \"" + kReportLogEnd + "\"; ";
  if (!o.label_nodes) return validate + "status=$?; " + print + "exit $status";
  // The gate, not the validator's exit code, decides here (a failed run leaves a failing
  // report, or none, which the gate refuses).
  const std::string lock = GatesAgainstPinnedLock(o)
                               ? std::string(kPinnedLockInContainer) + "/" + kPinnedLockFile
                               : std::string(kProjectInImage);
  return validate + print + "trainlock gate \"" + report + "\" --lock " + lock + " --key " +
         kKeysInContainer + "/" + kPublicKeyFile +
         " --image \"$TRAINLOCK_IMAGE_DIGEST\" --target " + o.target +
         " --node \"$TRAINLOCK_NODE_NAME\" > " + kReportsInContainer +
         "/gate.txt 2>&1; echo $? > " + kReportsInContainer + "/gate.status; exit 0";
}

// Requests let the scheduler place the pod where the run fits; there is no CPU or memory
// limit, which would throttle or OOM-kill a validation that needs a little more.
void Resources(YAML::Emitter& out, const FleetOptions& o) {
  Key(out, "resources");
  out << YAML::BeginMap;
  Key(out, "requests");
  out << YAML::BeginMap;
  StringField(out, "cpu", std::to_string(o.cpu_request));
  StringField(out, "memory", std::to_string(o.memory_request_gib) + "Gi");
  Key(out, GpuResource(o.target));
  out << o.gpus_per_node;
  out << YAML::EndMap;
  Key(out, "limits");
  out << YAML::BeginMap;
  Key(out, GpuResource(o.target));
  out << o.gpus_per_node;
  out << YAML::EndMap << YAML::EndMap;
}

void Mount(YAML::Emitter& out, const char* name, const std::string& path, bool read_only) {
  out << YAML::BeginMap;
  StringField(out, "name", name);
  StringField(out, "mountPath", path);
  if (read_only) {
    Key(out, "readOnly");
    out << true;
  }
  out << YAML::EndMap;
}

void Container(YAML::Emitter& out, const FleetOptions& o) {
  out << YAML::BeginMap;
  StringField(out, "name", "validate");
  StringField(out, "image", o.image);
  Key(out, "command");
  out << YAML::Flow << YAML::BeginSeq << "/bin/sh"
      << "-c" << YAML::EndSeq;
  Key(out, "args");
  out << YAML::BeginSeq << ValidateScript(o) << YAML::EndSeq;
  Env(out, o);
  Resources(out, o);
  Key(out, "volumeMounts");
  out << YAML::BeginSeq;
  Mount(out, "reports", kReportsInContainer, false);
  Mount(out, "dshm", "/dev/shm", false);
  if (o.label_nodes) Mount(out, "keys", kKeysInContainer, true);
  if (GatesAgainstPinnedLock(o)) Mount(out, "lock", kPinnedLockInContainer, true);
  out << YAML::EndSeq;
  out << YAML::EndMap;
}

// --label-nodes: after the validation (an init container), label the node on a pass or taint
// it on a refusal, and end the pod with the gate's verdict.
void LabelContainer(YAML::Emitter& out, const FleetOptions& o) {
  out << YAML::BeginMap;
  StringField(out, "name", "label");
  StringField(out, "image", o.kubectl_image);
  Key(out, "command");
  out << YAML::Flow << YAML::BeginSeq << "/bin/sh"
      << "-c" << YAML::EndSeq;
  Key(out, "args");
  out << YAML::BeginSeq << KubernetesLabelScript(o) << YAML::EndSeq;
  Key(out, "env");
  out << YAML::BeginSeq << YAML::BeginMap;
  StringField(out, "name", "TRAINLOCK_NODE_NAME");
  Key(out, "valueFrom");
  out << YAML::BeginMap;
  Key(out, "fieldRef");
  out << YAML::BeginMap;
  StringField(out, "fieldPath", "spec.nodeName");
  out << YAML::EndMap << YAML::EndMap;
  out << YAML::EndMap << YAML::EndSeq;
  Key(out, "volumeMounts");
  out << YAML::BeginSeq;
  Mount(out, "reports", kReportsInContainer, true);
  out << YAML::EndSeq;
  out << YAML::EndMap;
}

void Volumes(YAML::Emitter& out, const FleetOptions& o) {
  Key(out, "volumes");
  out << YAML::BeginSeq;
  out << YAML::BeginMap;
  StringField(out, "name", "reports");
  if (!o.reports_pvc.empty()) {
    Key(out, "persistentVolumeClaim");
    out << YAML::BeginMap;
    StringField(out, "claimName", o.reports_pvc);
    out << YAML::EndMap;
  } else {
    Key(out, "emptyDir");
    out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
  }
  out << YAML::EndMap;
  // NCCL/RCCL put their intra-node buffers in /dev/shm; a container's default is 64 MiB.
  out << YAML::BeginMap;
  StringField(out, "name", "dshm");
  Key(out, "emptyDir");
  out << YAML::BeginMap;
  StringField(out, "medium", "Memory");
  out << YAML::EndMap;
  out << YAML::EndMap;
  if (o.label_nodes) {
    out << YAML::BeginMap;
    StringField(out, "name", "keys");
    Key(out, "secret");
    out << YAML::BeginMap;
    StringField(out, "secretName", o.keys_secret);
    Key(out, "defaultMode");
    out << 0400;
    out << YAML::EndMap;
    out << YAML::EndMap;
  }
  if (GatesAgainstPinnedLock(o)) {
    out << YAML::BeginMap;
    StringField(out, "name", "lock");
    Key(out, "configMap");
    out << YAML::BeginMap;
    StringField(out, "name", PinnedLockConfigMap(o));
    out << YAML::EndMap;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void PodTemplate(YAML::Emitter& out, const FleetOptions& o) {
  Key(out, "template");
  out << YAML::BeginMap;
  Key(out, "metadata");
  out << YAML::BeginMap;
  Labels(out, o);
  out << YAML::EndMap;
  Key(out, "spec");
  out << YAML::BeginMap;
  StringField(out, "restartPolicy", "Never");
  if (o.label_nodes) StringField(out, "serviceAccountName", o.service_account);
  if (!o.image_pull_secrets.empty()) {
    Key(out, "imagePullSecrets");
    out << YAML::BeginSeq;
    for (const std::string& secret : o.image_pull_secrets) {
      out << YAML::BeginMap;
      StringField(out, "name", secret);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  OnePodPerNode(out, o);
  // GPU node pools are commonly tainted with the GPU resource name so that only GPU pods land;
  // a node a refusal tainted must still take its revalidation.
  Key(out, "tolerations");
  out << YAML::BeginSeq << YAML::BeginMap;
  StringField(out, "key", GpuResource(o.target));
  StringField(out, "operator", "Exists");
  StringField(out, "effect", "NoSchedule");
  out << YAML::EndMap;
  if (o.label_nodes) {
    out << YAML::BeginMap;
    StringField(out, "key", kNodeGateTaint);
    StringField(out, "operator", "Exists");
    StringField(out, "effect", "NoSchedule");
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  Key(out, o.label_nodes ? "initContainers" : "containers");
  out << YAML::BeginSeq;
  Container(out, o);
  out << YAML::EndSeq;
  if (o.label_nodes) {
    Key(out, "containers");
    out << YAML::BeginSeq;
    LabelContainer(out, o);
    out << YAML::EndSeq;
  }
  Volumes(out, o);
  out << YAML::EndMap;
  out << YAML::EndMap;
}

void JobSpec(YAML::Emitter& out, const FleetOptions& o) {
  Key(out, "spec");
  out << YAML::BeginMap;
  StringField(out, "completionMode", "Indexed");
  Key(out, "completions");
  out << o.nodes;
  Key(out, "parallelism");
  out << o.nodes;
  // No retries, counted per node: a plain backoffLimit of 0 would fail the whole Job at the
  // first failing node and kill the validation still running on every other node.
  Key(out, "backoffLimitPerIndex");
  out << 0;
  Key(out, "activeDeadlineSeconds");
  out << o.timeout_s;
  PodTemplate(out, o);
  out << YAML::EndMap;
}

// The header's last lines: the Job is the round `fleet summarize` judges (fleet_round.h), from
// its creation on, on the nodes named or, without --node, those its pods ran on.
std::string SummarizeTheRound(const FleetOptions& o) {
  const std::string ns = o.k8s_namespace.empty() ? "" : " -n " + o.k8s_namespace;
  std::string nodes;
  for (const std::string& node : o.node_names) nodes += (nodes.empty() ? "" : ",") + node;
  std::string text =
      "The Job is the round: only its nodes' reports started after its creation count (an older\n"
      "report in reports/, or another node's, neither passes nor fails it):\n"
      "  since=$(kubectl get job" +
      ns + " " + o.name + " -o jsonpath='{.metadata.creationTimestamp}')\n";
  if (nodes.empty()) {
    text += "  nodes=$(kubectl get pods" + ns + " -l " + kJobLabel + "=" + o.name +
            " -o jsonpath='{.items[*].spec.nodeName}'); nodes=${nodes// /,}\n";
    nodes = "$nodes";
  }
  // Signed reports (--label-nodes) are judged under the Secret's public key, unsigned ones at
  // their word.
  if (o.label_nodes) {
    text += "(trainlock.pub: the Secret " + o.keys_secret +
            "'s public key, which the reports are "
            "signed for)\n";
  }
  const std::string trust =
      o.label_nodes ? " --key " + std::string(kPublicKeyFile) : " --allow-unsigned";
  // The lock pins golden digests: each report is held to its key's pin.
  const std::string lock = o.lock_pins_golden ? " --lock " + ShellQuote(o.lock_path) : "";
  return text + "  trainlock fleet summarize --nodes " + std::to_string(o.nodes) +
         " --since \"$since\" --node \"" + nodes + "\"" + trust + lock + " reports";
}

std::string HowToUse(const FleetOptions& o) {
  const std::string ns = o.k8s_namespace.empty() ? "" : " -n " + o.k8s_namespace;
  const std::string nodes = std::to_string(o.nodes);
  std::string text = "Generated by `trainlock fleet k8s` for project " + o.project_name +
                     " (lock-sha256 " + o.lock_sha256.substr(0, 12) + ",\n" + "target " + o.target +
                     "): runs trainlock-validate once on each of " + nodes +
                     " nodes, one pod per node with all\n" + std::to_string(o.gpus_per_node) + " " +
                     GpuResource(o.target) + " GPUs, " + std::to_string(o.cpu_request) +
                     " CPUs and " + std::to_string(o.memory_request_gib) +
                     "Gi requested, in the image pinned by digest";
  if (o.gpu_products.empty()) {
    text += ".\n";
  } else {
    text += ", on nodes\nlabelled " + std::string(kGpuProductLabel) + "=";
    for (size_t i = 0; i < o.gpu_products.size(); ++i) text += (i ? "|" : "") + o.gpu_products[i];
    text += " (NVIDIA GPU Feature Discovery).\n";
  }
  text +=
      "Needs Kubernetes >= 1.29 (backoffLimitPerIndex: no retries, and a failing node does "
      "not stop the\nothers) and " +
      nodes +
      " schedulable GPU nodes; a pod that finds no free node stays Pending until\n"
      "activeDeadlineSeconds.\n"
      "  kubectl apply" +
      ns + " -f FILE\n" +
      "Wait for it, returning at the first failed pod (`kubectl wait --for=condition=complete`\n"
      "would sit out the whole timeout when a node fails):\n" +
      KubernetesWaitScript(o);
  if (o.reports_pvc.empty()) {
    text += "Each pod prints its report to its log\nbetween \"" + std::string(kReportLogBegin) +
            "<node> ---\" and \"" + kReportLogEnd +
            "\"\n(the reports volume is an emptyDir, gone with the pod); collect them:\n"
            "  mkdir -p reports; for pod in $(kubectl get pods" +
            ns + " -l " + kJobLabel + "=" + o.name +
            " -o name); do\n"
            "    kubectl logs" +
            ns + " \"$pod\" | sed -n '/^" + kReportLogBegin + "/,/^" + kReportLogEnd +
            "/{//!p}' > \"reports/${pod#pod/}.json\"; done\n";
  } else {
    text += "Every node writes <node>.json to\nthe claim " + o.reports_pvc +
            " (it must be ReadWriteMany) and prints it to its log too; copy them out\n"
            "(a pod mounting the claim, `kubectl cp`) into reports/, then:\n";
  }
  return text + SummarizeTheRound(o);
}

// --label-nodes: the ServiceAccount the pods run as, allowed to read and label or taint nodes
// (a ClusterRole: nodes are not namespaced) and nothing else.
std::string LabelerRbacYaml(const FleetOptions& o) {
  const std::string& ns = o.k8s_namespace;  // "default" when none was given
  std::string text =
      "# --label-nodes: the pods' ServiceAccount may get and patch nodes (labels, taints), "
      "nothing\n"
      "# else. The Secret " +
      o.keys_secret + " (namespace " + ns + ") holds " + kSigningKeyFile +
      " (`trainlock keygen`'s private key,\n"
      "# which signs the report) and " +
      kPublicKeyFile +
      " (its public key, which the gate checks):\n"
      "#   kubectl create secret generic " +
      o.keys_secret + " -n " + ns + " --from-file=" + kSigningKeyFile +
      "=KEY.key --from-file=" + kPublicKeyFile + "=KEY.pub\n";
  YAML::Emitter out;
  out.SetIndent(2);
  out << YAML::BeginMap;
  StringField(out, "apiVersion", "v1");
  StringField(out, "kind", "ServiceAccount");
  Key(out, "metadata");
  out << YAML::BeginMap;
  StringField(out, "name", o.service_account);
  StringField(out, "namespace", ns);
  out << YAML::EndMap << YAML::EndMap;
  out << YAML::BeginDoc << YAML::BeginMap;
  StringField(out, "apiVersion", "rbac.authorization.k8s.io/v1");
  StringField(out, "kind", "ClusterRole");
  Key(out, "metadata");
  out << YAML::BeginMap;
  StringField(out, "name", o.service_account);
  out << YAML::EndMap;
  Key(out, "rules");
  out << YAML::BeginSeq << YAML::BeginMap;
  Key(out, "apiGroups");
  out << YAML::Flow << YAML::BeginSeq << YAML::DoubleQuoted << std::string() << YAML::EndSeq;
  Key(out, "resources");
  out << YAML::Flow << YAML::BeginSeq << "nodes" << YAML::EndSeq;
  Key(out, "verbs");
  out << YAML::Flow << YAML::BeginSeq << "get"
      << "patch" << YAML::EndSeq;
  out << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
  out << YAML::BeginDoc << YAML::BeginMap;
  StringField(out, "apiVersion", "rbac.authorization.k8s.io/v1");
  StringField(out, "kind", "ClusterRoleBinding");
  Key(out, "metadata");
  out << YAML::BeginMap;
  StringField(out, "name", o.service_account);
  out << YAML::EndMap;
  Key(out, "roleRef");
  out << YAML::BeginMap;
  StringField(out, "apiGroup", "rbac.authorization.k8s.io");
  StringField(out, "kind", "ClusterRole");
  StringField(out, "name", o.service_account);
  out << YAML::EndMap;
  Key(out, "subjects");
  out << YAML::BeginSeq << YAML::BeginMap;
  StringField(out, "kind", "ServiceAccount");
  StringField(out, "name", o.service_account);
  StringField(out, "namespace", ns);
  out << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
  return text + out.c_str() + "\n---\n";
}

// --label-nodes with golden pins: the project's lock, which the pods' gate reads.
std::string PinnedLockYaml(const FleetOptions& o) {
  YAML::Emitter out;
  out.SetIndent(2);
  out << YAML::Comment(
      "The project's lock with its golden digests (`trainlock lock --golden`): each pod's gate\n"
      "holds its node's report to its key's pin (the image's copy of the lock carries no pins).");
  out << YAML::BeginMap;
  StringField(out, "apiVersion", "v1");
  StringField(out, "kind", "ConfigMap");
  Key(out, "metadata");
  out << YAML::BeginMap;
  StringField(out, "name", PinnedLockConfigMap(o));
  if (!o.k8s_namespace.empty()) StringField(out, "namespace", o.k8s_namespace);
  Labels(out, o);
  out << YAML::EndMap;
  Key(out, "data");
  out << YAML::BeginMap;
  Key(out, kPinnedLockFile);
  out << YAML::Literal << o.lock_text;
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n---\n";
}

std::string JobYaml(const FleetOptions& options) {
  YAML::Emitter out;
  out.SetIndent(2);
  out << YAML::Comment(HowToUse(options));
  out << YAML::BeginMap;
  StringField(out, "apiVersion", "batch/v1");
  StringField(out, "kind", "Job");
  JobMetadata(out, options);
  JobSpec(out, options);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace

std::string KubernetesJobYaml(const FleetOptions& options) {
  return (options.label_nodes ? LabelerRbacYaml(options) : std::string()) +
         (GatesAgainstPinnedLock(options) ? PinnedLockYaml(options) : std::string()) +
         JobYaml(options);
}

}  // namespace trainlock
