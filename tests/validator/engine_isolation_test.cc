// The engine is untrusted (docs/validate.md, "Isolation" and "The engine protocol"): a Python
// engine runs isolated from the caller's working directory, environment and site hooks, and
// what it says counts only when its hello is the lock's and its numbers and output are within
// the protocol's bounds. Each test plants one fault and asserts the verdict. Stand-in
// interpreters (--python) play hostile engines; the real ddp engine runs on Debian's torch.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "coordinator/engine_command.h"
#include "project/round_trip_engines.h"
#include "test_support.h"

namespace trainlock {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDebianPython = "/usr/bin/python3";

// examples/tiny under `dir` with its manifest naming the ddp engine, locked as `trainlock lock`
// locks it (the shipped engine's pin).
fs::path IsolationProject(const fs::path& dir) {
  const fs::path project = dir / "tiny";
  fs::create_directories(project);
  testing::CopyExample("tiny", project);
  std::string manifest = testing::ReadFile(project / "trainlock.toml");
  const std::string table = "[validate]\n";
  manifest.insert(manifest.find(table) + table.size(), "engine = \"ddp\"\n");
  testing::WriteFile(project / "trainlock.toml", manifest);
  const auto locked = testing::RunProgram("trainlock", {"lock", project.string(), "--offline"});
  EXPECT_EQ(locked.exit_code, 0) << locked.err;
  return project;
}

struct IsolatedRun {
  testing::RunResult run;
  nlohmann::json report;
  double seconds = 0;
};

// `trainlock validate` of the project under `dir`, started in `cwd` with `env` added.
IsolatedRun ValidateFrom(const fs::path& dir, const fs::path& cwd, const std::string& python,
                         const std::vector<std::string>& env,
                         const std::vector<std::string>& extra = {}) {
  const fs::path out = dir / "report.json";
  std::vector<std::string> argv = {"sh",
                                   "-c",
                                   "cd \"$1\" && shift && exec \"$@\"",
                                   "sh",
                                   cwd.string(),
                                   (testing::BinDir() / "trainlock").string(),
                                   "validate",
                                   IsolationProject(dir).string(),
                                   "--out",
                                   out.string(),
                                   "--threads",
                                   "2",
                                   "--python",
                                   python};
  argv.insert(argv.end(), extra.begin(), extra.end());
  std::vector<std::string> full_env = {"TMPDIR=" + dir.string()};
  full_env.insert(full_env.end(), env.begin(), env.end());
  const auto start = std::chrono::steady_clock::now();
  IsolatedRun r{testing::RunCommand(argv, full_env), nlohmann::json(), 0};
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (fs::exists(out)) r.report = nlohmann::json::parse(testing::ReadFile(out));
  return r;
}

const nlohmann::json& IsolatedCheck(const nlohmann::json& report, const std::string& id) {
  for (const auto& c : report["checks"])
    if (c["id"] == id) return c;
  static const nlohmann::json kNone = nlohmann::json::object();
  ADD_FAILURE() << "no check " << id << " in " << report.dump();
  return kNone;
}

// Python code that writes `marker`: what every planted hook runs when it is imported.
std::string WritesMarker(const fs::path& marker) {
  return "open(" + nlohmann::json(marker.string()).dump() + ", 'w').write('imported')\n";
}

std::string PythonLibDir() {
  testing::RunResult r = testing::RunCommand(
      {kDebianPython, "-c", "import sys; print('python%d.%d' % sys.version_info[:2])"});
  return r.out.substr(0, r.out.find('\n'));
}

// The planted hooks, each writing a marker of its own when imported: a shadow trainlock_engine
// and torch in the working directory and in a PYTHONPATH directory, a usercustomize and a .pth
// under PYTHONUSERBASE, and a .pth in the site-packages of a stand-in
// interpreter prefix (a venv of Debian's Python that includes its system site-packages).
struct Plants {
  fs::path cwd, python, markers;
  std::vector<std::string> env;
};

const char* const kHooks[] = {"cwd-trainlock_engine",
                              "cwd-trainlock_engine-main",
                              "cwd-torch",
                              "pythonpath-trainlock_engine",
                              "pythonpath-torch",
                              "usercustomize",
                              "user-pth",
                              "prefix-pth",
                              "path-uname",
                              "path-lscpu",
                              "path-ldconfig"};

Plants PlantHooks(const fs::path& d) {
  Plants p{d / "cwd", d / "prefix" / "bin" / "python3", d / "markers", {}};
  const std::string lib = PythonLibDir();
  fs::create_directories(p.markers);
  for (const std::string tag : {"cwd", "pythonpath"}) {
    for (const std::string package : {"trainlock_engine", "torch"}) {
      fs::create_directories(d / tag / package);
      testing::WriteFile(d / tag / package / "__init__.py",
                         WritesMarker(p.markers / (tag + "-" + package)));
      testing::WriteFile(d / tag / package / "__main__.py",
                         WritesMarker(p.markers / (tag + "-" + package + "-main")));
    }
  }
  const fs::path user_site = d / "userbase" / "lib" / lib / "site-packages";
  fs::create_directories(user_site);
  testing::WriteFile(user_site / "usercustomize.py", WritesMarker(p.markers / "usercustomize"));
  testing::WriteFile(user_site / "hook.pth", "import os; " + WritesMarker(p.markers / "user-pth"));
  const fs::path prefix = d / "prefix";
  const fs::path prefix_site = prefix / "lib" / lib / "site-packages";
  fs::create_directories(prefix / "bin");
  fs::create_directories(prefix_site);
  fs::create_symlink(kDebianPython, p.python);
  testing::WriteFile(prefix / "pyvenv.cfg",
                     "home = /usr/bin\ninclude-system-site-packages = true\n");
  testing::WriteFile(prefix_site / "hook.pth",
                     "import os; " + WritesMarker(p.markers / "prefix-pth"));
  // Programs a library might start by name (platform.processor() runs `uname -p`): found on
  // PATH first, each writes its marker. PATH is on the engine's allow-list.
  fs::create_directories(d / "pathbin");
  for (const std::string program : {"uname", "lscpu", "ldconfig"}) {
    testing::WriteFile(
        d / "pathbin" / program,
        "#!/bin/sh\necho run > " + (p.markers / ("path-" + program)).string() + "\n");
    fs::permissions(d / "pathbin" / program, fs::perms::owner_all);
  }
  p.env = {"PYTHONPATH=" + (d / "pythonpath").string(),
           "PYTHONUSERBASE=" + (d / "userbase").string(),
           "PATH=" + (d / "pathbin").string() + ":/usr/local/bin:/usr/bin:/bin"};
  return p;
}

bool Fired(const Plants& p, const std::string& hook) {
  return fs::exists(p.markers / hook);
}

// Every hook planted at once, the engine run through the stand-in prefix's interpreter from
// the planted working directory with the planted environment: the ddp engine still passes,
// from the pinned copy, and no hook ran.
TEST(EngineIsolation, NoPlantedHookIsImportedAndTheDdpEnginePassesFromThePinnedCopy) {
  testing::TempDir dir;
  const Plants p = PlantHooks(dir.path());
  const IsolatedRun r = ValidateFrom(dir.path(), p.cwd, p.python.string(), p.env);
  ASSERT_EQ(r.run.exit_code, 0) << r.run.out << r.run.err;
  EXPECT_EQ(IsolatedCheck(r.report, "train.roundtrip")["status"], "pass");
  EXPECT_EQ(IsolatedCheck(r.report, "train.roundtrip")["metrics"]["engine"], "ddp");
  for (const char* hook : kHooks) EXPECT_FALSE(Fired(p, hook)) << hook << " was imported";
}

// A Hub token in the caller's environment never reaches an engine (the engines train from
// verified local files), and whatever the engine imports is told the Hub is offline.
TEST(EngineIsolation, NoTokenIsHandedOnAndTheHubIsOffline) {
  for (const char* name : {"HF_TOKEN", "HF_TOKEN_PATH", "HUGGING_FACE_HUB_TOKEN"})
    EXPECT_FALSE(validate::EngineMayInherit(name)) << name;
  EXPECT_TRUE(validate::EngineMayInherit("HF_HOME"));
  ::setenv("HF_TOKEN", "hf_planted", 1);
  const std::map<std::string, std::string> env = validate::EngineEnvironment();
  ::unsetenv("HF_TOKEN");
  EXPECT_EQ(env.count("HF_TOKEN"), 0u);
  EXPECT_EQ(env.count("HF_HUB_OFFLINE") ? env.at("HF_HUB_OFFLINE") : "", "1");
}

// The control: the same hooks do fire for the same interpreter started as engines were before
// (`python -m trainlock_engine` in the working directory with the caller's environment).
TEST(EngineIsolation, TheSameHooksFireForAnInterpreterStartedUnisolated) {
  testing::TempDir dir;
  const Plants p = PlantHooks(dir.path());
  testing::RunCommand({"sh", "-c", "cd \"$1\" && exec \"$2\" -m trainlock_engine", "sh",
                       p.cwd.string(), p.python.string()},
                      p.env);
  for (const char* hook : {"cwd-trainlock_engine", "prefix-pth", "user-pth", "usercustomize"})
    EXPECT_TRUE(Fired(p, hook)) << hook;
  testing::RunCommand({"sh", "-c", "cd \"$1\" && exec \"$2\" -c 'import torch'", "sh",
                       (dir.path() / "markers").string(), p.python.string()},
                      p.env);
  EXPECT_TRUE(Fired(p, "pythonpath-torch"));
  testing::RunCommand({p.python.string(), "-I", "-c", "import platform; platform.processor()"},
                      p.env);
  EXPECT_TRUE(Fired(p, "path-uname"));
}

// ---- hostile engines: a stand-in interpreter that says what it likes ----

// A stand-in --python: a shell script that answers the engine probe (engine_probe.h) as a
// Python with Debian's torch would, and otherwise ignores its arguments and runs `body`.
fs::path StandIn(const fs::path& dir, const std::string& body) {
  const fs::path script = dir / "python3";
  testing::WriteFile(script,
                     "#!/bin/sh\ncase \"$*\" in *trainlock-engine-probe*) printf '%s\\n' "
                     "'trainlock-engine-probe {\"versions\": {\"torch\": \"1.13.0\"}, "
                     "\"cuda\": false}'; exit 0;; esac\n" +
                         body + "\n");
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

std::string SayLine(const std::string& line) {
  return "printf '%s\\n' '" + line + "'";
}

const char* const kGoodHello =
    R"({"event":"hello","protocol":"trainlock.engine/1","engine":"ddp","role":"train",)"
    R"("world_size":1,"device":"cpu","versions":{"torch":"1.13.0"}})";

IsolatedRun HostileRun(const std::string& body, const std::vector<std::string>& extra = {}) {
  testing::TempDir dir;
  return ValidateFrom(dir.path(), dir.path(), StandIn(dir.path(), body).string(), {}, extra);
}

// A transcript that would pass every check if its events counted, with `hello` in front.
std::string ReplayWith(const std::string& hello) {
  return SayLine(hello) + "\ncat " +
         (testing::SourceDir() / "tests/engines/transcripts/ddp-uninterrupted.jsonl").string() +
         " | grep -v '\"event\": *\"hello\"'";
}

void ExpectEngineRefused(const IsolatedRun& r, const std::string& why) {
  EXPECT_EQ(r.run.exit_code, 1) << r.run.out << r.run.err;
  const nlohmann::json& step = IsolatedCheck(r.report, "train.step");
  EXPECT_EQ(step["status"], "fail") << step.dump();
  EXPECT_NE(step["summary"].get<std::string>().find(why), std::string::npos) << step["summary"];
  EXPECT_NE(r.report.value("verdict", ""), "pass");
}

TEST(HostileEngine, AHelloNamingAnotherTorchThanTheLocksIsRefused) {
  std::string hello = kGoodHello;
  hello.replace(hello.find("1.13.0"), 6, "0.0.1+evil");
  ExpectEngineRefused(HostileRun(ReplayWith(hello)),
                      "names torch \"0.0.1+evil\", the lock pins 1.13.0");
}

TEST(HostileEngine, AHelloOfAnotherProtocolIsRefused) {
  std::string hello = kGoodHello;
  hello.replace(hello.find("engine/1"), 8, "engine/999");
  ExpectEngineRefused(HostileRun(ReplayWith(hello)), "trainlock.engine/999");
}

TEST(HostileEngine, AHelloNamingTheNativeEngineOnADdpLockIsRefused) {
  std::string hello = kGoodHello;
  hello.replace(hello.find("\"ddp\""), 5, "\"native\"");
  ExpectEngineRefused(HostileRun(ReplayWith(hello)), "names engine \"native\", the lock's is ddp");
}

TEST(HostileEngine, AHelloNamingAnotherWorldSizeIsRefused) {
  std::string hello = kGoodHello;
  hello.replace(hello.find("\"world_size\":1"), 14, "\"world_size\":8");
  ExpectEngineRefused(HostileRun(ReplayWith(hello)), "world size 8, this process runs 1");
}

TEST(HostileEngine, AnEngineThatSaysNothingAndExitsZeroIsRefused) {
  ExpectEngineRefused(HostileRun("exit 0"), "the engine never said hello");
}

TEST(HostileEngine, AnAbsurdThroughputIsRefusedNotPrinted) {
  const IsolatedRun r = HostileRun(
      ReplayWith(kGoodHello) + " | sed 's/\"tokens_per_s\": *[0-9.e+]*/\"tokens_per_s\": 1e300/'");
  ExpectEngineRefused(r, "tokens_per_s is 1e+300");
  EXPECT_EQ(r.run.out.find("-9223372036854775808"), std::string::npos) << r.run.out;
}

TEST(HostileEngine, ANegativeStepTimeIsRefused) {
  const IsolatedRun r = HostileRun(
      ReplayWith(kGoodHello) + " | sed 's/\"step_time_s\": *[0-9.e+-]*/\"step_time_s\": -1e308/'");
  ExpectEngineRefused(r, "step_time_s is -1e+308");
}

TEST(HostileEngine, HugeArtifactEventsAreRefusedAndTheReportStaysSmall) {
  const IsolatedRun r = HostileRun(
      SayLine(kGoodHello) +
      "\npath=$(head -c 524288 /dev/zero | tr '\\0' p)\n"
      "for i in $(seq 150); do printf '{\"event\":\"artifact\",\"path\":\"%s\",\"sha256\":\"00\","
      "\"bytes\":1}\\n' \"$path\"; done\n" +
      SayLine(R"({"event":"done"})"));
  ExpectEngineRefused(r, "an artifact event longer than 8192 bytes");
  EXPECT_LT(r.report.dump().size(), 1u << 20);
}

// Processes whose command line is `sleep SECONDS` (a daemon's pid inside a PID namespace is
// not the host's, so it is found by what it runs).
std::vector<pid_t> SleepersOf(const std::string& seconds) {
  std::vector<pid_t> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline == std::string("sleep\0", 6) + seconds + std::string(1, '\0'))
      pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

// A child that leaves the group with setsid and keeps the engine's stdout open ends with the
// run, and the coordinator does not wait for --timeout on it.
TEST(HostileEngine, ADaemonHoldingTheEnginesStdoutEndsWithItAndIsNotWaitedFor) {
  testing::TempDir dir;
  const std::string seconds = "299.4171";  // this test's daemons, and no other process
  const fs::path python =
      StandIn(dir.path(), "setsid sh -c 'exec sleep " + seconds + "' &\n" + ReplayWith(kGoodHello));
  const IsolatedRun r =
      ValidateFrom(dir.path(), dir.path(), python.string(), {}, {"--timeout", "120"});
  EXPECT_LT(r.seconds, 100.0) << "waited for --timeout";
  EXPECT_EQ(SleepersOf(seconds), std::vector<pid_t>{});
}

// The control: the stand-in does leave its daemon behind when run by itself.
TEST(HostileEngine, TheStandInsDaemonOutlivesItWhenRunAlone) {
  testing::TempDir dir;
  const std::string seconds = "299.4172";
  const fs::path python =
      StandIn(dir.path(), "setsid sh -c 'exec sleep " + seconds + "' &\nsleep 0.5");
  testing::RunCommand({"sh", "-c", python.string() + " >/dev/null 2>&1"});
  const std::vector<pid_t> daemons = SleepersOf(seconds);
  EXPECT_EQ(daemons.size(), 1u);
  for (pid_t pid : daemons) ::kill(pid, SIGKILL);
}

// stderr and stdout are capped: an engine that floods either fails its process, and the
// coordinator stops it instead of filling the disk.
TEST(HostileEngine, AnEngineFloodingStderrIsStoppedAtTheCap) {
  testing::TempDir dir;
  // Process a floods (ulimit -f bounds the damage to 600 MB should the cap ever fail); the
  // others stop at once.
  const fs::path python = StandIn(
      dir.path(),
      SayLine(kGoodHello) + "\ncase \"$*\" in *--measure-step*) ulimit -f 1200000; yes >&2;; esac");
  const IsolatedRun r = ValidateFrom(dir.path(), dir.path(), python.string(), {},
                                     {"--work-dir", (dir.path() / "work").string()});
  ExpectEngineRefused(r, "its stderr passed 256 MiB");
  uintmax_t largest = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path() / "work"))
    if (e.is_regular_file()) largest = std::max(largest, e.file_size());
  EXPECT_LT(largest, uintmax_t{1} << 30);
}

