// Specification of the Kubernetes node gate (`trainlock fleet k8s`): named nodes, pull secrets,
// --label-nodes (validate, gate, then label or taint the node), the long run's nodeAffinity and
// the wait that returns at the first failed pod. No cluster runs here (nor in CI): the YAML is
// checked against the Kubernetes OpenAPI schemas (tests/k8s/validate.mjs, with the npm models
// ci/deps.sh installs) and through `kubectl --local` transforms, and the label and wait scripts
// run against a stand-in kubectl that records its arguments.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <map>

#include "fleet/fleet.h"
#include "project/project.h"
#include "report/golden_pin.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunCommand;
using testing::RunResult;
using testing::RunTrainlock;
using testing::SourceDir;
using testing::WriteFile;

const std::string kDigest = "sha256:" + std::string(64, 'a');
const std::string kKubectlImage = "registry.example/kubectl@sha256:" + std::string(64, 'b');

class FleetK8sGate : public ::testing::Test {
 protected:
  void SetUp() override {
    project_ = tmp_.path() / "h200-pilot";
    fs::create_directories(project_);
    testing::CopyExample("h200-pilot", project_);
    WriteFile(project_ / kLockFile, ReadFile(project_ / kLockFile) +
                                        "\n[images.cuda]\nref = \"registry.example/p:1\"\n"
                                        "digest = \"" +
                                        kDigest + "\"\n");
  }

