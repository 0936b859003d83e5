// `trainlock watch --revoke k8s` with the real kubectl against a local Kubernetes API stand-in
// (tests/servers/kube_api_server.py: discovery, GET and PATCH of Nodes, the three patch types
// applied to the stored Node and checked as the API server checks a Node): the label and taint
// a revocation leaves on the Node, what it keeps of others', the circuit breaker counting the
// stand-in's GPU nodes, and every Node a patch produced validated against the Kubernetes
// OpenAPI schemas (tests/k8s/validate.mjs). The `fleet k8s --label-nodes` label script runs
// against the same stand-in. Skipped only where kubectl (or, for the schema, node) is missing.
#include <gtest/gtest.h>

#include <time.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fleet/fleet.h"
#include "test_support.h"
#include "watch/node_record.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ReadFile;
using testing::RunResult;
using testing::WriteFile;

// The Kubernetes API stand-in, started over `nodes` in `dir` and killed with the object.
class KubeApiStandIn {
 public:
  KubeApiStandIn(const fs::path& dir, const json& nodes) : dir_(dir) {
    WriteFile(dir_ / "nodes.json", nodes.dump());
    const fs::path script = testing::SourceDir() / "tests/servers/kube_api_server.py";
    server_ = std::make_unique<testing::BackgroundProcess>(
        std::vector<std::string>{"python3", script.string(), "--nodes",
                                 (dir_ / "nodes.json").string(), "--log", Log().string(), "--state",
                                 (dir_ / "state.json").string(), "--port-file",
                                 (dir_ / "port").string(), "--lifetime", "300"},
        dir_ / "server.out");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!fs::exists(dir_ / "port") && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!fs::exists(dir_ / "port")) {
      error_ = "kube_api_server.py did not start: " + ReadFile(dir_ / "server.out");
      return;
    }
    const std::string port = ReadFile(dir_ / "port").substr(0, ReadFile(dir_ / "port").find('\n'));
    WriteFile(dir_ / "kubeconfig",
              "apiVersion: v1\nkind: Config\nclusters:\n- name: stand-in\n  cluster:\n"
              "    server: http://127.0.0.1:" +
                  port +
                  "\ncontexts:\n- name: stand-in\n  context:\n    cluster: stand-in\n"
                  "    user: stand-in\ncurrent-context: stand-in\nusers:\n- name: stand-in\n"
                  "  user: {}\n");
  }

  const std::string& error() const { return error_; }
  // KUBECONFIG, and HOME so that kubectl's discovery cache stays in the test's directory.
  std::vector<std::string> Env() const {
    return {"KUBECONFIG=" + (dir_ / "kubeconfig").string(), "HOME=" + dir_.string()};
  }
  // Every request the stand-in answered, in order: {method, path, query, content_type, body,
  // status, node}.
  std::vector<json> Requests() const {
    std::vector<json> requests;
    if (!fs::exists(Log())) return requests;
    std::istringstream lines(ReadFile(Log()));
    for (std::string line; std::getline(lines, line);) requests.push_back(json::parse(line));
    return requests;
  }
  std::vector<json> Patches() const {
    std::vector<json> patches;
    for (const json& r : Requests())
      if (r["method"] == "PATCH") patches.push_back(r);
    return patches;
  }
  // The stored Node now.
  json Node(const std::string& name) const {
    const json state = json::parse(ReadFile(dir_ / "state.json"));
    for (const json& node : state["items"])
      if (node["metadata"]["name"] == name) return node;
    return nullptr;
  }

 private:
  fs::path Log() const { return dir_ / "requests.jsonl"; }
  fs::path dir_;
  std::string error_;
  std::unique_ptr<testing::BackgroundProcess> server_;
};

// A Node as the API holds it: `gpus` nvidia.com/gpu of capacity (none when 0).
json NodeObject(const std::string& name, const json& labels = json::object(),
                const json& taints = json::array(), int gpus = 8) {
  json node = {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata",
                {{"name", name},
                 {"labels", labels},
                 {"annotations", {{"node.alpha.kubernetes.io/ttl", "0"}}}}},
               {"spec", {{"podCIDR", "10.244.1.0/24"}}},
               {"status", {{"capacity", {{"cpu", "64"}, {"memory", "2Ti"}}}}}};
  node["metadata"]["labels"]["kubernetes.io/hostname"] = name;
  if (!taints.empty()) node["spec"]["taints"] = taints;
  if (gpus > 0) node["status"]["capacity"]["nvidia.com/gpu"] = std::to_string(gpus);
  return node;
}

