// Specification of the node gates, which run on each node and decide from its own signed report:
// the Slurm Prolog/HealthCheckProgram (`trainlock fleet slurm --prolog`) against a real Slurm,
// and the node-problem-detector plugin (`trainlock fleet k8s --npd-plugin`) by its exit codes.
//
// Slurm: Debian's slurm-wlm slurmctld and slurmd with munge, one node on 127.0.0.1, each test
// starting its own cluster (ports, state and munge key in a temporary directory) and shutting it
// down at the end. The generated script is slurm.conf's Prolog and HealthCheckProgram (every 2 s
// here). Needs root (slurmd runs jobs as their user); skipped, saying why, without it or without
// the programs (ci/deps.sh installs them).
//
// A "validate" is a report signed with the test's key as `trainlock-validate --sign` writes it,
// of examples/h200-pilot's lock: the validator itself runs on GPU nodes, not here.
#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/sha256.h"
#include "base/time_text.h"
#include "project/project.h"
#include "report/report_signing.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::RunCommand;
using testing::RunResult;

constexpr const char* kNode = "gpu-001";
const std::string kDigest = "sha256:" + std::string(64, 'e');

std::string ShortHostName() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::string host = name;
  return host.substr(0, host.find('.'));
}

bool WaitFor(const std::function<bool()>& done, int seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return done();
}

// A project as the nodes see it and the reports a validate leaves there.
class NodeGate : public ::testing::Test {
 protected:
  void MakeDirs() {
    dir_ = tmp_.path();
    for (const char* sub : {"munge", "sock", "state", "spool", "reports", "log", "jobs"})
      fs::create_directories(dir_ / sub);
  }

  // Where the gates read the lock: a copy of the project's, with nothing beside it.
  fs::path NodeLock() const { return dir_ / "node/etc/trainlock/h200-pilot/trainlock.lock"; }

  // examples/h200-pilot's lock and config as the nodes see them (no manifest: the gate relies
  // on the report for the files), with a built image recorded and a 1 h validity window.
  void MakeProject() {
    fs::create_directories(dir_ / "project");
    project_ = testing::CopyExample("h200-pilot", dir_ / "project");
    fs::remove(project_ / "trainlock.toml");
    const fs::path lock = project_ / "trainlock.lock";
    std::string text = testing::ReadFile(lock);
    text.replace(text.find("[validate]\n"), 11, "[validate]\nvalid-for = \"1h\"\n");
    text +=
        "\n[images.cuda]\nref = \"registry.example/h200-pilot:1\"\ndigest = \"" + kDigest + "\"\n";
    testing::WriteFile(lock, text);
    // The node holds the lock alone, installed at a path of its own (docs/fleet.md).
    fs::create_directories(NodeLock().parent_path());
    fs::copy_file(lock, NodeLock());
    RunResult keys = testing::RunTrainlock({"keygen", (dir_ / "key").string()});
    ASSERT_EQ(keys.exit_code, 0) << keys.err;
    private_key_ = testing::ReadFile(dir_ / "key.key");
  }

  // What `trainlock-validate --sign` leaves after a pass (or, `passing` false, a failed
  // train.roundtrip) on `host`, `age_s` seconds ago, as kNode's report (or at `to`).
  void Validate(const std::string& host, int64_t age_s = 0, fs::path to = {}, bool passing = true) {
    Project project = LoadProject(project_, ManifestRequirement::kOptional);
    json report = json::parse(
        testing::ReadFile(testing::SourceDir() / "tests/fixtures/reports/h200-pilot-report.json"));
    report["lock_sha256"] = project.lock->lock_build_sha256;
    report["config_sha256"] = project.config_sha256;
    report["host"]["hostname"] = host;
    report["image"] = {{"ref", "registry.example/h200-pilot:1"}, {"digest", kDigest}};
    const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    std::time_t started = now - age_s;
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&started));
    report["started_at"] = text;
    if (!passing) {
      report["verdict"] = "fail";
      for (json& check : report["checks"])
        if (check["id"] == "train.roundtrip") check["status"] = "fail";
    }
    SignReport(report, private_key_);
    if (to.empty()) to = dir_ / "reports" / (std::string(kNode) + ".json");
    testing::WriteFile(to, SignedReportText(report));
  }

  testing::TempDir tmp_;
  fs::path dir_;
  fs::path project_;
  std::string private_key_;
};