  RunResult Fleet(std::vector<std::string> extra) {
    std::vector<std::string> args = {"fleet", "k8s", project_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunTrainlock(args);
  }

  // The generated documents, written to FILE too.
  std::vector<YAML::Node> Documents(std::vector<std::string> extra, const std::string& file) {
    RunResult r = Fleet(extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    WriteFile(tmp_.path() / file, r.out);
    return YAML::LoadAll(r.out);
  }

  std::vector<std::string> Labelled() {
    return {"--node",          "gpu-a,gpu-b",         "--label-nodes",
            "--kubectl-image", kKubectlImage,         "--keys-secret",
            "trainlock-keys",  "--image-pull-secret", "regcred"};
  }

  // A stand-in kubectl on PATH: appends its arguments to kubectl.log, one call a line, and
  // prints pod phases from phases.txt for `get pods`.
  std::string FakeKubectlPath() {
    const fs::path bin = tmp_.path() / "bin";
    fs::create_directories(bin);
    WriteFile(bin / "kubectl", "#!/bin/sh\necho \"$*\" >> " +
                                   (tmp_.path() / "kubectl.log").string() +
                                   "\ncase \"$1\" in get) cat " +
                                   (tmp_.path() / "phases.txt").string() + ";; esac\n");
    fs::permissions(bin / "kubectl", fs::perms::owner_all);
    return "PATH=" + bin.string() + ":/usr/bin:/bin";
  }

  // Pins a golden digest in the project's lock (`trainlock lock --golden`); its text after.
  std::string PinGolden() {
    const fs::path lock = project_ / kLockFile;
    const std::string build = LoadProject(project_).lock->lock_build_sha256;
    GoldenDigest pin;
    pin.digest = std::string(64, 'c');
    pin.key.gpu = "NVIDIA H200";
    pin.key.lock_sha256 = build;
    WriteFile(lock, LockTextWithGoldenPin(ReadFile(lock), "trainlock.lock", build, pin));
    return ReadFile(lock);
  }

  testing::TempDir tmp_;
  fs::path project_;
};

YAML::Node PodSpec(const YAML::Node& job) {
  return job["spec"]["template"]["spec"];
}

TEST_F(FleetK8sGate, NamedNodesAreRequiredByHostnameAndSetTheCount) {
  std::vector<YAML::Node> docs = Documents({"--node", "gpu-a,gpu-b"}, "job.yaml");
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0]["spec"]["completions"].as<int>(), 2);
  const YAML::Node term =
      PodSpec(docs[0])["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                      ["nodeSelectorTerms"][0]["matchExpressions"];
  ASSERT_EQ(term.size(), 2u);  // the product and the names, both required
  EXPECT_EQ(term[0]["key"].as<std::string>(), kGpuProductLabel);
  EXPECT_EQ(term[1]["key"].as<std::string>(), "kubernetes.io/hostname");
  EXPECT_EQ(term[1]["values"][1].as<std::string>(), "gpu-b");
  EXPECT_FALSE(PodSpec(docs[0])["nodeSelector"]);
}

TEST_F(FleetK8sGate, ACountThatDisagreesWithTheNamedNodesIsBadInput) {
  RunResult r = Fleet({"--nodes", "3", "--node", "gpu-a,gpu-b"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--nodes: error: 3 nodes, but 2 --node names"), std::string::npos) << r.err;
  r = Fleet({"--node", "GPU_A"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--node: error: not a Kubernetes node name: 'GPU_A'"), std::string::npos)
      << r.err;
}

TEST_F(FleetK8sGate, ImagePullSecretsReachThePods) {
  std::vector<YAML::Node> docs =
      Documents({"--nodes", "2", "--image-pull-secret", "regcred,mirror"}, "job.yaml");
  const YAML::Node secrets = PodSpec(docs[0])["imagePullSecrets"];
  ASSERT_EQ(secrets.size(), 2u);
  EXPECT_EQ(secrets[0]["name"].as<std::string>(), "regcred");
  EXPECT_EQ(secrets[1]["name"].as<std::string>(), "mirror");
  RunResult r = Fleet({"--nodes", "2", "--image-pull-secret", "Reg_Cred"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--image-pull-secret: error: not a Secret name"), std::string::npos);
}

TEST_F(FleetK8sGate, LabelNodesValidatesSignsAndGatesInTheLockedImageThenLabels) {
  std::vector<YAML::Node> docs = Documents(Labelled(), "labelled.yaml");
  ASSERT_EQ(docs.size(), 4u);
  EXPECT_EQ(docs[0]["kind"].as<std::string>(), "ServiceAccount");
  EXPECT_EQ(docs[1]["kind"].as<std::string>(), "ClusterRole");
  EXPECT_EQ(docs[1]["rules"][0]["resources"][0].as<std::string>(), "nodes");
  EXPECT_EQ(docs[2]["kind"].as<std::string>(), "ClusterRoleBinding");
  const YAML::Node pod = PodSpec(docs[3]);
  EXPECT_EQ(pod["serviceAccountName"].as<std::string>(), "trainlock-node-labeler");
  const YAML::Node validate = pod["initContainers"][0];
  EXPECT_EQ(validate["image"].as<std::string>(), "registry.example/p:1@" + kDigest);
  const std::string script = validate["args"][0].as<std::string>();
  EXPECT_NE(script.find("--sign /var/run/secrets/trainlock/trainlock.key"), std::string::npos)
      << script;
  EXPECT_NE(
      script.find("trainlock gate \"/reports/$TRAINLOCK_NODE_NAME.json\" --lock "
                  "/etc/trainlock --key /var/run/secrets/trainlock/trainlock.pub --image "
                  "\"$TRAINLOCK_IMAGE_DIGEST\" --target cuda --node \"$TRAINLOCK_NODE_NAME\""),
      std::string::npos)
      << script;
  EXPECT_EQ(pod["containers"][0]["image"].as<std::string>(), kKubectlImage);
  bool tolerates_gate_taint = false;
  for (const YAML::Node& t : pod["tolerations"])
    tolerates_gate_taint |= t["key"].as<std::string>() == kNodeGateTaint;
  EXPECT_TRUE(tolerates_gate_taint) << "a tainted node could never be revalidated";
}

// Every object --label-nodes writes that lives in a namespace lives in the chosen one, and the
// ClusterRoleBinding's subject names that ServiceAccount there: a node-patching account in
// `default` while the Job runs elsewhere would be one nobody meant to create.
TEST_F(FleetK8sGate, EveryObjectIsInTheChosenNamespace) {
  std::vector<std::string> args = Labelled();
  args.insert(args.end(), {"--namespace", "gpu-ops"});
  std::vector<YAML::Node> docs = Documents(args, "namespaced.yaml");
  ASSERT_EQ(docs.size(), 4u);
  for (const YAML::Node& doc : docs) {
    const std::string kind = doc["kind"].as<std::string>();
    if (kind == "ClusterRole" || kind == "ClusterRoleBinding") {
      EXPECT_FALSE(doc["metadata"]["namespace"]) << kind << " is cluster-scoped";
    } else {
      EXPECT_EQ(doc["metadata"]["namespace"].as<std::string>(), "gpu-ops") << kind;
    }
  }
  EXPECT_EQ(docs[2]["subjects"][0]["namespace"].as<std::string>(), "gpu-ops");
  EXPECT_EQ(docs[2]["subjects"][0]["name"].as<std::string>(),
            docs[0]["metadata"]["name"].as<std::string>());
  const std::string text = ReadFile(tmp_.path() / "namespaced.yaml");
  for (const char* command : {"kubectl create secret generic trainlock-keys -n gpu-ops",
                              "kubectl apply -n gpu-ops -f FILE", "kubectl get pods -n gpu-ops",
                              "kubectl logs -n gpu-ops"}) {
    EXPECT_NE(text.find(command), std::string::npos) << command << "\n" << text;
  }
  EXPECT_EQ(text.find("namespace: default"), std::string::npos) << text;
  EXPECT_EQ(text.find("-n default"), std::string::npos) << text;
}

// The image's copy of the lock carries no golden pins, so with pins in the project's lock the
// pods' gate reads that lock from a ConfigMap the Job's documents carry: a node whose digest
// differs from its key's pin is tainted, not labelled.
TEST_F(FleetK8sGate, LabelNodesWithGoldenPinsGatesAgainstTheProjectsLockFromAConfigMap) {
  const std::string lock_text = PinGolden();
  std::vector<YAML::Node> docs = Documents(Labelled(), "pinned.yaml");
  ASSERT_EQ(docs.size(), 5u);
  const YAML::Node config_map = docs[3];
  EXPECT_EQ(config_map["kind"].as<std::string>(), "ConfigMap");
  EXPECT_EQ(config_map["data"]["trainlock.lock"].as<std::string>(), lock_text);
  const YAML::Node pod = PodSpec(docs[4]);
  const std::string script = pod["initContainers"][0]["args"][0].as<std::string>();
  EXPECT_NE(script.find("trainlock gate \"/reports/$TRAINLOCK_NODE_NAME.json\" --lock "
                        "/var/run/trainlock-lock/trainlock.lock "),
            std::string::npos)
      << script;
  bool mounted = false;
  for (const YAML::Node& m : pod["initContainers"][0]["volumeMounts"])
    mounted |= m["mountPath"].as<std::string>() == "/var/run/trainlock-lock" && m["readOnly"];
  EXPECT_TRUE(mounted);
  bool volume = false;
  for (const YAML::Node& v : pod["volumes"])
    volume |= v["configMap"] && v["configMap"]["name"].as<std::string>() ==
                                    config_map["metadata"]["name"].as<std::string>();
  EXPECT_TRUE(volume);
}

TEST_F(FleetK8sGate, WithoutGoldenPinsThePodsGateTheImagesLockAndNoConfigMapIsWritten) {
  std::vector<YAML::Node> docs = Documents(Labelled(), "unpinned.yaml");
  for (const YAML::Node& doc : docs) EXPECT_NE(doc["kind"].as<std::string>(), "ConfigMap");
  EXPECT_EQ(ReadFile(tmp_.path() / "unpinned.yaml").find("trainlock-lock"), std::string::npos);
}

// The pod's scripts (sh): the validation container's and the label container's.
TEST_F(FleetK8sGate, LabelNodesScriptsPassShellcheck) {
  if (!testing::HaveProgram("shellcheck")) GTEST_SKIP() << "shellcheck missing: ci/deps.sh";
  std::vector<YAML::Node> docs = Documents(Labelled(), "labelled.yaml");
  ASSERT_EQ(docs.size(), 4u);
  const YAML::Node pod = PodSpec(docs[3]);
  for (const YAML::Node& container : {pod["initContainers"][0], pod["containers"][0]}) {
    const std::string name = container["name"].as<std::string>();
    const fs::path file = tmp_.path() / (name + ".sh");
    WriteFile(file, container["args"][0].as<std::string>() + "\n");
    RunResult check =
        RunCommand({"shellcheck", "--norc", "--shell=sh", "--format=gcc", file.string()});
    EXPECT_EQ(check.exit_code, 0) << name << ": " << check.out << check.err;
  }
}

TEST_F(FleetK8sGate, LabelNodesRefusesAnUnpinnedKubectlImageOrNoKeys) {
  RunResult r = Fleet({"--nodes", "1", "--label-nodes", "--keys-secret", "k"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--kubectl-image: error:"), std::string::npos) << r.err;
  r = Fleet({"--nodes", "1", "--label-nodes", "--keys-secret", "k", "--kubectl-image",
             "bitnami/kubectl:latest"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is not pinned by digest"), std::string::npos) << r.err;
  r = Fleet({"--nodes", "1", "--label-nodes", "--kubectl-image", kKubectlImage});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--keys-secret: error:"), std::string::npos) << r.err;
}

// The label container's script, run with a stand-in kubectl and the decision the validate
// container leaves in /reports (here a temporary directory).
class LabelScript : public FleetK8sGate {
 protected:
  RunResult Run(const std::string& status, const std::string& gate_output,
                bool report_only = false) {
    FleetOptions o;
    o.report_only = report_only;
    o.image = "registry.example/p@" + kDigest;
    o.lock_sha256 = std::string(64, 'c');
    o.valid_for_s = 3600;
    std::string script = KubernetesLabelScript(o);
    for (size_t at; (at = script.find("/reports/")) != std::string::npos;)
      script.replace(at, 9, (tmp_.path() / "").string());
    if (!status.empty()) WriteFile(tmp_.path() / "gate.status", status + "\n");
    WriteFile(tmp_.path() / "gate.txt", gate_output);
    return RunCommand({"sh", "-c", script}, {FakeKubectlPath(), "TRAINLOCK_NODE_NAME=gpu-a"});
  }
  std::string Calls() { return ReadFile(tmp_.path() / "kubectl.log"); }
};

TEST_F(LabelScript, APassLabelsTheNodeForThisLockAndImageUntilTheWindowEnds) {
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  RunResult r = Run("0", "gate: pass: ...\n");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string calls = Calls();
  const std::string label =
      "label node gpu-a --overwrite trainlock.io/validated=pass "
      "trainlock.io/lock=" +
      std::string(32, 'c') + " trainlock.io/image=" + std::string(32, 'a') +
      " trainlock.io/valid-until=";
  ASSERT_NE(calls.find(label), std::string::npos) << calls;
  const int64_t until = std::stoll(calls.substr(calls.find(label) + label.size()));
  EXPECT_NEAR(static_cast<double>(until), static_cast<double>(now + 3600), 60);
  EXPECT_NE(calls.find("taint node gpu-a trainlock.io/gate:NoSchedule-"), std::string::npos);
}

TEST_F(LabelScript, ARefusalTaintsTheNodeWithTheFirstTopicAndFailsThePod) {
  RunResult r = Run("1", "gate: refused: ...\n  - age: the report is 2h old\n  - node: x\n");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string calls = Calls();
  EXPECT_NE(calls.find("label node gpu-a --overwrite trainlock.io/validated=fail "
                       "trainlock.io/lock- trainlock.io/image- trainlock.io/valid-until-"),
            std::string::npos)
      << calls;
  EXPECT_NE(calls.find("taint node gpu-a --overwrite trainlock.io/gate=age:NoSchedule"),
            std::string::npos)
      << calls;
}

TEST_F(LabelScript, NoDecisionIsARefusalNotAPass) {
  RunResult r = Run("", "");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(Calls().find("trainlock.io/gate=error:NoSchedule"), std::string::npos) << Calls();
  EXPECT_EQ(Calls().find("validated=pass"), std::string::npos) << Calls();
}

// The rollout's first step: the labeller says what it would do, with the gate's reason, and
// calls no kubectl.
TEST_F(LabelScript, ReportOnlySaysTheTaintItWouldSetAndChangesNothing) {
  RunResult r = Run("1", "gate: refused: ...\n  - age: the report is 2h old\n  - node: x\n",
                    /*report_only=*/true);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("trainlock node gate (report only): gpu-a: would label it "
                       "trainlock.io/validated=fail and taint it "
                       "trainlock.io/gate=age:NoSchedule: age: the report is 2h old"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(std::filesystem::exists(tmp_.path() / "kubectl.log")) << Calls();
}

TEST_F(LabelScript, ReportOnlySaysTheLabelAPassWouldSet) {
  RunResult r = Run("0", "gate: pass: ...\n", /*report_only=*/true);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("would label it trainlock.io/validated=pass"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(tmp_.path() / "kubectl.log")) << Calls();
}

// The wait in the Job's header, with a stand-in kubectl reporting pod phases.
class WaitScript : public FleetK8sGate {
 protected:
  RunResult Wait(const std::string& phases) {
    WriteFile(tmp_.path() / "phases.txt", phases);
    FleetOptions o;
    o.name = "trainlock-validate-p";
    o.nodes = 3;
    o.timeout_s = 120;
    return RunCommand({"timeout", "60", "bash", "-c", KubernetesWaitScript(o) + "exit $status"},
                      {FakeKubectlPath()});
  }
};

TEST_F(WaitScript, ReturnsAtTheFirstFailedPodWhileOthersStillRun) {
  const auto start = std::chrono::steady_clock::now();
  RunResult r = Wait("Running\nFailed\nRunning\n");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out, "a node failed\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(ReadFile(tmp_.path() / "kubectl.log")
                .find("get pods -l trainlock.io/job="
                      "trainlock-validate-p"),
            std::string::npos);
}

TEST_F(WaitScript, ReturnsZeroWhenEveryNodeSucceeded) {
  EXPECT_EQ(Wait("Succeeded\nSucceeded\nSucceeded\n").exit_code, 0);
}

// The header's round lines, run as printed against a stand-in kubectl that answers the Job's
// creationTimestamp and its pods' nodeName only for exactly those queries, and a stand-in
// trainlock that records the summarize command line the lines build.
class RoundLines : public FleetK8sGate {
 protected:
  // The header lines from `since=` to the summarize line, without the comment's "# ".
  std::string Lines(const std::string& job) {
    std::string lines;
    bool in = false;
    size_t at = 0;
    while (at < job.size()) {
      const size_t end = job.find('\n', at);
      const std::string line = job.substr(at, end - at);
      at = end == std::string::npos ? job.size() : end + 1;
      if (line.starts_with("#   since=")) in = true;
      if (in && line.starts_with("#   ")) lines += line.substr(4) + "\n";
      if (in && line.find("trainlock fleet summarize") != std::string::npos) break;
    }
    return lines;
  }
  // The command line the lines ran trainlock with.
  std::string Run(const std::vector<std::string>& extra) {
    RunResult job = Fleet(extra);
    EXPECT_EQ(job.exit_code, 0) << job.err;
    const fs::path bin = tmp_.path() / "bin";
    fs::create_directories(bin);
    WriteFile(bin / "kubectl",
              "#!/bin/sh\ncase \"$*\" in\n"
              "  \"get job trainlock-validate-h200-pilot -o "
              "jsonpath={.metadata.creationTimestamp}\") echo 2026-12-07T16:00:00Z ;;\n"
              "  \"get pods -l trainlock.io/job=trainlock-validate-h200-pilot -o "
              "jsonpath={.items[*].spec.nodeName}\") echo gpu-a gpu-b ;;\n"
              "  *) echo \"unexpected kubectl $*\" >&2; exit 1 ;;\nesac\n");
    WriteFile(bin / "trainlock",
              "#!/bin/sh\necho \"$*\" > " + (tmp_.path() / "trainlock.args").string() + "\n");
    fs::permissions(bin / "kubectl", fs::perms::owner_all);
    fs::permissions(bin / "trainlock", fs::perms::owner_all);
    const std::string lines = Lines(job.out);
    RunResult r = RunCommand({"bash", "-euc", lines}, {"PATH=" + bin.string() + ":/usr/bin:/bin"});
    EXPECT_EQ(r.exit_code, 0) << lines << r.err;
    return fs::exists(tmp_.path() / "trainlock.args") ? ReadFile(tmp_.path() / "trainlock.args")
                                                      : "";
  }
};

TEST_F(RoundLines, TheJobsCreationAndItsPodsNodesAreTheRoundSummarizeJudges) {
  if (!testing::HaveProgram("bash")) GTEST_SKIP() << "bash is not on PATH";
  EXPECT_EQ(Run({"--nodes", "2"}),
            "fleet summarize --nodes 2 --since 2026-12-07T16:00:00Z --node gpu-a,gpu-b "
            "--allow-unsigned reports\n");
}

TEST_F(RoundLines, NamedNodesAreTheRoundWithoutAskingForThePods) {
  if (!testing::HaveProgram("bash")) GTEST_SKIP() << "bash is not on PATH";
  EXPECT_EQ(Run({"--node", "gpu-x,gpu-y"}),
            "fleet summarize --nodes 2 --since 2026-12-07T16:00:00Z --node gpu-x,gpu-y "
            "--allow-unsigned reports\n");
}

// With golden pins the round's summarize holds each report to its key's pin in the lock.
TEST_F(RoundLines, AnyGoldenPinsInTheLockArePassedToTheRoundsSummarize) {
  if (!testing::HaveProgram("bash")) GTEST_SKIP() << "bash is not on PATH";
  PinGolden();
  EXPECT_EQ(Run({"--nodes", "2"}),
            "fleet summarize --nodes 2 --since 2026-12-07T16:00:00Z --node gpu-a,gpu-b "
            "--allow-unsigned --lock " +
                (project_ / kLockFile).string() + " reports\n");
}

TEST_F(FleetK8sGate, TheJobHeaderWaitsWithTheFailureAwareLoop) {
  RunResult r = Fleet({"--nodes", "2"});
  EXPECT_NE(r.out.find("grep -qx Failed"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("#   kubectl wait"), std::string::npos) << r.out;
}

TEST_F(FleetK8sGate, TheLongRunAffinityRequiresAPassingUnexpiredLabelOfThisLockAndImage) {
  RunResult r = Fleet({"--long-run-affinity"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const YAML::Node terms =
      YAML::Load(r.out)["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                       ["nodeSelectorTerms"][0]["matchExpressions"];
  ASSERT_EQ(terms.size(), 4u);
  EXPECT_EQ(terms[0]["key"].as<std::string>(), kNodeLabelValidated);
  EXPECT_EQ(terms[0]["values"][0].as<std::string>(), "pass");
  EXPECT_EQ(terms[2]["values"][0].as<std::string>(), std::string(32, 'a'));
  EXPECT_EQ(terms[3]["operator"].as<std::string>(), "Gt");
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  EXPECT_NEAR(static_cast<double>(std::stoll(terms[3]["values"][0].as<std::string>())),
              static_cast<double>(now), 60);
}

// tests/k8s/validate.mjs on FILE (as --type TYPE when given).
RunResult Schema(const fs::path& file, const std::string& type = {}) {
  std::vector<std::string> argv = {"node", (SourceDir() / "tests/k8s/validate.mjs").string()};
  if (!type.empty()) argv.insert(argv.end(), {"--type", type});
  argv.push_back(file.string());
  return RunCommand(argv);
}

bool HaveSchemas() {
  return testing::HaveProgram("node") &&
         fs::is_directory(SourceDir() / "tests/k8s/node_modules/kubernetes-models");
}

TEST_F(FleetK8sGate, EveryGeneratedDocumentConformsToTheKubernetesOpenApiSchemas) {
  if (!HaveSchemas()) GTEST_SKIP() << "node or tests/k8s/node_modules missing: run ci/deps.sh";
  Documents({"--nodes", "4"}, "plain.yaml");
  Documents(Labelled(), "labelled.yaml");
  Documents({"--nodes", "2", "--reports-pvc", "reports"}, "pvc.yaml");
  RunResult r = Schema(tmp_.path() / "plain.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = Schema(tmp_.path() / "labelled.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("4 document(s), 0 problem(s)"), std::string::npos) << r.out;
  EXPECT_EQ(Schema(tmp_.path() / "pvc.yaml").exit_code, 0);
  EXPECT_EQ(Schema(SourceDir() / "examples/fleet/validate-job.yaml").exit_code, 0);
  WriteFile(tmp_.path() / "affinity.yaml", Fleet({"--long-run-affinity"}).out);
  r = Schema(tmp_.path() / "affinity.yaml", "V1Affinity");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(FleetK8sGate, ThePinnedLocksConfigMapConformsToTheKubernetesSchemas) {
  if (!HaveSchemas()) GTEST_SKIP() << "node or tests/k8s/node_modules missing: run ci/deps.sh";
  PinGolden();
  std::vector<std::string> args = Labelled();
  args.insert(args.end(), {"--namespace", "gpu-ops"});
  std::vector<YAML::Node> docs = Documents(args, "pinned.yaml");
  ASSERT_EQ(docs.size(), 5u);
  EXPECT_EQ(docs[3]["metadata"]["namespace"].as<std::string>(), "gpu-ops");
  RunResult r = Schema(tmp_.path() / "pinned.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("5 document(s), 0 problem(s)"), std::string::npos) << r.out;
}

// `--watch-daemonset`: `trainlock watch --revoke k8s` on every node, tainted ones too, reading the
// host's /dev/kmsg and keeping the record on the host; RBAC to list (the breaker) and patch nodes.
TEST_F(FleetK8sGate, TheWatchDaemonSetRunsTheWatchOnEveryNodeAndConformsToTheSchemas) {
  std::vector<YAML::Node> docs = Documents(
      {"--watch-daemonset", "--watch-image", kKubectlImage, "--reports-dir", "/shared/reports"},
      "watch.yaml");
  ASSERT_EQ(docs.size(), 4u);
  EXPECT_EQ(docs[1]["rules"][0]["verbs"][1].as<std::string>(), "list");
  EXPECT_EQ(docs[1]["rules"][0]["verbs"][2].as<std::string>(), "patch");
  const YAML::Node& ds = docs[3];
  EXPECT_EQ(ds["kind"].as<std::string>(), "DaemonSet");
  const YAML::Node& pod = ds["spec"]["template"]["spec"];
  EXPECT_EQ(pod["tolerations"][0]["operator"].as<std::string>(), "Exists");
  const YAML::Node& container = pod["containers"][0];
  EXPECT_EQ(container["image"].as<std::string>(), kKubectlImage);
  std::string command;
  for (const YAML::Node& word : container["command"]) command += word.as<std::string>() + " ";
  EXPECT_EQ(command,
            "trainlock watch --revoke k8s --node $(NODE_NAME) --watch-state "
            "/var/lib/trainlock/watch --reports-dir /shared/reports ");
  EXPECT_EQ(pod["volumes"][0]["hostPath"]["path"].as<std::string>(), "/dev/kmsg");
  if (!HaveSchemas()) GTEST_SKIP() << "node or tests/k8s/node_modules missing: run ci/deps.sh";
  RunResult r = Schema(tmp_.path() / "watch.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("4 document(s), 0 problem(s)"), std::string::npos) << r.out;
}

// NVML in the watch's container: the NVIDIA container runtime mounts the driver's NVML library
// for NVIDIA_DRIVER_CAPABILITIES=utility, every GPU named, and the pod takes no GPU from the
// device plugin's count.
TEST_F(FleetK8sGate, TheWatchDaemonSetAsksTheNvidiaRuntimeForNvmlWithoutTakingAGpu) {
  std::vector<YAML::Node> docs =
      Documents({"--watch-daemonset", "--watch-image", kKubectlImage}, "watch-nvml.yaml");
  ASSERT_EQ(docs.size(), 4u);
  const YAML::Node& container = docs[3]["spec"]["template"]["spec"]["containers"][0];
  std::map<std::string, std::string> env;
  for (const YAML::Node& e : container["env"])
    if (e["value"]) env[e["name"].as<std::string>()] = e["value"].as<std::string>();
  EXPECT_EQ(env["NVIDIA_VISIBLE_DEVICES"], "all");
  EXPECT_EQ(env["NVIDIA_DRIVER_CAPABILITIES"], "utility");
  EXPECT_FALSE(container["resources"]["limits"]["nvidia.com/gpu"]);
}

TEST_F(FleetK8sGate, TheWatchDaemonSetNeedsAnImagePinnedByDigest) {
  RunResult r = Fleet({"--watch-daemonset", "--watch-image", "registry.example/watch:latest"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.err.rfind("--watch-image: error: --watch-daemonset needs an image", 0), 0u) << r.err;
}

TEST_F(FleetK8sGate, TheSchemaCheckRefusesAMisspeltFieldAndAWrongType) {
  if (!HaveSchemas()) GTEST_SKIP() << "node or tests/k8s/node_modules missing: run ci/deps.sh";
  std::string text = Fleet(Labelled()).out;
  text.replace(text.find("imagePullSecrets:"), 17, "imagePullSecret:");
  text.replace(text.find("completions: 2"), 14, "completions: two");
  WriteFile(tmp_.path() / "bad.yaml", text);
  RunResult r = Schema(tmp_.path() / "bad.yaml");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("spec.template.spec.imagePullSecret: unknown field of V1PodSpec"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("spec/completions must be integer"), std::string::npos) << r.out;
}

// kubectl reads the documents offline (--local: no cluster) and finds the containers where a
// cluster would.
TEST_F(FleetK8sGate, KubectlLocalTransformsFindEveryDocumentAndContainer) {
  if (!testing::HaveProgram("kubectl")) GTEST_SKIP() << "kubectl is not installed";
  Documents(Labelled(), "labelled.yaml");
  const std::string file = (tmp_.path() / "labelled.yaml").string();
  const std::string env = "KUBECONFIG=" + (tmp_.path() / "no-kubeconfig").string();
  RunResult r = RunCommand(
      {"timeout", "60", "kubectl", "label", "--local", "-f", file, "checked=yes", "-o", "name"},
      {env});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "serviceaccount/trainlock-node-labeler\n"
            "clusterrole.rbac.authorization.k8s.io/trainlock-node-labeler\n"
            "clusterrolebinding.rbac.authorization.k8s.io/trainlock-node-labeler\n"
            "job.batch/trainlock-validate-h200-pilot\n");
  // The Job alone: `set image` refuses the documents without a pod template.
  const std::string text = ReadFile(file);
  WriteFile(tmp_.path() / "job.yaml", text.substr(text.rfind("\n---\n") + 5));
  const std::string job = (tmp_.path() / "job.yaml").string();
  const std::string other = "registry.example/other@sha256:" + std::string(64, 'f');
  r = RunCommand({"timeout", "60", "kubectl", "set", "image", "--local", "-f", job,
                  "validate=" + other, "label=" + other, "-o",
                  "jsonpath={.spec.template.spec.initContainers[0].image} "
                  "{.spec.template.spec.containers[0].image}"},
                 {env});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, other + " " + other);
  r = RunCommand({"timeout", "60", "kubectl", "set", "image", "--local", "-f", job,
                  "nonesuch=" + other, "-o", "name"},
                 {env});
  EXPECT_NE(r.exit_code, 0) << "kubectl found a container that is not there";
}

}  // namespace
}  // namespace trainlock
