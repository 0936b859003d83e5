// `trainlock fleet k8s DIR --watch-daemonset --watch-image REF@sha256:...`: the DaemonSet that
// runs `trainlock watch --revoke k8s` on every node (docs/watch.md), with its ServiceAccount and
// a ClusterRole that may get, list and patch nodes (the breaker lists them, a revocation labels
// and taints its own). The container reads the host's /dev/kmsg (privileged: a container's
// device cgroup admits no other character device) and keeps the record on the host, where
// the node-problem-detector plugin's `trainlock gate --watch-state` reads it.
#include <yaml-cpp/yaml.h>

#include "base/diagnostic.h"
#include "base/refs.h"
#include "fleet/fleet.h"

namespace trainlock {
namespace {

constexpr const char* kWatchName = "trainlock-watch";

void WatchKey(YAML::Emitter& out, const char* key) {
  out << YAML::Key << key << YAML::Value;
}

// Every string quoted: names, paths and quantities are never read as numbers or booleans.
void WatchField(YAML::Emitter& out, const char* key, const std::string& value) {
  WatchKey(out, key);
  out << YAML::DoubleQuoted << value;
}

// `outer: {inner: {app.kubernetes.io/name: <the watch>}}`: the DaemonSet's selector and its
// pods' labels, which must match.
void WatchNameLabels(YAML::Emitter& out, const char* outer, const char* inner) {
  WatchKey(out, outer);
  out << YAML::BeginMap;
  WatchKey(out, inner);
  out << YAML::BeginMap;
  WatchField(out, "app.kubernetes.io/name", kWatchName);
  out << YAML::EndMap << YAML::EndMap;
}

void WatchMetadata(YAML::Emitter& out, const std::string& ns) {
  WatchKey(out, "metadata");
  out << YAML::BeginMap;
  WatchField(out, "name", kWatchName);
  if (!ns.empty()) WatchField(out, "namespace", ns);
  out << YAML::EndMap;
}

void WatchRbac(YAML::Emitter& out, const std::string& ns) {
  out << YAML::BeginMap;
  WatchField(out, "apiVersion", "v1");
  WatchField(out, "kind", "ServiceAccount");
  WatchMetadata(out, ns);
  out << YAML::EndMap << YAML::BeginDoc << YAML::BeginMap;
  WatchField(out, "apiVersion", "rbac.authorization.k8s.io/v1");
  WatchField(out, "kind", "ClusterRole");
  WatchMetadata(out, "");
  WatchKey(out, "rules");
  out << YAML::BeginSeq << YAML::BeginMap;
  WatchKey(out, "apiGroups");
  out << YAML::Flow << YAML::BeginSeq << YAML::DoubleQuoted << std::string() << YAML::EndSeq;
  WatchKey(out, "resources");
  out << YAML::Flow << YAML::BeginSeq << "nodes" << YAML::EndSeq;
  WatchKey(out, "verbs");
  out << YAML::Flow << YAML::BeginSeq << "get"
      << "list"
      << "patch" << YAML::EndSeq;
  out << YAML::EndMap << YAML::EndSeq << YAML::EndMap << YAML::BeginDoc << YAML::BeginMap;
  WatchField(out, "apiVersion", "rbac.authorization.k8s.io/v1");
  WatchField(out, "kind", "ClusterRoleBinding");
  WatchMetadata(out, "");
  WatchKey(out, "roleRef");
  out << YAML::BeginMap;
  WatchField(out, "apiGroup", "rbac.authorization.k8s.io");
  WatchField(out, "kind", "ClusterRole");
  WatchField(out, "name", kWatchName);
  out << YAML::EndMap;
  WatchKey(out, "subjects");
  out << YAML::BeginSeq << YAML::BeginMap;
  WatchField(out, "kind", "ServiceAccount");
  WatchField(out, "name", kWatchName);
  WatchField(out, "namespace", ns);
  out << YAML::EndMap << YAML::EndSeq << YAML::EndMap;
}

void HostPathVolume(YAML::Emitter& out, const char* name, const std::string& path,
                    const char* type) {
  out << YAML::BeginMap;
  WatchField(out, "name", name);
  WatchKey(out, "hostPath");
  out << YAML::BeginMap;
  WatchField(out, "path", path);
  WatchField(out, "type", type);
  out << YAML::EndMap << YAML::EndMap;
}

void WatchMount(YAML::Emitter& out, const char* name, const std::string& path, bool read_only) {
  out << YAML::BeginMap;
  WatchField(out, "name", name);
  WatchField(out, "mountPath", path);
  WatchKey(out, "readOnly");
  out << YAML::TrueFalseBool << read_only << YAML::EndMap;
}

// The node's name, and NVML: the NVIDIA container runtime mounts the driver's NVML library
// (the `utility` capability) and every GPU's device into a container that names them, without
// the pod asking for (and so taking) a GPU, as NVIDIA's own node agents do. Without that runtime
// the watch says once that NVML is missing and follows the kernel log alone (`--nvml auto`).
void WatchEnv(YAML::Emitter& out) {
  WatchKey(out, "env");
  out << YAML::BeginSeq << YAML::BeginMap;
  WatchField(out, "name", "NODE_NAME");
  WatchKey(out, "valueFrom");
  out << YAML::BeginMap;
  WatchKey(out, "fieldRef");
  out << YAML::BeginMap;
  WatchField(out, "fieldPath", "spec.nodeName");
  out << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  for (const auto& [name, value] : {std::pair{"NVIDIA_VISIBLE_DEVICES", "all"},
                                    std::pair{"NVIDIA_DRIVER_CAPABILITIES", "utility"}}) {
    out << YAML::BeginMap;
    WatchField(out, "name", name);
    WatchField(out, "value", value);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void WatchContainer(YAML::Emitter& out, const FleetOptions& o) {
  out << YAML::BeginSeq << YAML::BeginMap;
  WatchField(out, "name", "watch");
  WatchField(out, "image", o.watch_image);
  WatchKey(out, "command");
  out << YAML::BeginSeq;
  // $(NODE_NAME) is the kubelet's expansion of the env variable below, not a shell's.
  for (const std::string& arg :
       {std::string("trainlock"), std::string("watch"), std::string("--revoke"), std::string("k8s"),
        std::string("--node"), std::string("$(NODE_NAME)"), std::string("--watch-state"),
        o.watch_state})
    out << YAML::DoubleQuoted << arg;
  if (!o.reports_dir.empty()) out << YAML::DoubleQuoted << "--reports-dir" << o.reports_dir;
  out << YAML::EndSeq;
  WatchEnv(out);
  WatchKey(out, "securityContext");
  out << YAML::BeginMap;
  WatchKey(out, "privileged");
  out << YAML::TrueFalseBool << true;
  WatchKey(out, "readOnlyRootFilesystem");
  out << YAML::TrueFalseBool << true << YAML::EndMap;
  WatchKey(out, "resources");
  out << YAML::BeginMap;
  WatchKey(out, "requests");
  out << YAML::BeginMap;
  WatchField(out, "cpu", "10m");
  WatchField(out, "memory", "32Mi");
  out << YAML::EndMap;
  WatchKey(out, "limits");
  out << YAML::BeginMap;
  WatchField(out, "memory", "256Mi");
  out << YAML::EndMap << YAML::EndMap;
  WatchKey(out, "volumeMounts");
  out << YAML::BeginSeq;
  WatchMount(out, "kmsg", "/dev/kmsg", true);
  WatchMount(out, "state", o.watch_state, false);
  if (!o.reports_dir.empty()) WatchMount(out, "reports", o.reports_dir, true);
  out << YAML::EndSeq << YAML::EndMap << YAML::EndSeq;
}

void WatchPodSpec(YAML::Emitter& out, const FleetOptions& o) {
  WatchKey(out, "spec");
  out << YAML::BeginMap;
  WatchField(out, "serviceAccountName", kWatchName);
  // Every node, its revoked and gated ones too: the watch is what taints them.
  WatchKey(out, "tolerations");
  out << YAML::BeginSeq << YAML::BeginMap;
  WatchField(out, "operator", "Exists");
  out << YAML::EndMap << YAML::EndSeq;
  WatchKey(out, "containers");
  WatchContainer(out, o);
  WatchKey(out, "volumes");
  out << YAML::BeginSeq;
  HostPathVolume(out, "kmsg", "/dev/kmsg", "CharDevice");
  HostPathVolume(out, "state", o.watch_state, "DirectoryOrCreate");
  if (!o.reports_dir.empty()) HostPathVolume(out, "reports", o.reports_dir, "Directory");
  out << YAML::EndSeq << YAML::EndMap;
}

void WatchDaemonSet(YAML::Emitter& out, const FleetOptions& o, const std::string& ns) {
  out << YAML::BeginMap;
  WatchField(out, "apiVersion", "apps/v1");
  WatchField(out, "kind", "DaemonSet");
  WatchMetadata(out, ns);
  WatchKey(out, "spec");
  out << YAML::BeginMap;
  WatchNameLabels(out, "selector", "matchLabels");
  WatchKey(out, "template");
  out << YAML::BeginMap;
  WatchNameLabels(out, "metadata", "labels");
  WatchPodSpec(out, o);
  out << YAML::EndMap << YAML::EndMap << YAML::EndMap;
}

}  // namespace

std::string KubernetesWatchDaemonSetYaml(const FleetOptions& options) {
  std::string error;
  const std::optional<ImageRef> image = ParseImageRef(options.watch_image, &error);
  if (!image || image->digest.empty()) {
    throw InputError(Diagnostic{"--watch-image",
                                {},
                                "--watch-daemonset needs an image with "
                                "trainlock and kubectl, pinned by digest: " +
                                    Quoted(options.watch_image),
                                "give REF@sha256:<64 hex>"});
  }
  for (char c : options.watch_state) {
    if (options.watch_state.front() != '/' || static_cast<unsigned char>(c) < 0x20) {
      throw InputError(
          Diagnostic{"--watch-state",
                     {},
                     "not an absolute path on the node: " + Quoted(options.watch_state),
                     ""});
    }
  }
  const std::string ns = options.k8s_namespace.empty() ? "default" : options.k8s_namespace;
  YAML::Emitter out;
  out.SetIndent(2);
  WatchRbac(out, ns);
  out << YAML::BeginDoc;
  WatchDaemonSet(out, options, ns);
  return "# Generated by `trainlock fleet k8s --watch-daemonset` (docs/watch.md): `trainlock "
         "watch\n"
         "# --revoke k8s` on every node; its record in " +
         options.watch_state +
         " on the host, which the\n# node-problem-detector plugin's gate reads.\n" +
         std::string(out.c_str()) + "\n";
}

}  // namespace trainlock