json Taint(const std::string& key, const std::string& value, const std::string& effect) {
  return {{"key", key}, {"value", value}, {"effect", effect}};
}

// The revoked-at label's form of a UTC time `ago_s` seconds ago: 20261207T190239Z.
std::string RevokedAtLabel(int64_t ago_s) {
  const time_t at = time(nullptr) - ago_s;
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", std::gmtime(&at));
  return text;
}

// The UTC second a revoked-at label names; -1 when it is not one.
int64_t LabelSeconds(const std::string& label) {
  std::tm parts{};
  if (label.size() != 16 || !strptime(label.c_str(), "%Y%m%dT%H%M%SZ", &parts)) return -1;
  return timegm(&parts);
}

int64_t MonotonicNowUs(int64_t ago_s) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int64_t{now.tv_sec} * 1000000 + now.tv_nsec / 1000 - ago_s * 1000000;
}

// One /dev/kmsg record of the kernel (facility 0) at kernel time `time_us`.
std::string KmsgLine(int sequence, int64_t time_us, const std::string& message) {
  return "4," + std::to_string(sequence) + "," + std::to_string(time_us) + ",-;" + message + "\n";
}

std::string XidLine(const std::string& pci, int xid, const std::string& text) {
  return "NVRM: Xid (PCI:" + pci + "): " + std::to_string(xid) + ", pid=1234, name=python3, " +
         text;
}

const std::string kFallenOff = XidLine("0000:3b:00", 79, "GPU has fallen off the bus.");

// Three other GPU nodes, none revoked, and a CPU node.
json Cluster(const json& node07) {
  return json::array({node07, NodeObject("node-08"), NodeObject("node-09"), NodeObject("node-10"),
                      NodeObject("cpu-01", json::object(), json::array(), 0)});
}

bool HasTaint(const json& node, const json& taint) {
  for (const json& t : node.value("spec", json::object()).value("taints", json::array()))
    if (t == taint) return true;
  return false;
}

class WatchKube : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::HaveProgram("kubectl")) GTEST_SKIP() << "kubectl is not installed";
    if (!testing::HaveProgram("python3")) GTEST_SKIP() << "python3 is not installed";
  }
  void StartApi(const json& nodes) {
    api_ = std::make_unique<KubeApiStandIn>(tmp_.path() / "api", nodes);
    ASSERT_EQ(api_->error(), "");
  }
  // The kernel log the watch reads: these messages, one record each, a second apart, ending
  // a second ago.
  void KernelLog(const std::vector<std::string>& messages) {
    std::string log;
    for (size_t i = 0; i < messages.size(); ++i)
      log += KmsgLine(2000 + static_cast<int>(i),
                      MonotonicNowUs(static_cast<int64_t>(messages.size() - i)), messages[i]);
    WriteFile(tmp_.path() / "kmsg", log);
  }
  RunResult Watch(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"watch",
                                     "--kmsg",
                                     (tmp_.path() / "kmsg").string(),
                                     "--watch-state",
                                     (tmp_.path() / "watch").string(),
                                     "--node",
                                     "node-07",
                                     "--revoke",
                                     "k8s"};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::RunProgram("trainlock", args, api_->Env());
  }

  testing::TempDir tmp_;
  std::unique_ptr<KubeApiStandIn> api_;
};