// The cap held only while stdout was read: an engine that closes its stdout, then floods stderr
// (here, after unlinking the file, which keeps filling the same inode) is stopped at it too.
TEST(HostileEngine, AnEngineFloodingAnUnlinkedStderrAfterClosingStdoutIsStoppedAtTheCap) {
  testing::TempDir dir;
  const fs::path python =
      StandIn(dir.path(), SayLine(kGoodHello) +
                              "\ncase \"$*\" in *--measure-step*) exec 1>&-; rm -f ./*.stderr; "
                              "ulimit -f 1200000; yes >&2;; esac");
  const IsolatedRun r = ValidateFrom(dir.path(), dir.path(), python.string(), {},
                                     {"--work-dir", (dir.path() / "work").string()});
  ExpectEngineRefused(r, "its stderr passed 256 MiB");
}

// An engine that passes the cap between two of the coordinator's looks and then ends by itself
// (here at once, with 0) is over the cap all the same.
TEST(HostileEngine, AnEngineThatPassesTheStderrCapAndEndsBeforeTheNextLookIsStillStopped) {
  testing::TempDir dir;
  const fs::path python = StandIn(dir.path(), SayLine(kGoodHello) +
                                                  "\ncase \"$*\" in *--measure-step*) exec 1>&-; "
                                                  "head -c 300000000 /dev/zero >&2; exit 0;; esac");
  const IsolatedRun r = ValidateFrom(dir.path(), dir.path(), python.string(), {},
                                     {"--work-dir", (dir.path() / "work").string()});
  ExpectEngineRefused(r, "its stderr passed 256 MiB");
}

