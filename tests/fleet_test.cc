// Specification of `trainlock fleet`: the Kubernetes Job parses as YAML with the kinds and
// fields a one-pod-per-node validation needs, the sbatch script passes `bash -n` and quotes
// what users typed, and `fleet summarize` tables a directory of mixed reports.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "fleet/fleet.h"
#include "plan/memory_model.h"
#include "project/project.h"
#include "report/golden_pin.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ReadFile;
using testing::RunCommand;
using testing::RunResult;
using testing::RunTrainlock;
using testing::SourceDir;
using testing::TempDir;
using testing::WriteFile;

const std::string kDigest = "sha256:" + std::string(64, 'a');
const std::string kBuiltRef = "registry.example/h200-pilot:1";
// The image examples/fleet/ was generated with (examples/fleet/README.md).
const std::string kExampleImage =
    "registry.example/h200-pilot@sha256:"
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// examples/<name> copied to DIR/<name>, with `images_table` appended to its lock.
fs::path ProjectWithImage(const fs::path& dir, const std::string& name,
                          const std::string& images_table) {
  const fs::path project = dir / name;
  fs::create_directories(project);
  testing::CopyExample(name, project);
  if (!images_table.empty()) {
    WriteFile(project / kLockFile, ReadFile(project / kLockFile) + "\n" + images_table);
  }
  return project;
}

std::string CudaImageTable() {
  return "[images.cuda]\nref = \"" + kBuiltRef + "\"\ndigest = \"" + kDigest + "\"\n";
}

class FleetK8s : public ::testing::Test {
 protected:
  void SetUp() override {
    project_ = ProjectWithImage(tmp_.path(), "h200-pilot", CudaImageTable());
  }

