// Running in an image; see image_run.h.
#include "image/image_run.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <random>

#include "base/diagnostic.h"
#include "base/failure.h"
#include "base/refs.h"
#include "base/stop_signals.h"
#include "base/subprocess.h"
#include "base/terminal_text.h"
#include "image/container_tool.h"
#include "image/in_image_paths.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

std::string Trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  return text;
}

// An engine command other than the run itself: a pull (kTransfer) or a query, within its limit.
ProcessRun Engine(const std::string& engine, const ImageRunOptions& o,
                  const std::vector<std::string>& args) {
  SpawnOptions spawn;
  spawn.argv = ContainerToolCommand(engine, o.storage);
  spawn.argv.insert(spawn.argv.end(), args.begin(), args.end());
  spawn.null_stdin = true;
  spawn.tail_lines = 40;
  const ContainerToolCall call =
      args.front() == "pull" ? ContainerToolCall::kTransfer : ContainerToolCall::kQuery;
  return RunContainerTool(spawn, call, engine + " " + args.front());
}

// `engine rm -f NAME`, best effort: the run is already being reported as stopped or failed.
void RemoveContainer(const std::string& engine, const ImageRunOptions& o, const std::string& name) {
  try {
    const ProcessRun r = Engine(engine, o, {"rm", "-f", name});
    if (!r.started || r.exit_code != 0)
      std::cerr << "trainlock: warning: `" << engine << " rm -f " << name
                << "` failed; the container may still be running\n";
  } catch (const Failure& e) {
    std::cerr << "trainlock: warning: " << TerminalText(e.what()) << "; container " << name
              << " may still be running\n";
  }
}

// Hex digits from the system's random source: a container name no other run has.
std::string RandomHex(size_t bytes) {
  std::random_device random;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    const unsigned v = random() & 0xffu;
    out += kHex[v >> 4];
    out += kHex[v & 15u];
  }
  return out;
}

std::string MustRun(const std::string& engine, const ImageRunOptions& o,
                    const std::vector<std::string>& args, const std::string& what) {
  ProcessRun r = Engine(engine, o, args);
  if (r.exit_code != 0) {
    throw Failure(what + " failed (" + engine + " exit " + std::to_string(r.exit_code) +
                      "): " + Trimmed(r.output),
                  kExitEnvironment);
  }
  return Trimmed(r.output);
}

// The engine's template for the image's manifest digest and its trainlock target label.
std::vector<std::string> InspectArgs(const std::string& engine, const std::string& ref) {
  const std::string label = "{{index .Labels \"io.trainlock.target\"}}";
  if (engine == "buildah") {
    return {"inspect",
            "--type",
            "image",
            "--format",
            "{{.FromImageDigest}} {{index .OCIv1.Config.Labels \"io.trainlock.target\"}}",
            ref};
  }
  if (engine == "podman") return {"image", "inspect", "--format", "{{.Digest}} " + label, ref};
  return {"image", "inspect", "--format",
          "{{range .RepoDigests}}{{println .}}{{end}}{{index .Config.Labels "
          "\"io.trainlock.target\"}}",
          ref};
}

EngineImage Inspect(const std::string& engine, const ImageRunOptions& o, const std::string& ref) {
  const std::string out = MustRun(engine, o, InspectArgs(engine, ref), "inspecting " + ref);
  EngineImage image;
  image.engine = engine;
  image.ref = ref;
  if (engine == "docker") {
    // One RepoDigest (name@sha256:...) per line, then the label; docker knows a digest only
    // for an image pulled or pushed.
    const size_t at = out.find("@sha256:");
    if (at != std::string::npos) image.digest = out.substr(at + 1, 71);
    const size_t last = out.rfind('\n');
    const std::string label = last == std::string::npos ? out : out.substr(last + 1);
    if (label.find('@') == std::string::npos) image.target = Trimmed(label);
  } else {
    const size_t space = out.find(' ');
    image.digest = out.substr(0, space);
    if (space != std::string::npos) image.target = Trimmed(out.substr(space + 1));
  }
  if (image.target == "<no value>") image.target.clear();
  if (!DigestProblem(image.digest).empty()) {
    throw Failure(engine + " has no manifest digest for " + ref +
                      " (an image built here and never pushed has none): push it and validate "
                      "the pushed reference",
                  kExitEnvironment);
  }
  return image;
}

bool HaveCdiNvidia() {
  for (const char* dir : {"/etc/cdi", "/var/run/cdi"}) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().filename().string().find("nvidia") != std::string::npos) return true;
    }
  }
  return false;
}

}  // namespace

EngineImage ResolveEngineImage(const std::string& ref, const ImageRunOptions& o) {
  const std::string engine = PickContainerTool(o.engine, ContainerToolUse::kRun);
  ProcessRun have = Engine(engine, o, InspectArgs(engine, ref));
  if (have.exit_code != 0) {
    std::vector<std::string> pull = {"pull"};
    if (engine != "docker" && PlainHttpRegistry(ref, o.tls_verify))
      pull.push_back("--tls-verify=false");
    pull.push_back(ref);
    MustRun(engine, o, pull, "pulling " + ref);
  }
  EngineImage image = Inspect(engine, o, ref);
  std::string error;
  std::optional<ImageRef> parsed = ParseImageRef(ref, &error);
  if (parsed && parsed->pinned() && parsed->digest != image.digest) {
    throw Failure(engine + " resolved " + ref + " to " + image.digest + ", not the digest it pins",
                  kExitVerdict);
  }
  return image;
}