// The engines run in the work directory: one that plants FIFOs where the next processes'
// stderr and event log go (an open of either would block forever) hangs nothing.
TEST(HostileEngine, FifosPlantedForTheNextProcessesFilesBlockNothing) {
  testing::TempDir dir;
  const fs::path python =
      StandIn(dir.path(), SayLine(kGoodHello) +
                              "\ncase \"$*\" in *--measure-step*) for p in b-preempted c-resumed "
                              "d-portable; do mkfifo \"$p.stderr\" \"$p.jsonl\"; done; "
                              "rm -f a-uninterrupted.stderr; mkfifo a-uninterrupted.stderr;; esac");
  const auto start = std::chrono::steady_clock::now();
  const IsolatedRun r = ValidateFrom(dir.path(), dir.path(), python.string(), {},
                                     {"--work-dir", (dir.path() / "work").string()});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(120));
  EXPECT_EQ(r.run.exit_code, 1) << r.run.out << r.run.err;  // the stand-in trains nothing
}

TEST(HostileEngine, AnEngineFloodingStdoutIsStoppedAtTheCap) {
  const IsolatedRun r = HostileRun(SayLine(kGoodHello) +
                                   "\ncase \"$*\" in *--measure-step*) "
                                   "exec yes \"$(head -c 4000 /dev/zero | tr '\\0' x)\";; esac");
  ExpectEngineRefused(r, "its output passed 256 MiB");
}