TEST_F(WatchKube, ARevocationLabelsAndTaintsTheNodeKeepingOthersLabelsAndTaints) {
  const json maintenance = Taint("example.com/maintenance", "disk", "NoExecute");
  StartApi(Cluster(NodeObject("node-07", {{"team", "ml"}}, json::array({maintenance}))));
  KernelLog({kFallenOff});
  const int64_t before = time(nullptr);
  RunResult r = Watch();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("labelled and tainted (0 of 4 GPU nodes already revoked"), std::string::npos)
      << r.out << r.err;
  const json node = api_->Node("node-07");
  const json& labels = node["metadata"]["labels"];
  EXPECT_EQ(labels.value(kNodeLabelValidated, ""), "revoked") << node.dump(1);
  // The event's UTC time, to the second, in the label's form (a label value holds no ':').
  const std::string at = labels.value(kNodeLabelRevokedAt, "");
  EXPECT_GE(LabelSeconds(at), before - 3) << at;
  EXPECT_LE(LabelSeconds(at), before) << at;
  EXPECT_TRUE(HasTaint(node, Taint(kNodeGateTaint, "revoked", "NoSchedule"))) << node.dump(1);
  // What others set stays: their label, annotation and taint.
  EXPECT_EQ(labels.value("team", ""), "ml");
  EXPECT_EQ(node["metadata"]["annotations"].value("node.alpha.kubernetes.io/ttl", ""), "0");
  EXPECT_TRUE(HasTaint(node, maintenance)) << node.dump(1);
  EXPECT_EQ(node["spec"]["taints"].size(), 2u) << node.dump(1);
  // Nothing else in the cluster changed.
  for (const json& p : api_->Patches()) EXPECT_EQ(p["path"], "/api/v1/nodes/node-07");
}

TEST_F(WatchKube, TheGatesEarlierTaintIsOverwrittenNotDoubled) {
  StartApi(Cluster(NodeObject("node-07", {{kNodeLabelValidated, "fail"}},
                              json::array({Taint(kNodeGateTaint, "age", "NoSchedule")}))));
  KernelLog({kFallenOff});
  RunResult r = Watch();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json node = api_->Node("node-07");
  EXPECT_EQ(node["spec"]["taints"], json::array({Taint(kNodeGateTaint, "revoked", "NoSchedule")}))
      << node.dump(1);
  EXPECT_EQ(node["metadata"]["labels"].value(kNodeLabelValidated, ""), "revoked");
}

TEST_F(WatchKube, ASecondRevokingEventOnTheRevokedNodeStillSucceeds) {
  StartApi(Cluster(NodeObject("node-07")));
  KernelLog({kFallenOff, XidLine("0000:5e:00", 48, "An uncorrectable double bit error (DBE)")});
  RunResult r = Watch();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("not revoked through the scheduler"), std::string::npos) << r.out;
  const size_t first = r.out.find("labelled and tainted");
  ASSERT_NE(first, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("labelled and tainted", first + 1), std::string::npos) << r.out;
  EXPECT_TRUE(HasTaint(api_->Node("node-07"), Taint(kNodeGateTaint, "revoked", "NoSchedule")));
}

TEST_F(WatchKube, InfoAndRevalidateEventsChangeNothing) {
  StartApi(Cluster(NodeObject("node-07")));
  const json before = api_->Node("node-07");
  KernelLog({XidLine("0000:3b:00", 63, "Row Remapper: New row is marked for remapping."),
             XidLine("0000:3b:00", 45, "Ch 00000010")});
  RunResult r = Watch();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(" 0 revoke, 1 revalidate, 1 info"), std::string::npos) << r.out;
  EXPECT_TRUE(api_->Patches().empty()) << api_->Patches().front().dump();
  EXPECT_EQ(api_->Node("node-07"), before);
}