std::vector<std::string> GpuPassthrough(const std::string& engine, const std::string& target) {
  std::error_code ec;
  if (target == "cuda" && fs::exists("/dev/nvidiactl", ec)) {
    if (engine != "docker" && HaveCdiNvidia()) return {"--device", "nvidia.com/gpu=all"};
    if (engine != "buildah") return {"--gpus", "all"};
    return {};  // buildah passes NVIDIA GPUs only through CDI
  }
  if (target == "rocm" && fs::exists("/dev/kfd", ec)) {
    std::vector<std::string> out = {"--device", "/dev/kfd", "--device", "/dev/dri"};
    if (engine != "buildah") out.insert(out.end(), {"--group-add", "video"});
    return out;
  }
  return {};
}

void CheckMountableHostPath(const fs::path& host, const std::string& what) {
  const std::string text = host.string();
  const size_t at = text.find_first_of(":,");
  if (at == std::string::npos) return;
  throw InputError(Diagnostic{
      text,
      {},
      what + " holds '" + text[at] +
          "', which a container engine's mount cannot carry (--volume splits at ':', --mount "
          "at ',')",
      "move the project to a path without ':' or ',', or give it through a symbolic link "
      "whose path has neither"});
}

int RunInImage(const EngineImage& image, const ImageRunOptions& o, const std::vector<Mount>& mounts,
               const std::map<std::string, std::string>& env, const std::vector<std::string>& argv,
               const std::filesystem::path& stdout_file) {
  for (const Mount& m : mounts)
    CheckMountableHostPath(m.host, "a directory mounted into " + image.ref);
  std::vector<std::string> options;
  for (const Mount& m : mounts) {
    options.push_back("--volume");
    options.push_back(m.host.string() + ":" + m.container + (m.read_only ? ":ro" : ""));
  }
  for (const auto& [name, value] : env)
    options.insert(options.end(), {"--env", name + "=" + value});
  const std::vector<std::string> gpus = GpuPassthrough(image.engine, image.target);
  options.insert(options.end(), gpus.begin(), gpus.end());
  std::string container;  // buildah's working container
  std::string name;       // podman's and docker's container, by the name given to `run`
  std::vector<std::string> run;
  if (image.engine == "buildah") {
    container = MustRun("buildah", o,
                        {"from", "--pull-never", "--name",
                         "trainlock-validate-" + std::to_string(::getpid()), image.ref},
                        "starting a container of " + image.ref);
    run = {"run", "--isolation", "chroot"};
    run.insert(run.end(), options.begin(), options.end());
    run.push_back(container);
    run.push_back("--");
  } else {
    name = "trainlock-validate-" + std::to_string(::getpid()) + "-" + RandomHex(6);
    run = {"run", "--rm", "--name", name, "--entrypoint", argv.front()};
    run.insert(run.end(), options.begin(), options.end());
    run.push_back(image.ref);
  }
  run.insert(run.end(), image.engine == "buildah" ? argv.begin() : argv.begin() + 1, argv.end());
  SpawnOptions spawn;
  spawn.argv = ContainerToolCommand(image.engine, o.storage);
  spawn.argv.insert(spawn.argv.end(), run.begin(), run.end());
  spawn.out = stdout_file.empty() ? Stream::kInherit : Stream::kFile;
  spawn.out_file = stdout_file;
  spawn.err = Stream::kInherit;
  spawn.null_stdin = true;
  ProcessRun r;
  try {
    r = RunContainerTool(spawn, ContainerToolCall::kRun, "the run in " + image.ref);
  } catch (const Failure&) {
    if (!container.empty()) Engine("buildah", o, {"rm", container});
    // Stopping the `run` client leaves the container running under conmon or the daemon,
    // holding the GPUs and the caller's stderr: it is removed by name.
    if (!name.empty()) RemoveContainer(image.engine, o, name);
    throw;
  }
  if (!container.empty()) Engine("buildah", o, {"rm", container});
  // A Ctrl-C or SIGTERM passed on to the run: now that it has ended, this process ends by it.
  EndByStopSignal(r.stop_signal);
  if (!r.started) throw Failure(image.engine + ": " + r.start_error, kExitEnvironment);
  return r.exit_code;
}

std::string WithHostReportPaths(std::string text, const std::filesystem::path& host_report) {
  const std::string in_container = std::string(kReportMountInContainer) + "/report";
  const std::string host_stem =
      (host_report.parent_path() / host_report.stem()).string();  // beside it: stem.rank-N.json
  for (size_t at = 0; (at = text.find(in_container, at)) != std::string::npos;) {
    const bool merged = text.compare(at + in_container.size(), 5, ".json") == 0;
    const std::string host = merged ? host_report.string() : host_stem;
    text.replace(at, in_container.size() + (merged ? 5 : 0), host);
    at += host.size();
  }
  return text;
}

}  // namespace trainlock