// A line without end: the reader stops at the line cap, names where the line began and stops
// the process, instead of dropping the rest uncounted until --timeout (900 s by default).
TEST(HostileEngine, AnEndlessLineWithoutANewlineStopsTheProcessAtTheLineCap) {
  const IsolatedRun r = HostileRun(
      SayLine(kGoodHello) +
          "\ncase \"$*\" in *--measure-step*) /usr/bin/yes x | /usr/bin/tr -d '\\n';; esac",
      {"--timeout", "120"});
  ExpectEngineRefused(r,
                      "broke the engine protocol: a line longer than 1048576 bytes at byte "
                      "offset " +
                          std::to_string(std::string(kGoodHello).size() + 1) + " of its stdout");
  EXPECT_LT(r.seconds, 100.0) << "waited for --timeout";
}

// Lines that are not events cost the reader as events do: 20 million "{}" lines once took a
// process 130 s and still passed. Past the line cap the process is stopped.
TEST(HostileEngine, AFloodOfLinesThatAreNotEventsIsStoppedAtTheLineCap) {
  const IsolatedRun r = HostileRun(
      SayLine(kGoodHello) + "\ncase \"$*\" in *--measure-step*) exec /usr/bin/yes '{}';; esac",
      {"--timeout", "120"});
  ExpectEngineRefused(r, "more than 200000 lines on its stdout");
  EXPECT_LT(r.seconds, 100.0) << "waited for --timeout";
}