class SlurmNodeGate : public NodeGate {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: slurmd runs jobs as their user";
    for (const char* tool : {"munged", "slurmctld", "slurmd", "sbatch", "scontrol", "bash"}) {
      if (!testing::HaveProgram(tool))
        GTEST_SKIP() << tool << " is not installed (ci/deps.sh installs slurm-wlm and munge)";
    }
    const auto start = std::chrono::steady_clock::now();
    MakeDirs();
    fs::permissions(dir_ / "sock", fs::perms::owner_all | fs::perms::group_read |
                                       fs::perms::group_exec | fs::perms::others_read |
                                       fs::perms::others_exec);
    fs::permissions(dir_ / "jobs", fs::perms::all);
    MakeProject();
    if (HasFatalFailure()) return;
    WriteGate();
    if (HasFatalFailure()) return;
    StartCluster();
    ASSERT_TRUE(WaitFor([&] { return NodeField("State").find("IDLE") != std::string::npos; }, 60))
        << "the node never came up: " << Scontrol({"show", "node", kNode}).out
        << testing::ReadFile(dir_ / "log/slurmd.log");
    std::cerr << "[ timing ] cluster up in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
              << " s\n";
  }

  void TearDown() override {
    if (!daemons_.empty()) Scontrol({"shutdown"});  // slurmctld and slurmd end their children
    daemons_.clear();                               // then SIGKILL whatever is left
  }

  // The gate the hooks run; `extra` options after the usual ones (--report-only).
  void WriteGate(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"fleet",           "slurm",
                                     project_.string(), "--prolog",
                                     "--key",           (dir_ / "key.pub").string(),
                                     "--reports-dir",   (dir_ / "reports").string(),
                                     "--node-lock",     NodeLock().string(),
                                     "--trainlock",     (testing::BinDir() / "trainlock").string(),
                                     "--out",           (dir_ / "gate.sh").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult gate = testing::RunTrainlock(args);
    ASSERT_EQ(gate.exit_code, 0) << gate.err;
    // slurmd runs both hooks with a bare environment: on a cluster slurm.conf is in /etc/slurm.
    // While hc-paused exists the health check (the hook without a job) does nothing: a job then
    // meets the Prolog as it would between two health checks on a cluster.
    testing::WriteFile(dir_ / "hc-paused", "");
    testing::WriteFile(dir_ / "hook.sh", "#!/bin/bash\nexport SLURM_CONF=" + Conf() +
                                             "\n[ -z \"${SLURM_JOB_ID:-}\" ] && [ -e " +
                                             (dir_ / "hc-paused").string() +
                                             " ] && exit 0\nexec bash " +
                                             (dir_ / "gate.sh").string() + "\n");
    fs::permissions(dir_ / "hook.sh", fs::perms::owner_all);
  }

  std::string Conf() const { return (dir_ / "slurm.conf").string(); }

  void StartCluster() {
    std::ofstream(dir_ / "munge/munge.key")
        << std::string(1024, 'k') + ShortHostName() + dir_.string();
    fs::permissions(dir_ / "munge/munge.key", fs::perms::owner_read);
    fs::permissions(dir_ / "munge", fs::perms::owner_all);
    const std::string socket = (dir_ / "sock/munge.socket").string();
    const std::string d = dir_.string();
    // Eight GPUs as the validation job asks for them (--gpus-per-node=8): files stand in.
    std::ofstream(dir_ / "gres.conf") << "Name=gpu File=" << d << "/gpu[0-7]\n";
    for (int i = 0; i < 8; ++i) testing::WriteFile(dir_ / ("gpu" + std::to_string(i)), "");
    std::ofstream(Conf()) << "ClusterName=trainlock\nGresTypes=gpu\n"
                          << "SlurmctldHost=" << ShortHostName() << "(127.0.0.1)\n"
                          << "SlurmctldPort=" << testing::FreeLoopbackPort() << "\n"
                          << "SlurmdPort=" << testing::FreeLoopbackPort() << "\n"
                          << "AuthType=auth/munge\nCredType=cred/munge\n"
                          << "AuthInfo=socket=" << socket << "\n"
                          << "SlurmUser=root\nSlurmdUser=root\n"
                          << "StateSaveLocation=" << d << "/state\n"
                          << "SlurmdSpoolDir=" << d << "/spool\n"
                          << "SlurmctldPidFile=" << d << "/slurmctld.pid\n"
                          << "SlurmdPidFile=" << d << "/slurmd.pid\n"
                          << "SlurmctldLogFile=" << d << "/log/slurmctld.log\n"
                          << "SlurmdLogFile=" << d << "/log/slurmd.log\n"
                          << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                          << "SelectType=select/linear\nMpiDefault=none\n"
                          << "JobCompType=jobcomp/none\n"
                          << "AccountingStorageType=accounting_storage/none\n"
                          << "ReturnToService=2\n"
                          << "Prolog=" << d << "/hook.sh\n"
                          << "HealthCheckProgram=" << d << "/hook.sh\n"
                          << "HealthCheckInterval=2\nHealthCheckNodeState=ANY\n"
                          << "NodeName=" << kNode
                          << " NodeAddr=127.0.0.1 CPUs=1 Gres=gpu:8 State=UNKNOWN\n"
                          << "PartitionName=gpu Nodes=" << kNode
                          << " Default=YES MaxTime=INFINITE State=UP\n";
    Daemon({"munged", "-F", "--force", "--num-threads=4", "--key-file=" + d + "/munge/munge.key",
            "--socket=" + socket, "--log-file=" + d + "/log/munged.log",
            "--pid-file=" + d + "/munged.pid", "--seed-file=" + d + "/munged.seed"},
           "munged.out");
    ASSERT_TRUE(WaitFor([&] { return fs::exists(socket); }, 20)) << "munged did not start";
    Daemon({"slurmctld", "-D", "-i", "-f", Conf()}, "slurmctld.out");
    Daemon({"slurmd", "-D", "-N", kNode, "-f", Conf()}, "slurmd.out");
  }

  void Daemon(const std::vector<std::string>& argv, const std::string& log) {
    daemons_.push_back(std::make_unique<testing::BackgroundProcess>(argv, dir_ / "log" / log));
  }

  RunResult Slurm(std::vector<std::string> argv) {
    argv.insert(argv.begin(), {"timeout", "30"});
    return RunCommand(argv, {"SLURM_CONF=" + Conf()});
  }
  RunResult Scontrol(std::vector<std::string> args) {
    args.insert(args.begin(), "scontrol");
    return Slurm(args);
  }

  // A field of `scontrol show node`, e.g. State ("IDLE+DRAIN") or Reason ("why [root@time]").
  std::string NodeField(const std::string& field) {
    const std::string out = Scontrol({"show", "node", kNode}).out;
    const size_t at = out.find(" " + field + "=");
    if (at == std::string::npos) return "";
    const size_t begin = at + field.size() + 2;
    return out.substr(begin, out.find('\n', begin) - begin);
  }
  bool Drained() { return NodeField("State").find("DRAIN") != std::string::npos; }
  bool DrainedWith(const std::string& reason) {
    return Drained() && NodeField("Reason").starts_with(reason);
  }
  void ResumeHealthChecks() { fs::remove(dir_ / "hc-paused"); }

  std::string Submit(const std::string& marker, const std::string& name = "wrap") {
    RunResult r = Slurm({"sbatch", "--parsable", "-J", name, "-o", (dir_ / "jobs/%j.out").string(),
                         "--wrap", "touch " + (dir_ / "jobs" / marker).string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find_first_of(";\n"));
  }
  std::string JobState(const std::string& job) {
    return Slurm({"squeue", "-h", "-j", job, "-o", "%T %r"}).out;
  }
  bool Ran(const std::string& marker) { return fs::exists(dir_ / "jobs" / marker); }

  // `trainlock fleet slurm --revalidate --node gpu-001` run as the operator (root) in jobs/.
  // pyxis is not here: a stand-in srun leaves `staged`, a signed report, as the node's report
  // in the directory the job mounts on /reports, as the validator in the image would (an empty
  // `staged`: it leaves none, as a node whose validator never wrote one). With `summarize`
  // trainlock is on the job's PATH, so the job ends with `trainlock fleet summarize` of its
  // round and its exit code.
  RunResult Revalidate(const fs::path& staged, bool summarize = false) {
    RunResult gen = testing::RunTrainlock(
        {"fleet", "slurm", project_.string(), "--revalidate", "--node", kNode, "--reports-dir",
         (dir_ / "reports").string(), "--sign-key", (dir_ / "key.key").string(), "--out",
         (dir_ / "revalidate.sh").string()});
    EXPECT_EQ(gen.exit_code, 0) << gen.err;
    fs::create_directories(dir_ / "bin");
    const std::string leave =
        staged.empty()
            ? std::string("true\n")
            : "cp " + staged.string() + " \"${mounts%%:/reports*}/$SLURMD_NODENAME.json\"\n";
    testing::WriteFile(dir_ / "bin/srun",
                       "#!/bin/bash\n"
                       "for arg; do case $arg in --container-mounts=*) "
                       "mounts=${arg#--container-mounts=};; esac; done\n" +
                           leave);
    fs::permissions(dir_ / "bin/srun", fs::perms::owner_all);
    if (summarize) fs::create_symlink(testing::BinDir() / "trainlock", dir_ / "bin/trainlock");
    const char* path = std::getenv("PATH");
    return RunCommand({"bash", "-c",
                       "cd " + (dir_ / "jobs").string() + " && exec timeout 120 bash " +
                           (dir_ / "revalidate.sh").string()},
                      {"SLURM_CONF=" + Conf(),
                       "PATH=" + (dir_ / "bin").string() + ":" + (path ? path : "/usr/bin:/bin")});
  }
  // What the validation job printed (its --output file in jobs/).
  std::string JobOutput() {
    std::string out;
    for (const auto& entry : fs::directory_iterator(dir_ / "jobs")) {
      if (entry.path().filename().string().starts_with("trainlock-validate-"))
        out += testing::ReadFile(entry.path());
    }
    return out;
  }
  bool Reserved() {
    return Scontrol({"show", "reservation"}).out.find("trainlock-revalidate") != std::string::npos;
  }

  std::vector<std::unique_ptr<testing::BackgroundProcess>> daemons_;
};