  // `trainlock fleet k8s` on the project, parsed.
  YAML::Node Job(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"fleet", "k8s", project_.string(), "--nodes", "4"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = RunTrainlock(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    text_ = r.out;
    return YAML::Load(r.out);
  }

  static YAML::Node PodSpec(const YAML::Node& job) { return job["spec"]["template"]["spec"]; }
  static YAML::Node Container(const YAML::Node& job) { return PodSpec(job)["containers"][0]; }

  TempDir tmp_;
  fs::path project_;
  std::string text_;
};

TEST_F(FleetK8s, ImagesTableChangesTheLockIdNotTheBuildIdentity) {
  const std::string original = LoadProject(SourceDir() / "examples/h200-pilot").lock_sha256;
  Project project = LoadProject(project_);
  EXPECT_NE(project.lock_sha256, original);
  EXPECT_EQ(project.lock->lock_build_sha256, original);  // what the job's label carries
  EXPECT_EQ(project.lock->images.at("cuda").digest, kDigest);
}

TEST_F(FleetK8s, IsAnIndexedBatchV1JobWithOneCompletionPerNode) {
  YAML::Node job = Job();
  EXPECT_EQ(job["apiVersion"].as<std::string>(), "batch/v1");
  EXPECT_EQ(job["kind"].as<std::string>(), "Job");
  EXPECT_EQ(job["spec"]["completionMode"].as<std::string>(), "Indexed");
  EXPECT_EQ(job["spec"]["completions"].as<int>(), 4);
  EXPECT_EQ(job["spec"]["parallelism"].as<int>(), 4);
}

TEST_F(FleetK8s, NeverRetriesANode) {
  YAML::Node job = Job();
  EXPECT_EQ(job["spec"]["backoffLimitPerIndex"].as<int>(), 0);
  EXPECT_FALSE(job["spec"]["backoffLimit"]) << "a global limit would stop every other node";
  EXPECT_EQ(PodSpec(job)["restartPolicy"].as<std::string>(), "Never");
}

TEST_F(FleetK8s, RunsTheLockedImageByDigest) {
  YAML::Node container = Container(Job());
  EXPECT_EQ(container["image"].as<std::string>(), kBuiltRef + "@" + kDigest);
  bool digest_env = false;
  for (const YAML::Node& env : container["env"]) {
    if (env["name"].as<std::string>() == "TRAINLOCK_IMAGE_DIGEST")
      digest_env = env["value"].as<std::string>() == kDigest;
  }
  EXPECT_TRUE(digest_env) << "the report must carry the digest the gate compares";
}

TEST_F(FleetK8s, ImageOptionReplacesTheLockedImage) {
  YAML::Node container = Container(Job({"--image", kExampleImage}));
  EXPECT_EQ(container["image"].as<std::string>(), kExampleImage);
}

TEST_F(FleetK8s, RequestsTheGpusOfTheWholeNode) {
  EXPECT_EQ(Container(Job())["resources"]["limits"]["nvidia.com/gpu"].as<int>(), 8);
  EXPECT_EQ(
      Container(Job({"--gpus-per-node", "4"}))["resources"]["limits"]["nvidia.com/gpu"].as<int>(),
      4);
}

TEST_F(FleetK8s, PlacesOnePodPerNode) {
  YAML::Node job = Job();
  YAML::Node terms =
      PodSpec(job)["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
  ASSERT_EQ(terms.size(), 1u);
  EXPECT_EQ(terms[0]["topologyKey"].as<std::string>(), "kubernetes.io/hostname");
  // The selector must match the job's own pods, or it keeps nothing apart.
  YAML::Node pod_labels = job["spec"]["template"]["metadata"]["labels"];
  ASSERT_GT(terms[0]["labelSelector"]["matchLabels"].size(), 0u);
  for (const auto& label : terms[0]["labelSelector"]["matchLabels"]) {
    const std::string key = label.first.as<std::string>();
    EXPECT_EQ(pod_labels[key].as<std::string>(), label.second.as<std::string>()) << key;
  }
}

TEST_F(FleetK8s, PassesTheNodeNameToTheValidatorFromTheDownwardApi) {
  YAML::Node container = Container(Job());
  bool node_name = false;
  for (const YAML::Node& env : container["env"]) {
    if (env["name"].as<std::string>() == "TRAINLOCK_NODE_NAME")
      node_name = env["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>() == "spec.nodeName";
  }
  EXPECT_TRUE(node_name) << "the validator names the node (and its report) by TRAINLOCK_NODE_NAME";
  EXPECT_EQ(container["command"].as<std::vector<std::string>>(),
            (std::vector<std::string>{"/bin/sh", "-c"}));
  EXPECT_NE(container["args"][0].as<std::string>().find(
                "/usr/local/bin/trainlock-validate /etc/trainlock --nproc auto --out "
                "\"/reports/$TRAINLOCK_NODE_NAME.json\""),
            std::string::npos);
}

// The pod's script, run with a stand-in validator that writes a report and fails, and its log
// read back the way the Job's header comment collects it.
TEST_F(FleetK8s, PodLogCarriesTheReportAndThePodKeepsTheValidatorsExitCode) {
  Job();
  std::string script = Container(YAML::Load(text_))["args"][0].as<std::string>();
  const fs::path reports = tmp_.path() / "reports";
  fs::create_directories(reports);
  const fs::path validator = tmp_.path() / "fake-validate";
  WriteFile(validator,
            "#!/bin/sh\n# writes a report to the file after --out, then fails as a failing node "
            "does\nwhile [ \"$1\" != --out ]; do shift; done\nprintf '{\"verdict\": \"fail\"}' > "
            "\"$2\"\nexit 1\n");
  fs::permissions(validator, fs::perms::owner_all);
  auto replace = [&](const std::string& from, const std::string& to) {
    for (size_t at = script.find(from); at != std::string::npos; at = script.find(from, at))
      script.replace(at, from.size(), to), at += to.size();
  };
  replace("/usr/local/bin/trainlock-validate", validator.string());
  replace("/reports/", reports.string() + "/");
  RunResult pod = RunCommand({"sh", "-c", script}, {"TRAINLOCK_NODE_NAME=gpu-17"});
  EXPECT_EQ(pod.exit_code, 1) << "a failing node fails its pod: " << pod.err;
  EXPECT_EQ(ReadFile(reports / "gpu-17.json"), "{\"verdict\": \"fail\"}");
  // The collection loop of the header comment, on this log.
  const fs::path log = tmp_.path() / "pod.log";
  WriteFile(log, "validator summary line\n" + pod.out);
  const std::string sed = "/^--- trainlock report /,/^--- end of trainlock report ---/{//!p}";
  ASSERT_NE(text_.find(sed), std::string::npos) << text_;
  RunResult collected = RunCommand({"sed", "-n", sed, log.string()});
  EXPECT_EQ(json::parse(collected.out), json::parse("{\"verdict\": \"fail\"}")) << pod.out;
}

TEST_F(FleetK8s, ReportsGoToAnEmptyDirNotTheNodesDisk) {
  YAML::Node job = Job();
  std::map<std::string, YAML::Node> volumes;
  for (const YAML::Node& v : PodSpec(job)["volumes"]) volumes[v["name"].as<std::string>()] = v;
  ASSERT_TRUE(volumes.contains("reports"));
  EXPECT_TRUE(volumes["reports"]["emptyDir"].IsMap());
  EXPECT_EQ(text_.find("hostPath"), std::string::npos) << text_;
  ASSERT_TRUE(volumes.contains("dshm"));
  EXPECT_EQ(volumes["dshm"]["emptyDir"]["medium"].as<std::string>(), "Memory");
  std::map<std::string, std::string> mounts;
  for (const YAML::Node& m : Container(job)["volumeMounts"])
    mounts[m["name"].as<std::string>()] = m["mountPath"].as<std::string>();
  EXPECT_EQ(mounts["reports"], "/reports");
  EXPECT_EQ(mounts["dshm"], "/dev/shm");
}

TEST_F(FleetK8s, ReportsPvcReplacesTheEmptyDir) {
  YAML::Node job = Job({"--reports-pvc", "fleet-reports", "--namespace", "gpu-ops"});
  YAML::Node reports = PodSpec(job)["volumes"][0];
  EXPECT_EQ(reports["name"].as<std::string>(), "reports");
  EXPECT_EQ(reports["persistentVolumeClaim"]["claimName"].as<std::string>(), "fleet-reports");
  EXPECT_FALSE(reports["emptyDir"]);
  EXPECT_EQ(job["metadata"]["namespace"].as<std::string>(), "gpu-ops");
}

TEST_F(FleetK8s, RequestsCpuAndMemoryForTheRunWithoutLimitingThem) {
  YAML::Node resources = Container(Job())["resources"];
  EXPECT_EQ(resources["requests"]["cpu"].as<std::string>(), "32") << "4 per GPU";
  const double parameters = EstimateTrainingMemory(LoadProject(project_).config).parameters;
  EXPECT_EQ(resources["requests"]["memory"].as<std::string>(),
            std::to_string(KubernetesMemoryGiB(parameters, 8)) + "Gi");
  EXPECT_EQ(resources["requests"]["nvidia.com/gpu"].as<int>(), 8);
  EXPECT_FALSE(resources["limits"]["cpu"]) << "a CPU limit would throttle the measured step";
  EXPECT_FALSE(resources["limits"]["memory"]) << "a memory limit would OOM-kill the run";
  YAML::Node given = Container(Job({"--cpu", "96", "--memory-gib", "512"}))["resources"];
  EXPECT_EQ(given["requests"]["cpu"].as<std::string>(), "96");
  EXPECT_EQ(given["requests"]["memory"].as<std::string>(), "512Gi");
}

TEST(FleetMemory, RequestIsTheCheckpointStagingAndFourGibPerGpu) {
  // 1e9 parameters: 12e9 bytes of staging + 4 GiB = 15.18 GiB per GPU, x 8 = 121.4 -> 122.
  EXPECT_EQ(KubernetesMemoryGiB(1e9, 8), 122);
  EXPECT_EQ(KubernetesMemoryGiB(0, 1), 4);
}

TEST_F(FleetK8s, SelectsNodesOfEveryAcceleratorOfTheLock) {
  // h200-pilot allows H200 and H100-80GB: either label value, so a node affinity.
  YAML::Node job = Job();
  EXPECT_FALSE(PodSpec(job)["nodeSelector"]);
  YAML::Node expression =
      PodSpec(job)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                  ["nodeSelectorTerms"][0]["matchExpressions"][0];
  EXPECT_EQ(expression["key"].as<std::string>(), "nvidia.com/gpu.product");
  EXPECT_EQ(expression["operator"].as<std::string>(), "In");
  EXPECT_EQ(expression["values"].as<std::vector<std::string>>(),
            (std::vector<std::string>{"NVIDIA-H200", "NVIDIA-H100-80GB-HBM3"}));
}

TEST_F(FleetK8s, OneAcceleratorIsANodeSelector) {
  const std::string lock = ReadFile(project_ / kLockFile);
  const std::string both =
      "accelerators = [ 'H200', 'H100-80GB' ]";  // as `trainlock lock` writes it
  ASSERT_NE(lock.find(both), std::string::npos);
  WriteFile(project_ / kLockFile, lock.substr(0, lock.find(both)) + "accelerators = [ 'H200' ]" +
                                      lock.substr(lock.find(both) + both.size()));
  YAML::Node job = Job();
  EXPECT_EQ(PodSpec(job)["nodeSelector"]["nvidia.com/gpu.product"].as<std::string>(),
            "NVIDIA-H200");
  EXPECT_FALSE(PodSpec(job)["affinity"]["nodeAffinity"]);
}

TEST_F(FleetK8s, TimeoutBecomesTheActiveDeadline) {
  EXPECT_EQ(Job({"--timeout", "90m"})["spec"]["activeDeadlineSeconds"].as<int>(), 5400);
  EXPECT_EQ(Job({"--timeout", "600"})["spec"]["activeDeadlineSeconds"].as<int>(), 600);
}

TEST_F(FleetK8s, JobNameIsSanitisedToADns1123Label) {
  YAML::Node job = Job({"--name", "My_Fleet; $(reboot)"});
  EXPECT_EQ(job["metadata"]["name"].as<std::string>(), "my-fleet-reboot");
  EXPECT_EQ(Job()["metadata"]["name"].as<std::string>(), "trainlock-validate-h200-pilot");
}

TEST_F(FleetK8s, StartsWithHowToApplyAndCollect) {
  Job();
  EXPECT_TRUE(text_.starts_with("# Generated by `trainlock fleet k8s`")) << text_;
  EXPECT_NE(text_.find("kubectl apply"), std::string::npos);
  EXPECT_NE(text_.find("trainlock fleet summarize"), std::string::npos);
}

TEST(FleetK8sRocm, RocmTargetRequestsAmdGpus) {
  TempDir tmp;
  fs::path project = ProjectWithImage(
      tmp.path(), "mi300x-pilot",
      "[images.rocm]\nref = \"registry.example/mi300x-pilot:1\"\ndigest = \"" + kDigest + "\"\n");
  RunResult r = RunTrainlock({"fleet", "k8s", project.string(), "--nodes", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  YAML::Node limits =
      YAML::Load(r.out)["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
  EXPECT_EQ(limits["amd.com/gpu"].as<int>(), 8);
  EXPECT_FALSE(limits["nvidia.com/gpu"]);
  // AMD GPUs have no product label in the catalog: no selection by product.
  YAML::Node pod = YAML::Load(r.out)["spec"]["template"]["spec"];
  EXPECT_FALSE(pod["nodeSelector"]);
  EXPECT_FALSE(pod["affinity"]["nodeAffinity"]);
}

TEST(FleetOptions, MissingBuiltImageWithoutImageOptionIsBadInputWithAHint) {
  TempDir tmp;
  fs::path project = ProjectWithImage(tmp.path(), "h200-pilot", "");
  for (const char* kind : {"k8s", "slurm"}) {
    RunResult r = RunTrainlock({"fleet", kind, project.string(), "--nodes", "2"});
    EXPECT_EQ(r.exit_code, 2) << kind;
    EXPECT_NE(r.err.find("no built cuda image in the lock"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("trainlock image build"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--image"), std::string::npos) << r.err;
  }
}

TEST(FleetOptions, TagOnlyImageIsRefused) {
  TempDir tmp;
  fs::path project = ProjectWithImage(tmp.path(), "h200-pilot", "");
  RunResult r = RunTrainlock({"fleet", "k8s", project.string(), "--nodes", "2", "--image",
                              "registry.example/h200-pilot:1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not pinned by digest"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(FleetOptions, LockWithoutAGpuTargetIsBadInput) {
  RunResult r = RunTrainlock({"fleet", "k8s", (SourceDir() / "examples/tiny").string(), "--nodes",
                              "2", "--image", kExampleImage});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no cuda or rocm target"), std::string::npos) << r.err;
}

TEST(FleetOptions, NodesOutOfRangeIsBadInput) {
  TempDir tmp;
  fs::path project = ProjectWithImage(tmp.path(), "h200-pilot", CudaImageTable());
  EXPECT_EQ(RunTrainlock({"fleet", "k8s", project.string(), "--nodes", "0"}).exit_code, 2);
  EXPECT_EQ(RunTrainlock({"fleet", "k8s", project.string(), "--nodes", "10001"}).exit_code, 2);
  EXPECT_EQ(RunTrainlock({"fleet", "k8s", project.string()}).exit_code, 2);
}

TEST(FleetOptions, Dns1123LabelKeepsOnlyWhatKubernetesAccepts) {
  EXPECT_EQ(Dns1123Label("Trainlock_Validate h200"), "trainlock-validate-h200");
  EXPECT_EQ(Dns1123Label("--x--"), "x");
  EXPECT_EQ(Dns1123Label("$()"), "");
  EXPECT_EQ(Dns1123Label(std::string(100, 'a')).size(), 63u);
}

class FleetSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    project_ = ProjectWithImage(tmp_.path(), "h200-pilot", CudaImageTable());
  }

  // `trainlock fleet slurm` written to a file; returns its path.
  fs::path Script(std::vector<std::string> extra = {}) {
    const fs::path out = tmp_.path() / "validate.sbatch";
    std::vector<std::string> args = {"fleet", "slurm", project_.string(), "--nodes",
                                     "4",     "--out", out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = RunTrainlock(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    text_ = ReadFile(out);
    return out;
  }

  bool Has(const std::string& line) const { return text_.find(line) != std::string::npos; }

  TempDir tmp_;
  fs::path project_;
  std::string text_;
};

TEST_F(FleetSlurm, ScriptPassesBashSyntaxCheck) {
  if (!testing::HaveProgram("bash")) GTEST_SKIP() << "bash is not on PATH";
  RunResult r = RunCommand({"bash", "-n", Script().string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(FleetSlurm, HasTheSbatchLines) {
  Script({"--timeout", "90m"});
  EXPECT_TRUE(text_.starts_with("#!/bin/bash\n"));
  for (const char* line :
       {"#SBATCH --job-name=trainlock-validate-h200-pilot\n", "#SBATCH --nodes=4\n",
        "#SBATCH --ntasks-per-node=1\n", "#SBATCH --gpus-per-node=8\n", "#SBATCH --exclusive\n",
        "#SBATCH --time=1:30:00\n", "#SBATCH --output=trainlock-validate-h200-pilot-%j.out\n",
        "set -euo pipefail\n"}) {
    EXPECT_TRUE(Has(line)) << line << text_;
  }
}

TEST_F(FleetSlurm, PartitionAndAccountBecomeSbatchLines) {
  Script({"--partition", "h200", "--account", "ml-infra"});
  EXPECT_TRUE(Has("#SBATCH --partition=h200\n")) << text_;
  EXPECT_TRUE(Has("#SBATCH --account=ml-infra\n")) << text_;
  Script();
  EXPECT_FALSE(Has("--partition")) << "the cluster's default partition without the option";
}

TEST_F(FleetSlurm, APartitionThatIsNotASlurmNameIsBadInput) {
  RunResult r = RunTrainlock({"fleet", "slurm", project_.string(), "--nodes", "4", "--partition",
                              "h200\n#SBATCH --uid=0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--partition: error: not a Slurm name"), std::string::npos) << r.err;
}

TEST_F(FleetSlurm, NamedNodesAndAReservationBecomeSbatchLines) {
  RunResult r = RunTrainlock(
      {"fleet", "slurm", project_.string(), "--node", "gpu-017,gpu-018", "--reservation", "ops"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  text_ = r.out;
  EXPECT_TRUE(Has("#SBATCH --nodes=2\n")) << text_;
  EXPECT_TRUE(Has("#SBATCH --nodelist=gpu-017,gpu-018\n")) << text_;
  EXPECT_TRUE(Has("#SBATCH --reservation=ops\n")) << text_;
  Script();
  EXPECT_FALSE(Has("--reservation")) << "no reservation without the option";
}

// A name given twice would ask for two runs on one node: Kubernetes' one-pod-per-node
// anti-affinity would never schedule the second pod, and Slurm would run one node short.
TEST(FleetOptions, ANodeNamedTwiceIsBadInputNamingIt) {
  TempDir tmp;
  const fs::path project = ProjectWithImage(tmp.path(), "h200-pilot", CudaImageTable());
  for (const char* kind : {"k8s", "slurm"}) {
    RunResult r = RunTrainlock({"fleet", kind, project.string(), "--node", "gpu-1,gpu-2,gpu-1"});
    EXPECT_EQ(r.exit_code, 2) << kind << r.out;
    EXPECT_EQ(r.err, "--node: error: names node 'gpu-1' twice; name each node once\n") << kind;
  }
}

// ---- fleet slurm --revalidate: the way back for a drained or new node ----

class FleetSlurmRevalidate : public FleetSlurm {
 protected:
  RunResult Revalidate(std::vector<std::string> extra) {
    std::vector<std::string> args = {"fleet", "slurm", project_.string(), "--revalidate"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunTrainlock(args);
  }
  std::vector<std::string> Needed() {
    return {"--node",          "gpu-017,gpu-018", "--reports-dir",
            "/shared/reports", "--sign-key",      "/shared/fleet.key"};
  }
};

TEST_F(FleetSlurmRevalidate, ReservesResumesValidatesInTheReservationAndDeletesIt) {
  RunResult r = Revalidate(Needed());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string& text = r.out;
  for (const char* part :
       {"scontrol create reservation ReservationName=\"$RESERVATION\" Nodes=\"${NODES// /,}\"",
        "Flags=MAINT,IGNORE_JOBS", "RESERVATION=trainlock-revalidate\n",
        "NODES='gpu-017 gpu-018'\n", "scontrol update NodeName=\"$node\" State=RESUME",
        "trap 'scontrol delete ReservationName=\"$RESERVATION\"' EXIT",
        "sbatch --wait <<'TRAINLOCK_VALIDATION_JOB'\n#!/bin/bash\n",
        "#SBATCH --reservation=trainlock-revalidate\n", "#SBATCH --nodelist=gpu-017,gpu-018\n",
        "#SBATCH --nodes=2\n", "REPORTS=/shared/reports\n", "SIGN_KEY=/shared/fleet.key\n"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  }
  if (!testing::HaveProgram("bash")) GTEST_SKIP() << "bash is not on PATH";
  WriteFile(tmp_.path() / "revalidate.sh", text);
  RunResult syntax = RunCommand({"bash", "-n", (tmp_.path() / "revalidate.sh").string()});
  EXPECT_EQ(syntax.exit_code, 0) << syntax.err;
}

// Every bash script `fleet slurm` writes: the validation job, the node gate and the way back.
TEST_F(FleetSlurmRevalidate, EveryGeneratedScriptPassesShellcheck) {
  if (!testing::HaveProgram("shellcheck")) GTEST_SKIP() << "shellcheck missing: ci/deps.sh";
  std::vector<std::string> gate = {"--prolog", "--key", "/shared/fleet.pub", "--reports-dir",
                                   "/shared/reports"};
  const std::vector<std::vector<std::string>> scripts = {
      {"--nodes", "2", "--sign-key", "/shared/fleet.key"}, gate, Needed()};
  for (size_t i = 0; i < scripts.size(); ++i) {
    std::vector<std::string> args = {"fleet", "slurm", project_.string()};
    if (i == 2) args.push_back("--revalidate");
    args.insert(args.end(), scripts[i].begin(), scripts[i].end());
    RunResult r = RunTrainlock(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const fs::path file = tmp_.path() / ("script" + std::to_string(i) + ".sh");
    WriteFile(file, r.out);
    RunResult check = RunCommand({"shellcheck", "--norc", "--format=gcc", file.string()});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err << r.out;
  }
}

// Issue #61: a reports directory whose newline ends the validation job's here-document and
// starts a command of its own (run as root or SlurmUser) is refused, writing no script.
TEST_F(FleetSlurmRevalidate, AReportsDirectoryWithANewlineIsRefusedBeforeAnyScriptIsWritten) {
  RunResult r = Revalidate({"--node", "n", "--sign-key", "/k", "--reports-dir",
                            "/r\nTRAINLOCK_VALIDATION_JOB\ntouch X\nsbatch --wait "
                            "<<'TRAINLOCK_VALIDATION_JOB' #"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("--reports-dir: error: a control character at byte 2: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line, remedy included
}

// An escape sequence in any value a gate script carries never reaches the script raw.
TEST_F(FleetSlurmRevalidate, AnEscapeSequenceInAGateOptionIsRefusedNamingTheOption) {
  const std::map<std::string, std::string> good = {{"--key", "/shared/fleet.pub"},
                                                   {"--reports-dir", "/shared/reports"}};
  for (const char* option : {"--key", "--reports-dir", "--node-lock", "--trainlock"}) {
    std::vector<std::string> args = {"fleet", "slurm", project_.string(), "--prolog"};
    for (const auto& [name, value] : good)
      if (name != option) args.insert(args.end(), {name, value});
    args.insert(args.end(), {option, "/shared/\x1b]0;pwned\x07x"});
    RunResult r = RunTrainlock(args);
    EXPECT_EQ(r.exit_code, 2) << option << r.out;
    EXPECT_EQ(r.err.rfind(std::string(option) + ": error: a control character at byte 8", 0), 0u)
        << r.err;
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << option;
  }
}

TEST_F(FleetSlurmRevalidate, NeedsTheNodesTheReportsDirectoryAndTheSigningKey) {
  const std::vector<std::string> needed = Needed();
  for (const char* option : {"--node", "--reports-dir", "--sign-key"}) {
    std::vector<std::string> args;
    for (size_t i = 0; i < needed.size(); i += 2) {
      if (needed[i] != option) args.insert(args.end(), {needed[i], needed[i + 1]});
    }
    RunResult r = Revalidate(args);
    EXPECT_EQ(r.exit_code, 2) << option;
    EXPECT_TRUE(r.err.starts_with(std::string(option) + ": error: --revalidate needs it")) << r.err;
  }
}

// ---- the node gate's lock: one file, installed on each node ----

class FleetNodeGate : public FleetSlurm {
 protected:
  RunResult Gate(const std::string& kind, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "fleet",           kind,
        project_.string(), kind == "slurm" ? "--prolog" : "--npd-plugin",
        "--key",           "/shared/fleet.pub",
        "--reports-dir",   "/shared/reports"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunTrainlock(args);
  }
};

// Without --node-lock the scripts read the lock where docs/fleet.md says to install it, never
// the checkout they were generated from.
TEST_F(FleetNodeGate, TheLockIsReadAtItsInstalledPathNotTheGeneratingCheckout) {
  for (const char* kind : {"slurm", "k8s"}) {
    RunResult r = Gate(kind, {});
    ASSERT_EQ(r.exit_code, 0) << kind << r.err;
    EXPECT_NE(r.out.find("LOCK=/etc/trainlock/h200-pilot/trainlock.lock\n"), std::string::npos)
        << kind << r.out;
    EXPECT_EQ(r.out.find(project_.string()), std::string::npos) << kind << r.out;
  }
}

TEST_F(FleetNodeGate, ALockInsideAGitWorkTreeIsRefusedNamingIt) {
  fs::create_directories(tmp_.path() / "checkout/.git");
  const std::string lock = (tmp_.path() / "checkout/pilot/trainlock.lock").string();
  for (const char* kind : {"slurm", "k8s"}) {
    RunResult r = Gate(kind, {"--node-lock", lock});
    EXPECT_EQ(r.exit_code, 2) << kind << r.out;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("--node-lock: error: " + lock + " is inside the git work tree " +
                              (tmp_.path() / "checkout").string(),
                          0),
              0u)
        << r.err;
  }
}

TEST_F(FleetNodeGate, TheScriptSaysWhatEachNodeNeeds) {
  RunResult r = Gate("slurm", {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# Each node needs: trainlock at TRAINLOCK (the trainlock package)"),
            std::string::npos)
      << r.out;
}

TEST_F(FleetNodeGate, ReportOnlyIsANodeGatesModeOnly) {
  RunResult r =
      RunTrainlock({"fleet", "slurm", project_.string(), "--nodes", "2", "--report-only"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "--report-only: error: only a node gate has a report-only mode; give it with "
            "--prolog\n");
  r = RunTrainlock({"fleet", "k8s", project_.string(), "--nodes", "2", "--report-only"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("give it with --label-nodes"), std::string::npos) << r.err;
}

// The report-only gate run outside Slurm (scontrol a stand-in that records every call, unless a
// real one comes first on the script's PATH): a node without a report would be drained, so the
// log says so; nothing is updated and the Prolog exits 0 (a refusing one would requeue the job).
TEST_F(FleetNodeGate, ReportOnlyLogsTheDrainAndUpdatesNothing) {
  if (!testing::HaveProgram("bash")) GTEST_SKIP() << "bash is not on PATH";
  const fs::path bin = tmp_.path() / "bin", log = tmp_.path() / "gate.log";
  fs::create_directories(bin);
  WriteFile(bin / "scontrol",
            "#!/bin/sh\necho \"$*\" >> " + (tmp_.path() / "calls").string() + "\n");
  fs::permissions(bin / "scontrol", fs::perms::owner_all);
  RunResult generated = Gate("slurm", {"--report-only", "--gate-log", log.string(), "--out",
                                       (tmp_.path() / "gate.sh").string()});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  const char* path = std::getenv("PATH");
  RunResult r = RunCommand(
      {"bash", (tmp_.path() / "gate.sh").string()},
      {"PATH=" + bin.string() + ":" + (path ? path : "/usr/bin:/bin"), "SLURMD_NODENAME=gpu-7"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string logged = ReadFile(log);
  EXPECT_NE(logged.find("trainlock node gate (report only): gpu-7: would drain: trainlock: "
                        "report: no report /shared/reports/gpu-7.json; validate this node"),
            std::string::npos)
      << logged;
  // The script puts the system's directories first on PATH: where Slurm is installed the real
  // scontrol answers instead of the stand-in, so the script itself must hold no update.
  EXPECT_EQ(ReadFile(tmp_.path() / "gate.sh").find("scontrol update"), std::string::npos);
  if (fs::exists(tmp_.path() / "calls")) {
    const std::string calls = ReadFile(tmp_.path() / "calls");
    EXPECT_EQ(calls.find("update"), std::string::npos) << calls;
  }
}

TEST_F(FleetSlurm, RunsTheImageByDigestThroughPyxis) {
  Script();
  EXPECT_TRUE(Has("IMAGE='registry.example#h200-pilot@" + kDigest + "'") ||
              Has("IMAGE=registry.example#h200-pilot@" + kDigest))
      << text_;
  EXPECT_TRUE(Has("--container-image=\"$IMAGE\"")) << text_;
  EXPECT_TRUE(Has("--container-mounts=\"$REPORTS:/reports\"")) << text_;
  EXPECT_TRUE(Has("export TRAINLOCK_NODE_NAME=\"${SLURMD_NODENAME:-$(hostname)}\"")) << text_;
  EXPECT_TRUE(Has("--nproc auto --out \"/reports/$TRAINLOCK_NODE_NAME.json\"")) << text_;
  EXPECT_TRUE(
      Has("trainlock fleet summarize --nodes 4 --since \"$ROUND_START\" --node "
          "\"$ROUND_NODES\" --allow-unsigned \"$REPORTS\""))
      << text_;
  EXPECT_TRUE(Has("apptainer exec --nv")) << text_;
}

// A lock that pins golden digests (`lock --golden`): the job's summarize holds each report to
// its key's pin, reading the lock where the nodes have it (the image's copy carries no pins).
TEST_F(FleetSlurm, ALockThatPinsGoldenDigestsIsPassedToTheJobsSummarize) {
  Script();
  EXPECT_FALSE(Has("--lock")) << "no pins, nothing to hold the reports to";
  const fs::path lock = project_ / kLockFile;
  const std::string build = LoadProject(project_).lock->lock_build_sha256;
  GoldenDigest pin;
  pin.digest = std::string(64, 'a');
  pin.key.gpu = "NVIDIA H200";
  pin.key.lock_sha256 = build;
  WriteFile(lock, LockTextWithGoldenPin(ReadFile(lock), "trainlock.lock", build, pin));
  Script();
  EXPECT_TRUE(Has("--allow-unsigned --lock " + NodeLockPath("h200-pilot") + " \"$REPORTS\""))
      << text_;
  Script({"--node-lock", "/shared/trainlock/trainlock.lock"});
  EXPECT_TRUE(Has("--lock /shared/trainlock/trainlock.lock \"$REPORTS\"")) << text_;
}

TEST_F(FleetSlurm, HostileValuesAreQuotedAndNotExecuted) {
  if (!testing::HaveProgram("bash")) GTEST_SKIP() << "bash is not on PATH";
  const fs::path marker = tmp_.path() / "pwned";
  const std::string hostile = (tmp_.path() / "r").string() + "$(touch " + marker.string() +
                              ")'; touch " + marker.string() + " #`touch " + marker.string() +
                              "` \"x\"";
  const fs::path script = Script({"--reports-dir", hostile, "--name", "x; $(touch y)"});
  EXPECT_TRUE(Has("#SBATCH --job-name=x-touch-y\n")) << text_;
  ASSERT_EQ(RunCommand({"bash", "-n", script.string()}).exit_code, 0) << text_;

  // Run it with a stand-in srun that records its arguments: the hostile directory must arrive
  // as one literal path, and nothing in it may run.
  const fs::path bin = tmp_.path() / "bin";
  fs::create_directories(bin);
  const fs::path args_file = tmp_.path() / "srun-args";
  WriteFile(bin / "srun", "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"" +
                              args_file.string() + "\"\n");
  fs::permissions(bin / "srun", fs::perms::owner_all);
  // The round's nodes, as sbatch's environment and scontrol name them.
  WriteFile(bin / "scontrol", "#!/bin/sh\necho gpu-1\n");
  fs::permissions(bin / "scontrol", fs::perms::owner_all);
  RunResult r = RunCommand(
      {"bash", script.string()},
      {"PATH=" + bin.string() + ":/usr/bin:/bin", "SLURM_JOB_ID=7", "SLURM_JOB_NODELIST=gpu-1"});
  EXPECT_FALSE(fs::exists(marker)) << r.out << r.err;
  EXPECT_TRUE(fs::is_directory(hostile)) << r.err;
  EXPECT_NE(ReadFile(args_file).find("--container-mounts=" + hostile + ":/reports\n"),
            std::string::npos)
      << ReadFile(args_file);
}

TEST(FleetShellQuote, HostileValuesSurviveBashAsOneLiteralWord) {
  if (!testing::HaveProgram("bash")) GTEST_SKIP() << "bash is not on PATH";
  for (const std::string& value :
       {std::string("plain/path-1.json"), std::string(""), std::string("it's"),
        std::string("$(touch /tmp/x) `id` ${HOME} \"q\" \\ ; | & > <"), std::string("#comment"),
        std::string("line\nbreak"), std::string("'''"), std::string("~root"), std::string("*")}) {
    RunResult r = RunCommand({"bash", "-c", "printf %s " + ShellQuote(value)});
    EXPECT_EQ(r.exit_code, 0) << value;
    EXPECT_EQ(r.out, value) << ShellQuote(value);
  }
  EXPECT_EQ(ShellQuote("registry.example#x@sha256:ab"), "registry.example#x@sha256:ab");
}

TEST(FleetEnroot, ImageReferenceSeparatesTheRegistryWithAHash) {
  EXPECT_EQ(EnrootImageRef("registry.example:5000/team/x:1@" + kDigest),
            "registry.example:5000#team/x@" + kDigest);
  EXPECT_EQ(EnrootImageRef("docker.io/nvidia/cuda@" + kDigest), "nvidia/cuda@" + kDigest);
  EXPECT_EQ(EnrootImageRef("ubuntu@" + kDigest), "ubuntu@" + kDigest);
}

// ---- fleet summarize ----

class FleetSummarize : public ::testing::Test {
 protected:
  static json Fixture() {
    return json::parse(ReadFile(SourceDir() / "tests/fixtures/reports/h200-pilot-report.json"));
  }
  static json* Check(json& report, const std::string& id) {
    for (json& c : report["checks"]) {
      if (c["id"] == id) return &c;
    }
    return nullptr;
  }
  void Put(const std::string& file, const json& report) {
    WriteFile(tmp_.path() / file, report.dump(2));
  }
  json Passing(const std::string& host) {
    json r = Fixture();
    r["host"]["hostname"] = host;
    return r;
  }
  // A passing report, a failing one, one with a required check skipped, and a non-JSON file.
  void WriteMixed() {
    Put("gpu-a.json", Passing("gpu-a"));
    json failing = Passing("gpu-b");
    (*Check(failing, "train.roundtrip"))["status"] = "fail";
    failing["verdict"] = "fail";
    Put("gpu-b.json", failing);
    json skipped = Passing("gpu-c");
    (*Check(skipped, "env.health"))["status"] = "skip";
    skipped["verdict"] = "fail";
    Put("gpu-c.json", skipped);
    WriteFile(tmp_.path() / "gpu-d.json", "{\"schema\": truncated");
  }
  RunResult Summarize(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"fleet", "summarize", tmp_.path().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunTrainlock(args);
  }

  TempDir tmp_;
};

TEST_F(FleetSummarize, MixedReportsListEveryNodeAndFailingChecksAndExitOne) {
  WriteMixed();
  RunResult r = Summarize();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  for (const char* node : {"gpu-a", "gpu-b", "gpu-c", "gpu-d"})
    EXPECT_NE(r.out.find(node), std::string::npos) << node << "\n" << r.out;
  EXPECT_NE(r.out.find("train.roundtrip"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("env.health (skipped)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unreadable"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not valid JSON"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 x NVIDIA H200"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4 nodes: 1 passed, 3 failed"), std::string::npos) << r.out;
}

// A node the validator could not judge is an error row saying why, never a failing node.
TEST_F(FleetSummarize, AReportNotJudgedIsAnErrorRowWithTheReason) {
  json r = Passing("gpu-e");
  r["verdict"] = "error";
  r["environment_error"] = "engine fsdp2: /usr/bin/python3 has torch 1.13.0a0";
  Put("gpu-e.json", r);
  FleetSummary s = SummarizeReports(tmp_.path(), "reports");
  ASSERT_EQ(s.nodes.size(), 1u);
  EXPECT_EQ(s.nodes[0].status, "error");
  EXPECT_EQ(s.nodes[0].reason, "not judged: engine fsdp2: /usr/bin/python3 has torch 1.13.0a0");
  EXPECT_TRUE(s.nodes[0].failing.empty());
  EXPECT_EQ(s.failed(), 1);
}

TEST_F(FleetSummarize, RowsAreSortedByNodeName) {
  Put("z.json", Passing("node-2"));
  Put("a.json", Passing("node-10"));
  Put("m.json", Passing("node-1"));
  FleetSummary s = SummarizeReports(tmp_.path(), "reports");
  ASSERT_EQ(s.nodes.size(), 3u);
  EXPECT_EQ(s.nodes[0].node, "node-1");
  EXPECT_EQ(s.nodes[1].node, "node-10");
  EXPECT_EQ(s.nodes[2].node, "node-2");
}

TEST_F(FleetSummarize, LibraryClassifiesEachReport) {
  WriteMixed();
  FleetSummary s = SummarizeReports(tmp_.path(), "reports");
  ASSERT_EQ(s.nodes.size(), 4u);
  EXPECT_EQ(s.nodes[0].status, "pass");
  EXPECT_EQ(s.nodes[1].status, "fail");
  ASSERT_EQ(s.nodes[1].failing.size(), 1u);
  EXPECT_EQ(s.nodes[1].failing[0].id, "train.roundtrip");
  EXPECT_EQ(s.nodes[2].failing.at(0).status, "skip");
  EXPECT_EQ(s.nodes[3].status, "unreadable");
  EXPECT_EQ(s.nodes[3].node, "gpu-d");  // no report: the file name stands in
  EXPECT_TRUE(s.nodes[3].reason.starts_with("reports/gpu-d.json:1:")) << s.nodes[3].reason;
  EXPECT_EQ(s.passed(), 1);
  EXPECT_EQ(s.failed(), 3);
}

TEST_F(FleetSummarize, AllPassingExitsZero) {
  Put("gpu-a.json", Passing("gpu-a"));
  Put("gpu-b.json", Passing("gpu-b"));
  WriteFile(tmp_.path() / "notes.txt", "not a report, not *.json");
  RunResult r = Summarize();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 nodes: 2 passed, 0 failed"), std::string::npos) << r.out;
}

TEST_F(FleetSummarize, EmptyDirectoryIsBadInput) {
  RunResult r = Summarize();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no *.json reports"), std::string::npos) << r.err;
}

TEST_F(FleetSummarize, MissingDirectoryIsBadInput) {
  RunResult r = RunTrainlock({"fleet", "summarize", (tmp_.path() / "nope").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no such directory"), std::string::npos) << r.err;
}

TEST_F(FleetSummarize, FewerReportsThanExpectedNodesFail) {
  Put("gpu-a.json", Passing("gpu-a"));
  Put("gpu-b.json", Passing("gpu-b"));
  RunResult r = Summarize({"--nodes", "3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("1 missing"), std::string::npos) << r.out;
}

// A rank's own report, as `--nproc` leaves beside the merged one (`<node>.rank-N.json`).
json RankReport(json report, int rank) {
  report["partial"] = true;
  report["rank"] = {
      {"rank", rank}, {"world_size", 2}, {"local_rank", rank}, {"launcher", "torchrun"}};
  return report;
}

TEST_F(FleetSummarize, RankReportsBesideTheMergedReportAreSetAsideNotCountedAsNodes) {
  Put("gpu-a.json", Passing("gpu-a"));
  Put("gpu-a.rank-0.json", RankReport(Passing("gpu-a"), 0));
  Put("gpu-a.rank-1.json", RankReport(Passing("gpu-a"), 1));
  FleetRound three_nodes;
  three_nodes.expected_nodes = 3;
  FleetSummary s = SummarizeReports(tmp_.path(), "reports", three_nodes);
  ASSERT_EQ(s.nodes.size(), 1u);
  EXPECT_EQ(s.rank_reports, (std::vector<std::string>{"gpu-a.rank-0.json", "gpu-a.rank-1.json"}));
  EXPECT_EQ(s.missing(), 2);
  RunResult r = Summarize({"--nodes", "3"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("(2 rank reports set aside"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 node: 1 passed, 0 failed, 2 missing"), std::string::npos) << r.out;
}

TEST_F(FleetSummarize, ANodeWithOnlyRankReportsFailsAsPartial) {
  Put("gpu-a.json", Passing("gpu-a"));
  Put("gpu-b.rank-0.json", RankReport(Passing("gpu-b"), 0));
  Put("gpu-b.rank-1.json", RankReport(Passing("gpu-b"), 1));
  RunResult r = Summarize({"--nodes", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("gpu-b  partial"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpu-b's merged report was never written"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 nodes: 1 passed, 1 failed"), std::string::npos) << r.out;
}

TEST_F(FleetSummarize, CopiesOfOneNodesReportCountAsOneNode) {
  for (const char* file : {"a.json", "b.json", "c.json", "d.json"}) Put(file, Passing("gpu-a"));
  RunResult r = Summarize({"--nodes", "4"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("1 node in 4 reports: 4 passed, 0 failed, 3 missing"), std::string::npos)
      << r.out;
}

TEST_F(FleetSummarize, DifferentLocksAreWarned) {
  Put("gpu-a.json", Passing("gpu-a"));
  json other = Passing("gpu-b");
  other["lock_sha256"] = std::string(64, 'b');
  Put("gpu-b.json", other);
  RunResult r = Summarize();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("warning: the reports validated 2 different locks"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("bbbbbbbbbbbb (1 node)"), std::string::npos) << r.out;
}

TEST_F(FleetSummarize, JsonCarriesTheSameRows) {
  WriteMixed();
  RunResult r = Summarize({"--json"});
  EXPECT_EQ(r.exit_code, 1);
  json out = json::parse(r.out);
  EXPECT_EQ(out["total"], 4);
  EXPECT_EQ(out["passed"], 1);
  EXPECT_EQ(out["failed"], 3);
  EXPECT_EQ(out["nodes"][1]["node"], "gpu-b");
  EXPECT_EQ(out["nodes"][1]["failing_checks"][0]["id"], "train.roundtrip");
  EXPECT_EQ(out["nodes"][3]["verdict"], "unreadable");
  EXPECT_EQ(out["all_passed"], false);
}

TEST_F(FleetSummarize, ControlCharactersInAHostnameAreEscaped) {
  Put("gpu-a.json", Passing("evil\x1b[2Jnode"));
  RunResult r = Summarize();
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_NE(r.out.find("evil\\x1b[2Jnode"), std::string::npos) << r.out;
}

// ---- examples/fleet ----

TEST(FleetExamples, CheckedInExamplesAreWhatTheCommandGenerates) {
  TempDir tmp;
  const fs::path pilot = SourceDir() / "examples/h200-pilot";
  const std::vector<std::string> gate = {"--prolog", "--key", "/shared/trainlock/fleet.pub",
                                         "--reports-dir", "/shared/trainlock-reports"};
  const std::vector<std::string> revalidate = {"--revalidate",
                                               "--node",
                                               "gpu-017,gpu-018",
                                               "--reports-dir",
                                               "/shared/trainlock-reports",
                                               "--sign-key",
                                               "/shared/trainlock/fleet.key"};
  for (const auto& [kind, file, extra] :
       {std::tuple<std::string, std::string, std::vector<std::string>>{
            "k8s", "validate-job.yaml", {"--nodes", "4"}},
        {"slurm", "validate.sbatch", {"--nodes", "4"}},
        {"slurm", "node-gate.sh", gate},
        {"slurm", "revalidate.sh", revalidate}}) {
    const fs::path out = tmp.path() / file;
    std::vector<std::string> args = {"fleet",       kind,    pilot.string(), "--image",
                                     kExampleImage, "--out", out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = RunTrainlock(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ReadFile(out), ReadFile(SourceDir() / "examples/fleet" / file))
        << "regenerate examples/fleet/" << file << " (examples/fleet/README.md)";
  }
}

}  // namespace
}  // namespace trainlock