// ---- the coordinator judges from files: a stand-in that replays a passing run ----

// A final state of one tensor, in safetensors: what the stand-in hands A and C alike, so that
// their states agree as a passing run's do.
void WriteTinyState(const fs::path& file) {
  std::string header = R"({"param/w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  testing::WriteFile(file, bytes + header + std::string(8, '\0'));
}

// Commits `dir` as step `step` with the Python engines' own code (commit.write_marker).
void CommitWithTheEnginesCode(const fs::path& dir, int step) {
  const testing::RunResult r = testing::RunCommand(
      {kDebianPython, "-B", "-c",
       "import sys; sys.path.insert(0, sys.argv[1]); from trainlock_engine import commit; "
       "commit.write_marker(sys.argv[2], int(sys.argv[3]))",
       (testing::SourceDir() / "validators/engines/python").string(), dir.string(),
       std::to_string(step)});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
}

// A step directory as the ddp engine commits it: its state, RNG and driver files, then
// trainlock-commit.json over them.
fs::path CommittedCheckpoint(const fs::path& dir) {
  fs::create_directories(dir);
  testing::WriteFile(dir / "state.pt", std::string(4096, 's'));
  testing::WriteFile(dir / "rng-rank0.pt", "rng");
  testing::WriteFile(dir / "driver.pt", "driver");
  CommitWithTheEnginesCode(dir, 3);
  return dir;
}

// A stand-in that replays the recorded events of a passing ddp round trip
// (tests/engines/transcripts) for every process, B (the uninterrupted reference too) and C their
// losses, measurement and a `state` event, B also the commit of step 3 and one steady-state
// save before it waits for its kill, D the restore of step 3 and its eval: every event a pass
// needs, and no training. Of the files a pass needs it writes what it is given: B and C the final
// state `state` (nothing when empty), B the step directory `checkpoint` (copied into the checkpoint
// root before it says `committed`; nothing when empty). Each gated process waits for its release,
// as the engine does.
std::string ReplayedRoundTrip(const fs::path& state, const fs::path& checkpoint,
                              const std::string& b_also = {}) {
  const std::string dir = (testing::SourceDir() / "tests/engines/transcripts").string();
  const std::string without_hello = " | grep -v '\"event\": *\"hello\"'";
  const std::string plant =
      checkpoint.empty() ? "" : "cp -R '" + checkpoint.string() + "' \"$root/step-00000003\"; ";
  const std::string write_state = state.empty() ? "" : "cp '" + state.string() + "' \"$final\"; ";
  return "root= ; final= ; gate= ; prev=\n"
         "for a in \"$@\"; do case \"$prev\" in --checkpoint-root) root=$a;; --final-state) "
         "final=$a;; --start-after) gate=$a;; esac; prev=$a; done\n"
         "if [ -n \"$gate\" ]; then while [ ! -e \"$gate\" ]; do sleep 0.05; done; fi\n" +
         SayLine(kGoodHello) + "\ncase \"$*\" in\n  *portable*) " +
         SayLine(R"({"event":"restored","step":3,"bytes":1468660,"seconds":0.1})") + "; " +
         SayLine(R"({"event":"eval","when":"portable","loss":5.4283881187438965})") + "; " +
         SayLine(R"({"event":"done"})") + ";;\n  *--restore*) " + write_state + "cat " + dir +
         "/ddp-resumed.jsonl" + without_hello + ";;\n  *--save-at*) " + write_state + "cat " + dir +
         "/ddp-uninterrupted.jsonl" + without_hello + " | grep -v '\"event\": *\"done\"'; " +
         SayLine(R"({"event":"eval","when":"after_save","loss":5.4283881187438965})") + "; " +
         plant + b_also +
         "printf '{\"event\":\"checkpoint\",\"phase\":\"committed\",\"step\":3,\"dir\":\"%s\","
         "\"bytes\":1468660,\"seconds\":0.1}\\n' \"$root/step-00000003\"; " +
         SayLine(R"({"event":"checkpoint","phase":"steady","step":9,"ordinal":2,"stall_s":0.1})") +
         "; exec sleep 60;;\n"
         "  *) " +
         write_state + "cat " + dir + "/ddp-uninterrupted.jsonl" + without_hello + ";;\nesac";
}