TEST_F(WatchKube, TheBreakerCountsTheClustersRevokedGpuNodesAndPatchesNothing) {
  // Two of four GPU nodes revoked a minute ago (the CPU node does not count): a third passes
  // 0.5.
  json cluster = Cluster(NodeObject("node-07"));
  cluster[1]["metadata"]["labels"][kNodeLabelRevokedAt] = RevokedAtLabel(60);
  cluster[2]["metadata"]["labels"][kNodeLabelRevokedAt] = RevokedAtLabel(120);
  StartApi(cluster);
  KernelLog({kFallenOff});
  RunResult r = Watch();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("CIRCUIT BREAKER: not revoked through the scheduler: 2 of 4 GPU nodes "
                       "already revoked by trainlock within 300 s"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(api_->Patches().empty()) << api_->Patches().front().dump();
  bool listed = false;
  for (const json& request : api_->Requests())
    listed = listed || (request["method"] == "GET" && request["path"] == "/api/v1/nodes");
  EXPECT_TRUE(listed) << "the breaker did not list the nodes through kubectl";
  EXPECT_EQ(api_->Node("node-07")["metadata"]["labels"].count(kNodeLabelValidated), 0u);
  // The record is written anyway: the gate still refuses the node's old report.
  const std::optional<NodeRecord> record = ReadNodeRecord(tmp_.path() / "watch", "node-07");
  ASSERT_TRUE(record && record->revoked);
  EXPECT_EQ(record->revoked->code, 79);
}

TEST_F(WatchKube, ARevocationOutsideTheWindowIsNotCounted) {
  // One revoked a minute ago, one an hour ago: with node-07, 2 of 4, not past 0.5.
  json cluster = Cluster(NodeObject("node-07"));
  cluster[1]["metadata"]["labels"][kNodeLabelRevokedAt] = RevokedAtLabel(60);
  cluster[2]["metadata"]["labels"][kNodeLabelRevokedAt] = RevokedAtLabel(3600);
  StartApi(cluster);
  KernelLog({kFallenOff});
  RunResult r = Watch({"--breaker-window", "10m"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("labelled and tainted (1 of 4 GPU nodes already revoked"), std::string::npos)
      << r.out << r.err;
  EXPECT_TRUE(HasTaint(api_->Node("node-07"), Taint(kNodeGateTaint, "revoked", "NoSchedule")));
}

// The stand-in refuses, as the API server does (422, the Node unchanged), a patch kubectl
// passes on unchecked: a label value with ':' and a taint effect that does not exist.
TEST_F(WatchKube, TheStandInRefusesALabelOrTaintTheApiServerWouldRefuse) {
  StartApi(Cluster(NodeObject("node-07")));
  const json before = api_->Node("node-07");
  for (const std::string& patch :
       {std::string(
            R"({"metadata":{"labels":{"trainlock.io/revoked-at":"2026-12-07T19:02:39Z"}}})"),
        std::string(
            R"({"spec":{"taints":[{"key":"trainlock.io/gate","effect":"NoScheduled"}]}})")}) {
    RunResult r = testing::RunCommand(
        {"kubectl", "patch", "node", "node-07", "--type", "merge", "-p", patch}, api_->Env());
    EXPECT_EQ(r.exit_code, 1) << patch << r.out << r.err;
    EXPECT_NE(r.err.find("Node \"node-07\" is invalid"), std::string::npos) << r.err;
  }
  for (const json& p : api_->Patches()) EXPECT_EQ(p["status"], 422) << p.dump();
  EXPECT_EQ(api_->Patches().size(), 2u);
  EXPECT_EQ(api_->Node("node-07"), before);
}

// tests/k8s/validate.mjs on every Node in `nodes`; "" when it cannot run.
RunResult ValidateNodes(const fs::path& file, const std::vector<json>& nodes) {
  std::string documents;
  for (const json& node : nodes) documents += "---\n" + node.dump() + "\n";
  WriteFile(file, documents);
  return testing::RunCommand(
      {"node", (testing::SourceDir() / "tests/k8s/validate.mjs").string(), file.string()});
}

bool HaveNodeSchemas() {
  return testing::HaveProgram("node") &&
         fs::is_directory(testing::SourceDir() / "tests/k8s/node_modules/kubernetes-models");
}

TEST_F(WatchKube, EveryPatchKubectlSentGivesANodeTheSchemaAccepts) {
  if (!HaveNodeSchemas()) GTEST_SKIP() << "node or tests/k8s/node_modules missing: ci/deps.sh";
  StartApi(Cluster(NodeObject("node-07", {{"team", "ml"}},
                              json::array({Taint("example.com/maintenance", "", "NoExecute"),
                                           Taint(kNodeGateTaint, "age", "NoSchedule")}))));
  KernelLog({kFallenOff, XidLine("0000:5e:00", 48, "An uncorrectable double bit error (DBE)")});
  RunResult r = Watch();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<json> nodes;
  std::string types;
  for (const json& patch : api_->Patches()) {
    EXPECT_EQ(patch["status"], 200) << patch.dump();
    nodes.push_back(patch["node"]);
    types += patch["content_type"].get<std::string>() + "\n";
  }
  // The label as a merge patch, the taint as a strategic merge patch, for each event.
  EXPECT_EQ(types,
            "application/merge-patch+json\napplication/strategic-merge-patch+json\n"
            "application/merge-patch+json\napplication/strategic-merge-patch+json\n");
  RunResult schema = ValidateNodes(tmp_.path() / "patched.yaml", nodes);
  EXPECT_EQ(schema.exit_code, 0) << schema.out << schema.err;
  EXPECT_NE(schema.out.find(std::to_string(nodes.size()) + " document(s), 0 problem(s)"),
            std::string::npos)
      << schema.out;
}

// The schema check above can fail: a Node with a misspelt taint effect and an unknown field.
TEST_F(WatchKube, TheNodeSchemaCheckRefusesABadTaint) {
  if (!HaveNodeSchemas()) GTEST_SKIP() << "node or tests/k8s/node_modules missing: ci/deps.sh";
  json node = NodeObject("node-07", json::object(),
                         json::array({Taint(kNodeGateTaint, "revoked", "NoSchedul")}));
  node["spec"]["taints"][0]["tolerationSeconds"] = 5;
  RunResult schema = ValidateNodes(tmp_.path() / "bad.yaml", {node});
  EXPECT_EQ(schema.exit_code, 1) << schema.out << schema.err;
  EXPECT_NE(schema.out.find("spec/taints/0/effect must be equal to one of the allowed values"),
            std::string::npos)
      << schema.out;
  EXPECT_NE(schema.out.find("tolerationSeconds: unknown field of V1Taint"), std::string::npos)
      << schema.out;
}

// `fleet k8s --label-nodes`' label script (the decision the validate container leaves in
// /reports, here a temporary directory) with the real kubectl against the stand-in: a
// refusal, then a pass.
TEST_F(WatchKube, TheLabelScriptTaintsARefusedNodeAndClearsItOnAPass) {
  const json maintenance = Taint("example.com/maintenance", "disk", "NoExecute");
  StartApi(json::array({NodeObject("gpu-a", {{"team", "ml"}}, json::array({maintenance}))}));
  FleetOptions o;
  o.image = "registry.example/p@sha256:" + std::string(64, 'a');
  o.lock_sha256 = std::string(64, 'c');
  o.valid_for_s = 3600;
  std::string script = KubernetesLabelScript(o);
  for (size_t at; (at = script.find("/reports/")) != std::string::npos;)
    script.replace(at, 9, (tmp_.path() / "").string());
  std::vector<std::string> env = api_->Env();
  env.push_back("TRAINLOCK_NODE_NAME=gpu-a");

  WriteFile(tmp_.path() / "gate.status", "1\n");
  WriteFile(tmp_.path() / "gate.txt", "gate: refused: ...\n  - age: the report is 2h old\n");
  RunResult r = testing::RunCommand({"sh", "-c", script}, env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  json node = api_->Node("gpu-a");
  EXPECT_EQ(node["metadata"]["labels"].value(kNodeLabelValidated, ""), "fail") << node.dump(1);
  EXPECT_TRUE(HasTaint(node, Taint(kNodeGateTaint, "age", "NoSchedule"))) << node.dump(1);

  WriteFile(tmp_.path() / "gate.status", "0\n");
  WriteFile(tmp_.path() / "gate.txt", "gate: pass: ...\n");
  r = testing::RunCommand({"sh", "-c", script}, env);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  node = api_->Node("gpu-a");
  const json& labels = node["metadata"]["labels"];
  EXPECT_EQ(labels.value(kNodeLabelValidated, ""), "pass") << node.dump(1);
  EXPECT_EQ(labels.value(kNodeLabelLock, ""), std::string(32, 'c'));
  EXPECT_EQ(labels.value(kNodeLabelImage, ""), std::string(32, 'a'));
  EXPECT_EQ(labels.value(kNodeLabelValidUntil, "").size(), 10u) << node.dump(1);
  EXPECT_EQ(labels.value("team", ""), "ml");
  EXPECT_EQ(node["spec"]["taints"], json::array({maintenance})) << node.dump(1);
}

}  // namespace
}  // namespace trainlock