// The rollout's first step: in report-only mode the gate decides as always, logs the drain it
// would make with the reason, and changes nothing: the node stays up and the job runs.
TEST_F(SlurmNodeGate, ReportOnlyLogsTheDrainItWouldMakeAndTheJobRuns) {
  const fs::path log = dir_ / "log/trainlock-node-gate.log";
  WriteGate({"--report-only", "--gate-log", log.string()});
  ASSERT_FALSE(HasFatalFailure());
  ResumeHealthChecks();
  const std::string job = Submit("report-only");
  EXPECT_TRUE(WaitFor([&] { return Ran("report-only"); }, 60)) << JobState(job);
  EXPECT_FALSE(Drained()) << NodeField("State") << " " << NodeField("Reason");
  const std::string logged = fs::exists(log) ? testing::ReadFile(log) : "";
  EXPECT_NE(logged.find("trainlock node gate (report only): " + std::string(kNode) +
                        ": would drain: trainlock: report: no report " +
                        (dir_ / "reports").string() + "/" + kNode + ".json"),
            std::string::npos)
      << logged;
}

// The validation job's name is the user's to choose: it is no way past the gate.
TEST_F(SlurmNodeGate, AJobNamedLikeTheValidationJobIsStillGated) {
  const std::string job = Submit("named", "trainlock-validate-h200-pilot");
  ASSERT_TRUE(WaitFor([&] { return DrainedWith("trainlock: report: no report"); }, 60))
      << NodeField("State") << " " << NodeField("Reason");
  EXPECT_TRUE(WaitFor([&] { return JobState(job).find("held") != std::string::npos; }, 30))
      << JobState(job);
  EXPECT_FALSE(Ran("named"));
}