// A validation with the stand-in: B writes a committed step directory that `plant` (when
// given) then damages, or none; B and C write the same final state, or none.
struct CheckpointRun {
  IsolatedRun run;
  fs::path step_dir;  // where B's checkpoint had to be: CHECKPOINT_ROOT/step-00000003
  const nlohmann::json& check(const std::string& id) const { return IsolatedCheck(run.report, id); }
  std::string summary(const std::string& id) const { return check(id)["summary"]; }
};

CheckpointRun RunWithCheckpoint(const std::function<void(const fs::path&)>& plant,
                                bool write_checkpoint = true, bool write_states = true,
                                const std::string& b_also = {},
                                const std::vector<std::string>& extra = {}) {
  testing::TempDir dir;
  fs::path state;
  if (write_states) {
    state = dir.path() / "state.safetensors";
    WriteTinyState(state);
  }
  fs::path checkpoint;
  if (write_checkpoint) {
    checkpoint = CommittedCheckpoint(dir.path() / "template");
    if (plant) plant(checkpoint);
  }
  CheckpointRun r;
  r.run = ValidateFrom(dir.path(), dir.path(),
                       StandIn(dir.path(), ReplayedRoundTrip(state, checkpoint, b_also)).string(),
                       {}, extra);
  r.step_dir = fs::path(r.run.report["checkpoint_dir"].value("path", "")) / "step-00000003";
  return r;
}

// The round trip fails naming `what`, and nothing restored the checkpoint: C and D never
// started, and train.eval and ckpt.portable do not pass.
void ExpectNotRestored(const CheckpointRun& r, const std::string& what) {
  EXPECT_EQ(r.run.run.exit_code, 1) << r.run.run.out << r.run.run.err;
  const nlohmann::json& roundtrip = r.check("train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "fail") << roundtrip.dump();
  EXPECT_NE(r.summary("train.roundtrip").find(what), std::string::npos)
      << r.summary("train.roundtrip");
  EXPECT_NE(r.summary("train.roundtrip")
                .find("the resumed and portable processes were not "
                      "started"),
            std::string::npos);
  EXPECT_EQ(roundtrip["metrics"]["checkpoint_verified"]["verified_by"], "coordinator");
  EXPECT_FALSE(roundtrip["metrics"]["processes"].contains("c-resumed")) << roundtrip.dump();
  EXPECT_FALSE(roundtrip["metrics"]["processes"].contains("d-portable"));
  EXPECT_EQ(r.check("ckpt.portable")["status"], "fail") << r.check("ckpt.portable").dump();
  EXPECT_EQ(r.check("train.eval")["status"], "fail") << r.check("train.eval").dump();
  EXPECT_NE(r.run.report.value("verdict", ""), "pass");
}

// The control: the stand-in's files are all a pass needs, and the metrics are what the
// coordinator read, not what the stand-in said (it says 1468660 bytes).
TEST(HostileEngine, AStandInThatWritesItsCheckpointAndStatesPassesTheRoundTripOnTheFilesAlone) {
  const CheckpointRun r = RunWithCheckpoint(nullptr);
  const nlohmann::json& roundtrip = r.check("train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "pass") << roundtrip.dump();
  const nlohmann::json& verified = roundtrip["metrics"]["checkpoint_verified"];
  EXPECT_EQ(verified["step_dir"], r.step_dir.string());
  EXPECT_EQ(verified["commit_record"], "trainlock-commit.json");
  EXPECT_EQ(verified["files_verified"], 3);
  EXPECT_EQ(verified["bytes_verified"], 4096 + 3 + 6);
  EXPECT_EQ(roundtrip["metrics"]["checkpoint_bytes"], 4096 + 3 + 6);
  const nlohmann::json& portable = r.check("ckpt.portable");
  EXPECT_EQ(portable["status"], "pass") << portable.dump();
  EXPECT_EQ(portable["metrics"]["checkpoint"], verified);
  EXPECT_NE(
      r.summary("ckpt.portable").find("the coordinator hashed the checkpoint before any restore"),
      std::string::npos)
      << r.summary("ckpt.portable");
  EXPECT_EQ(r.summary("ckpt.portable").find("manifest alone"), std::string::npos);
}

TEST(HostileEngine, AStandInThatReplaysAPassingRunWithoutWritingItsStateFailsTheRoundTrip) {
  const CheckpointRun r = RunWithCheckpoint(nullptr, true, /*write_states=*/false);
  EXPECT_EQ(r.run.run.exit_code, 1) << r.run.run.out << r.run.run.err;
  const nlohmann::json& roundtrip = r.check("train.roundtrip");
  EXPECT_EQ(roundtrip["status"], "fail") << roundtrip.dump();
  EXPECT_NE(r.summary("train.roundtrip").find("b-preempted's final state: "), std::string::npos)
      << r.summary("train.roundtrip");
  EXPECT_NE(r.summary("train.roundtrip").find("never from digests they print"), std::string::npos);
  // Everything else the stand-in said agrees with a pass: only the missing files fail it.
  EXPECT_EQ(roundtrip["metrics"]["losses_uninterrupted"], roundtrip["metrics"]["losses_resumed"]);
  EXPECT_EQ(r.check("train.eval")["status"], "pass");
  EXPECT_NE(r.run.report.value("verdict", ""), "pass");
}

TEST(HostileEngine, AnEngineThatAnnouncesACheckpointButWritesNoneFailsTheRoundTripNamingIt) {
  const CheckpointRun r = RunWithCheckpoint(nullptr, /*write_checkpoint=*/false);
  ExpectNotRestored(r, r.step_dir.string() + ": missing: no such directory");
  EXPECT_FALSE(
      r.check("train.roundtrip")["metrics"]["checkpoint_verified"].contains("files_verified"));
}

TEST(HostileEngine, ACheckpointFileChangedAfterItsCommitFailsTheRoundTripNamingIt) {
  const CheckpointRun r = RunWithCheckpoint([](const fs::path& committed) {
    testing::WriteFile(committed / "state.pt", std::string(4095, 's') + "x");
  });
  ExpectNotRestored(r, r.step_dir.string() + "/state.pt: block sha256 ");
}

TEST(HostileEngine, ACheckpointFileItsCommitMarkerDoesNotListFailsTheRoundTrip) {
  const CheckpointRun r = RunWithCheckpoint([](const fs::path& committed) {
    testing::WriteFile(committed / "optimizer.pt", "written after the commit");
  });
  ExpectNotRestored(r, r.step_dir.string() + "/optimizer.pt: not in trainlock-commit.json");
}

TEST(HostileEngine, ACheckpointWithoutItsCommitMarkerFailsTheRoundTrip) {
  const CheckpointRun r = RunWithCheckpoint(
      [](const fs::path& committed) { fs::remove(committed / "trainlock-commit.json"); });
  ExpectNotRestored(r, r.step_dir.string() + "/trainlock-commit.json: missing");
}

// `--negative-control corrupt` flipped a byte of the largest file under the newest `step-*`
// entry of the checkpoint root, wherever a link there pointed: an engine that planted
// `step-99999999` as a link made the coordinator write into any file it can write. The control
// damages the step directory it verified, reached without following a link.
TEST(HostileEngine, ALinkPlantedAsTheNewestCheckpointIsNeverWrittenThroughByTheCorruptControl) {
  testing::TempDir victim;
  const std::string precious(8192, 'v');
  testing::WriteFile(victim.path() / "precious.bin", precious);
  const CheckpointRun r = RunWithCheckpoint(
      nullptr, true, true, "ln -s '" + victim.path().string() + "' \"$root/step-99999999\"; ",
      {"--negative-control", "corrupt"});
  EXPECT_EQ(r.run.run.exit_code, 1) << r.run.run.out << r.run.run.err;
  EXPECT_TRUE(testing::ReadFile(victim.path() / "precious.bin") == precious)
      << "the file the planted link points to was written";
}

// ---- the validator as process 1 of its container ----

// `unshare` arguments that start a program as process 1 of a new PID namespace, as a
// container's entrypoint is (privileged, else in a user namespace); empty where neither works.
std::vector<std::string> ProcessOneLauncher() {
  for (std::vector<std::string> launcher :
       {std::vector<std::string>{"unshare", "--pid", "--fork"},
        std::vector<std::string>{"unshare", "--user", "--map-root-user", "--pid", "--fork"}}) {
    std::vector<std::string> probe = launcher;
    probe.push_back("true");
    if (testing::RunCommand(probe).exit_code == 0) return launcher;
  }
  return {};
}

// The host's pid of a process that is process 1 of its PID namespace and whose command line
// holds `marker`; 0 when there is none.
pid_t ProcessOneWith(const std::string& marker) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline_in(e.path() / "cmdline");
    const std::string cmdline((std::istreambuf_iterator<char>(cmdline_in)),
                              std::istreambuf_iterator<char>());
    if (cmdline.find(marker) == std::string::npos) continue;
    std::ifstream status(e.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("NSpid:", 0) != 0) continue;
      std::istringstream ids(line.substr(6));
      std::vector<std::string> pids{std::istream_iterator<std::string>(ids), {}};
      if (pids.size() >= 2 && pids.back() == "1") return static_cast<pid_t>(std::stol(name));
    }
  }
  return 0;
}