// A new node, drained by the gate, comes back through Slurm: the operator's revalidation runs
// the validation job in the revalidation reservation (not gated, the node not drained while in
// it), deletes the reservation, and the gate then lets ordinary jobs run on the passing report.
TEST_F(SlurmNodeGate, ADrainedNodeIsValidatedThroughTheRevalidationReservationThenTakesJobs) {
  ResumeHealthChecks();
  ASSERT_TRUE(WaitFor([&] { return DrainedWith("trainlock: report: no report"); }, 30))
      << NodeField("State") << " " << NodeField("Reason");
  Validate(kNode, 0, dir_ / "staged.json");
  RunResult r = Revalidate(dir_ / "staged.json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << testing::ReadFile(dir_ / "log/slurmd.log");
  EXPECT_TRUE(fs::exists(dir_ / "reports" / (std::string(kNode) + ".json")));
  EXPECT_FALSE(Reserved()) << "the reservation outlived the revalidation";
  std::this_thread::sleep_for(std::chrono::seconds(4));  // health checks on the new report
  EXPECT_FALSE(Drained()) << NodeField("State") << " " << NodeField("Reason");
  const std::string job = Submit("ordinary");
  EXPECT_TRUE(WaitFor([&] { return Ran("ordinary"); }, 60)) << JobState(job);
}

// The validation job is a round: a node that writes no report in it is missing, whatever
// passing report of an earlier round it left in the shared directory (tests/fleet_round_test.cc
// has the rule).
TEST_F(SlurmNodeGate, TheJobsRoundCountsNoOldPassingReportOfANodeThatDidNotReport) {
  Validate(kNode, 600);  // passed ten minutes ago, before this round
  RunResult r = Revalidate({}, true);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err << JobOutput();
  const std::string out = JobOutput();
  EXPECT_NE(out.find(std::string(kNode) + "  missing"), std::string::npos) << out;
  EXPECT_NE(out.find("before the round began at"), std::string::npos) << out;
}

// Another node's failing report in the shared directory is not this round's: the job passes on
// its own node's report.
TEST_F(SlurmNodeGate, AnUnrelatedNodesFailingReportDoesNotFailTheJobsRound) {
  Validate("gpu-099", 0, dir_ / "reports/gpu-099.json", false);
  // Started ten minutes ahead: the stand-in srun copies it during the job, where the validator
  // would write a report started after the round began.
  Validate(kNode, -600, dir_ / "staged.json");
  RunResult r = Revalidate(dir_ / "staged.json", true);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << JobOutput();
  const std::string out = JobOutput();
  EXPECT_NE(out.find("gpu-099 (gpu-099.json, fail): not in this round"), std::string::npos) << out;
  EXPECT_NE(out.find("1 node: 1 passed, 0 failed"), std::string::npos) << out;
}

// A revalidation whose report the gate refuses brings nothing back: once the reservation is
// gone the health check drains the node again.
TEST_F(SlurmNodeGate, ARevalidationTheGateRefusesLeavesTheNodeDrained) {
  ResumeHealthChecks();
  ASSERT_TRUE(WaitFor([&] { return DrainedWith("trainlock: report: no report"); }, 30));
  Validate("gpu-002", 0, dir_ / "staged.json");  // made on another node
  RunResult r = Revalidate(dir_ / "staged.json");
  EXPECT_FALSE(Reserved());
  EXPECT_TRUE(WaitFor([&] { return DrainedWith("trainlock: node: the report was made on"); }, 30))
      << r.out << r.err << NodeField("State") << " " << NodeField("Reason");
  const std::string job = Submit("after-refusal");
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_FALSE(Ran("after-refusal")) << JobState(job);
}

TEST_F(SlurmNodeGate, AJobWaitsHeldOnANodeWithoutAReportAndRunsOnceAValidateOfThisNodePasses) {
  const std::string job = Submit("first");
  ASSERT_TRUE(WaitFor([&] { return DrainedWith("trainlock: report: no report"); }, 60))
      << "the Prolog did not drain the node: " << NodeField("State") << " " << NodeField("Reason");
  EXPECT_TRUE(WaitFor([&] { return JobState(job).find("held") != std::string::npos; }, 30))
      << JobState(job);
  EXPECT_FALSE(Ran("first"));

  Validate(kNode);
  ResumeHealthChecks();
  ASSERT_TRUE(WaitFor([&] { return !Drained(); }, 30))
      << "the health check did not resume the node: " << NodeField("Reason");
  Scontrol({"release", job});
  Scontrol({"update", "JobId=" + job, "StartTime=now"});  // a requeued job waits otherwise
  EXPECT_TRUE(WaitFor([&] { return Ran("first"); }, 60)) << JobState(job);
}

TEST_F(SlurmNodeGate, AnExpiredReportDrainsTheNodeAgainAndNoJobStarts) {
  Validate(kNode);
  ResumeHealthChecks();
  Submit("fresh");
  ASSERT_TRUE(WaitFor([&] { return Ran("fresh"); }, 60)) << NodeField("Reason");

  Validate(kNode, 2 * 3600);  // the lock's valid-for is 1h
  ASSERT_TRUE(WaitFor([&] { return DrainedWith("trainlock: age: the report is 2h 0m old"); }, 30))
      << NodeField("State") << " " << NodeField("Reason");
  const std::string job = Submit("expired");
  std::this_thread::sleep_for(std::chrono::seconds(5));
  EXPECT_FALSE(Ran("expired")) << JobState(job);
}

TEST_F(SlurmNodeGate, AReportOfAnotherNodeDrainsThisOne) {
  Validate("gpu-002");
  ResumeHealthChecks();
  EXPECT_TRUE(WaitFor(
      [&] {
        return DrainedWith(
            "trainlock: node: the report was made on 'gpu-002', not on this node 'gpu-001'");
      },
      30))
      << NodeField("State") << " " << NodeField("Reason");
}

TEST_F(SlurmNodeGate, AReasonTrainlockDidNotSetIsNeitherReplacedNorLifted) {
  Scontrol({"update", "NodeName=" + std::string(kNode), "State=DRAIN", "Reason=maintenance: fan"});
  ResumeHealthChecks();
  std::this_thread::sleep_for(std::chrono::seconds(5));  // health checks without a report
  EXPECT_TRUE(DrainedWith("maintenance: fan")) << NodeField("Reason");
  Validate(kNode);
  std::this_thread::sleep_for(std::chrono::seconds(5));  // health checks with a passing one
  EXPECT_TRUE(DrainedWith("maintenance: fan")) << NodeField("State") << NodeField("Reason");
}

// `trainlock watch --revoke slurm` against the same slurmctld: a revoking kernel record drains
// the node naming the event and the digest of its report; the node gate, given the watch's state,
// refuses that report from then on, and only a new pass started after the event restores it.
class SlurmWatch : public SlurmNodeGate {
 protected:
  fs::path State() const { return dir_ / "watch"; }
  RunResult Watch(const std::vector<std::string>& extra) {
    const fs::path kmsg = dir_ / "kmsg";
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t kernel_us = int64_t{now.tv_sec} * 1000000 + now.tv_nsec / 1000 - 1000000;
    testing::WriteFile(kmsg, "4,900," + std::to_string(kernel_us) +
                                 ",-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, "
                                 "GPU has fallen off the bus.\n");
    std::vector<std::string> args = {
        "watch",         "--kmsg",         kmsg.string(),
        "--watch-state", State().string(), "--node",
        kNode,           "--reports-dir",  (dir_ / "reports").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::RunProgram("trainlock", args, {"SLURM_CONF=" + Conf()});
  }
};

TEST_F(SlurmWatch, ARevokingEventDrainsTheNodeAndOnlyANewPassRestoresIt) {
  WriteGate({"--watch-state", State().string()});
  ASSERT_FALSE(HasFatalFailure());
  Validate(kNode, 60);
  const std::string digest =
      Sha256Hex(testing::ReadFile(dir_ / "reports" / (std::string(kNode) + ".json")));
  RunResult r = Watch({"--revoke", "slurm", "--breaker-fraction", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(DrainedWith("trainlock: revoked gpu 0000:3b:00 Xid 79 (fallen off the bus) at "))
      << r.out << r.err << NodeField("State") << " " << NodeField("Reason");
  EXPECT_NE(NodeField("Reason").find(" report sha256:" + digest), std::string::npos)
      << NodeField("Reason");
  ResumeHealthChecks();  // the gate refuses the report that predates the event
  ASSERT_TRUE(WaitFor([&] { return DrainedWith("trainlock: revoked: the node reported"); }, 30))
      << NodeField("State") << " " << NodeField("Reason");
  const std::string job = Submit("revoked");
  std::this_thread::sleep_for(std::chrono::seconds(4));
  EXPECT_FALSE(Ran("revoked")) << JobState(job);
  Validate(kNode);  // a new signed pass, started after the event
  EXPECT_TRUE(WaitFor([&] { return !Drained(); }, 30)) << NodeField("Reason");
}

TEST_F(SlurmWatch, TheBreakerTripsWhenTheOnlyGpuNodeWouldBeRevoked) {
  Validate(kNode, 60);
  RunResult r = Watch({"--revoke", "slurm", "--breaker-fraction", "0.5"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("CIRCUIT BREAKER: not revoked through the scheduler: 0 of 1 GPU nodes"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(Drained()) << NodeField("Reason");
  EXPECT_TRUE(fs::exists(State() / (std::string(kNode) + ".record")));  // recorded all the same
}

// Slurm's HealthCheckProgram mode: `watch --once --health-check` drains a node whose record
// holds a revocation that no report postdates.
TEST_F(SlurmWatch, TheHealthCheckModeDrainsARevokedNode) {
  Validate(kNode, 60);
  ASSERT_EQ(Watch({"--revoke", "none"}).exit_code, 0);  // the record only
  EXPECT_FALSE(Drained());
  RunResult r = testing::RunProgram(
      "trainlock",
      {"watch", "--once", "--health-check", "--watch-state", State().string(), "--node", kNode,
       "--reports-dir", (dir_ / "reports").string(), "--breaker-fraction", "1"},
      {"SLURM_CONF=" + Conf()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(DrainedWith("trainlock: revoked gpu 0000:3b:00 Xid 79"))
      << r.out << NodeField("Reason");
}

// The node-problem-detector plugin: exit 0 ok, 1 problem, 2 unknown; the first line is the
// condition's message.
class NpdPlugin : public NodeGate {
 protected:
  void SetUp() override {
    if (!testing::HaveProgram("sh")) GTEST_SKIP() << "sh is not on PATH";
    MakeDirs();
    MakeProject();
    if (HasFatalFailure()) return;
    Generate((testing::BinDir() / "trainlock").string());
  }

  void Generate(const std::string& trainlock) {
    RunResult r = testing::RunTrainlock(
        {"fleet", "k8s", project_.string(), "--npd-plugin", "--key", (dir_ / "key.pub").string(),
         "--reports-dir", (dir_ / "reports").string(), "--node-lock", NodeLock().string(),
         "--trainlock", trainlock, "--out", (dir_ / "plugin.sh").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  RunResult Plugin() {
    return RunCommand({"sh", (dir_ / "plugin.sh").string()}, {"NODE_NAME=" + std::string(kNode)});
  }
};

TEST_F(NpdPlugin, AFreshSignedPassingReportOfThisNodeIsOk) {
  Validate(kNode);
  RunResult r = Plugin();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, "trainlock: pass\n");
}

TEST_F(NpdPlugin, NoReportIsAProblem) {
  RunResult r = Plugin();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(r.out.starts_with("trainlock: report: no report ")) << r.out;
}

TEST_F(NpdPlugin, AnExpiredReportIsAProblemNamingTheWindow) {
  Validate(kNode, 2 * 3600);
  RunResult r = Plugin();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(r.out.starts_with("trainlock: age: the report is 2h 0m old")) << r.out;
  EXPECT_NE(r.err.find("the lock's validate.valid-for 1h 0m"), std::string::npos) << r.err;
}

// NPD cuts a custom plugin's output at max_output_length, 80 by default: the message is one
// line that fits, the whole refusal is on stderr.
TEST_F(NpdPlugin, TheMessageIsOneLineThatFitsNpdsDefaultOutputLength) {
  Validate(kNode, 2 * 3600);  // the age refusal is over 100 characters
  RunResult r = Plugin();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  ASSERT_TRUE(r.out.ends_with("...\n")) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
  EXPECT_LE(r.out.size() - 1, 80u) << r.out;
  EXPECT_NE(r.err.find("trainlock: age: the report is 2h 0m old"), std::string::npos) << r.err;
  fs::remove(dir_ / "reports" / (std::string(kNode) + ".json"));
  r = Plugin();  // "no report <path>": the test's temporary path makes it long too
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_LE(r.out.size() - 1, 80u) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
}

TEST_F(NpdPlugin, PassesShellcheck) {
  if (!testing::HaveProgram("shellcheck")) GTEST_SKIP() << "shellcheck missing: ci/deps.sh";
  RunResult check =
      RunCommand({"shellcheck", "--norc", "--format=gcc", (dir_ / "plugin.sh").string()});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

TEST_F(NpdPlugin, AReportOfAnotherNodeIsAProblem) {
  Validate("gpu-002");
  RunResult r = Plugin();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(r.out.starts_with("trainlock: node: the report was made on 'gpu-002'")) << r.out;
}

TEST_F(NpdPlugin, AReportSignedWithAnotherKeyIsAProblem) {
  Validate(kNode);
  ASSERT_EQ(testing::RunTrainlock({"keygen", (dir_ / "other").string()}).exit_code, 0);
  fs::copy_file(dir_ / "other.pub", dir_ / "key.pub", fs::copy_options::overwrite_existing);
  RunResult r = Plugin();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(r.out.starts_with("trainlock: signature:")) << r.out;
}

TEST_F(NpdPlugin, AGateThatCannotDecideIsUnknownNotOk) {
  Validate(kNode);
  testing::WriteFile(dir_ / "broken", "#!/bin/sh\necho 'cannot read the lock' >&2\nexit 3\n");
  fs::permissions(dir_ / "broken", fs::perms::owner_all);
  Generate((dir_ / "broken").string());
  RunResult r = Plugin();
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "trainlock: gate: cannot read the lock\n");
}

}  // namespace
}  // namespace trainlock