// Polls for up to a minute until `ready` holds.
bool WaitUntil(const std::function<bool()>& ready) {
  for (int i = 0; i < 1200; ++i) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The kernel drops every signal but SIGKILL to a namespace's process 1 without a handler:
// `docker stop`, a pod's deletion and scancel would wait out their grace period. The validator
// stops at once, with 128 + 15, writes no report, and leaves no engine behind.
TEST(ProcessOne, AValidatorThatIsProcessOneOfItsContainerStopsAtSigterm) {
  const std::vector<std::string> launcher = ProcessOneLauncher();
  if (launcher.empty()) GTEST_SKIP() << "no PID namespace can be made here";
  testing::TempDir dir;
  const std::string seconds = "299.4181";  // this test's engine, and no other process
  const fs::path python = StandIn(dir.path(), SayLine(kGoodHello) + "\nexec sleep " + seconds);
  const fs::path out = dir.path() / "report.json";
  std::vector<std::string> argv = launcher;
  argv.insert(argv.end(), {(testing::BinDir() / "trainlock").string(), "validate",
                           IsolationProject(dir.path()).string(), "--out", out.string(),
                           "--threads", "2", "--python", python.string(), "--timeout", "120"});
  auto run = std::async(std::launch::async, [&] {
    return testing::RunCommand(argv, {"TMPDIR=" + dir.path().string()});
  });
  pid_t validator = 0;
  const bool engine_started = WaitUntil([&] {
    validator = ProcessOneWith(out.string());
    return validator != 0 && !SleepersOf(seconds).empty();
  });
  ASSERT_TRUE(engine_started) << run.get().err;
  ::kill(validator, SIGTERM);
  const bool stopped = run.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  if (!stopped) ::kill(validator, SIGKILL);  // so that a failing run ends the test too
  const testing::RunResult r = run.get();
  EXPECT_TRUE(stopped) << "still running 20 s after SIGTERM";
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_NE(r.err.find("trainlock-validate: stopped by SIGTERM (process 1 of its container)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(WaitUntil([&] { return SleepersOf(seconds).empty(); }));
}

// The control: a process 1 without a handler (sleep) outlives the same SIGTERM.
TEST(ProcessOne, AProcessOneWithoutAHandlerOutlivesSigterm) {
  const std::vector<std::string> launcher = ProcessOneLauncher();
  if (launcher.empty()) GTEST_SKIP() << "no PID namespace can be made here";
  const std::string seconds = "299.4182";
  std::vector<std::string> argv = launcher;
  argv.insert(argv.end(), {"sleep", seconds});
  auto run = std::async(std::launch::async, [&] { return testing::RunCommand(argv); });
  pid_t sleeper = 0;
  ASSERT_TRUE(WaitUntil([&] { return (sleeper = ProcessOneWith(seconds)) != 0; }));
  ::kill(sleeper, SIGTERM);
  EXPECT_FALSE(testing::ProcessIsGone(sleeper));  // still there five seconds later
  ::kill(sleeper, SIGKILL);
  run.get();
}

// A module whose __pycache__ holds bytecode of other code under a header that matches the
// module's source (same mtime and size), as an attacker with write access to the image's
// trees would plant it: returns the directory holding mod.py.
fs::path PlantMatchingBytecode(const fs::path& dir) {
  const std::string script = R"PY(
import importlib.util, os, py_compile, sys
d = sys.argv[1]
os.makedirs(d + "/planted")
open(d + "/mod.py", "w").write("print('source')\n")
open(d + "/planted/mod.py", "w").write("print('PLANT!')\n")
st = os.stat(d + "/planted/mod.py")
py_compile.compile(d + "/planted/mod.py", cfile=importlib.util.cache_from_source(d + "/mod.py"),
                   invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
os.utime(d + "/mod.py", ns=(st.st_atime_ns, st.st_mtime_ns))
)PY";
  const auto made = testing::RunCommand({kDebianPython, "-c", script, dir.string()});
  EXPECT_EQ(made.exit_code, 0) << made.err;
  return dir;
}

std::vector<std::string> ImportMod(const fs::path& dir, const std::vector<std::string>& options) {
  std::vector<std::string> argv = {kDebianPython};
  argv.insert(argv.end(), options.begin(), options.end());
  for (const std::string& a :
       {std::string("-c"), "import sys; sys.path.insert(0, '" + dir.string() + "'); import mod"})
    argv.push_back(a);
  return argv;
}

TEST(EngineIsolation, PlantedBytecodeInAPycacheOfTheTreeIsNeverReadByTheEnginesInterpreter) {
  if (!fs::exists(kDebianPython)) GTEST_SKIP() << "no " << kDebianPython;
  testing::TempDir tmp;
  const fs::path dir = PlantMatchingBytecode(tmp.path() / "tree");
  const auto isolated = testing::RunCommand(
      ImportMod(dir, validate::IsolatedPythonOptions(tmp.path() / "work" / "pycache")));
  EXPECT_EQ(isolated.out, "source\n") << isolated.err;
}

TEST(EngineIsolation, ThePlantedBytecodeRunsForAnInterpreterWithoutThePrefix) {
  if (!fs::exists(kDebianPython)) GTEST_SKIP() << "no " << kDebianPython;
  testing::TempDir tmp;
  const fs::path dir = PlantMatchingBytecode(tmp.path() / "tree");
  const auto plain = testing::RunCommand(ImportMod(dir, {"-I", "-S", "-B"}));
  EXPECT_EQ(plain.out, "PLANT!\n") << plain.err;  // the control: the planted code ran
}

}  // namespace
}  // namespace trainlock
