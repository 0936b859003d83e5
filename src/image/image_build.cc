// Building, verifying and pushing images; see image_build.h.
#include "image/image_build.h"

#include <cctype>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/refs.h"
#include "base/sha256.h"
#include "base/subprocess.h"
#include "base/terminal_text.h"
#include "base/toml_document.h"
#include "base/tree_hash.h"
#include "image/container_tool.h"
#include "image/image_diff.h"
#include "image/rebuild_sources.h"
#include "lock/lock_check.h"
#include "lock/lock_resolver.h"
#include "project/artifact_paths.h"
#include "project/lockfile_loader.h"
#include "project/project.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

std::string TailLines(std::string text, int lines) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  size_t pos = text.size();
  // Stops at the first line: rfind from npos would start again at the end.
  while (lines-- > 0 && pos != std::string::npos && pos > 0) pos = text.rfind('\n', pos - 1);
  return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

// What is kept of an engine's output: enough for the last lines of a failure and for the
// digest that `docker push` prints at its end.
constexpr size_t kEngineTailLines = 100;

// An argument as a shell would need it quoted, for a command line the user can run again.
std::string ShellWord(const std::string& arg) {
  if (!arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                            "0123456789-_./:=@,+%") == std::string::npos)
    return arg;
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Runs an engine command; a failure names it with the engine's last lines, or under -v
// (`verbose`) with its whole command line and all the output kept.
std::string Run(const std::vector<std::string>& argv, const std::string& what, bool verbose,
                ContainerToolCall call = ContainerToolCall::kQuery) {
  SpawnOptions options;
  options.argv = argv;
  options.null_stdin = true;
  options.tail_lines = kEngineTailLines;
  const ProcessRun r = RunContainerTool(options, call, what);
  if (r.exit_code != 0) {
    std::string command;
    for (const std::string& arg : argv) command += (command.empty() ? "" : " ") + ShellWord(arg);
    throw Failure(what + " failed (" + argv[0] + " exit " + std::to_string(r.exit_code) + "): " +
                      (verbose ? "\n$ " + command + "\n" + TailLines(r.output, kEngineTailLines)
                               : TailLines(r.output, 12)),
                  kExitEnvironment);
  }
  return r.output;
}

// trainlock's sources, for a Containerfile that compiles the validator.
void StageSources(const fs::path& source_dir, const fs::path& context) {
  if (source_dir.empty() || !fs::exists(source_dir / "CMakeLists.txt")) {
    throw Failure(
        "the generated Containerfile compiles trainlock: --source-dir must name "
        "trainlock's source tree",
        kExitBadInput);
  }
  fs::create_directories(context / "trainlock-src");
  for (const char* part : {"CMakeLists.txt", "CMakePresets.json", "cmake", "src", "validators",
                           "lockfiles", "images"}) {
    if (fs::exists(source_dir / part)) {
      fs::copy(source_dir / part, context / "trainlock-src" / part,
               fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    }
  }
}

// The cpu image's validator binary, which must be the one image.json records.
void StageValidator(const ImageBuildOptions& o, const std::string& record,
                    const fs::path& context) {
  const fs::path validator =
      o.image.validator.empty() ? DefaultValidatorBinary() : o.image.validator;
  fs::copy_file(validator, context / "trainlock-validate");
  const std::string want = nlohmann::json::parse(record).value("validator_sha256", "");
  const std::string have = Sha256FileHex(context / "trainlock-validate");
  if (have != want) {
    throw Failure(validator.string() + " changed while the build context was staged (sha256 " +
                      have + ", generated for " + want + ")",
                  kExitVerdict);
  }
}

// The custom ops' pinned sources or libraries under custom-ops/<index>/, each checked against
// the lock: an image is built from what the lock pins or not at all.
void StageCustomOps(const fs::path& project_dir, const Project& project, const fs::path& context) {
  const std::vector<CustomOpLibrary>& libs = project.lock->custom_ops;
  for (size_t i = 0; i < libs.size(); ++i) {
    const CustomOpLibrary& lib = libs[i];
    const fs::path dir = context / "custom-ops" / std::to_string(i);
    const std::string what = project.lock_path + ": custom-ops[" + std::to_string(i) + "] ";
    std::string have, want;
    if (!lib.source.empty()) {
      if (!fs::is_directory(project_dir / lib.source))
        throw Failure(what + "sources " + lib.source + ": no such directory", kExitBadInput);
      fs::create_directories(dir.parent_path());
      fs::copy(project_dir / lib.source, dir,
               fs::copy_options::recursive | fs::copy_options::copy_symlinks);
      have = TreeSha256(dir);
      want = lib.source_sha256;
    } else if (!lib.sha256.empty()) {
      const fs::path named = project_dir / lib.library;
      fs::path real;
      try {  // a prebuilt library must be inside the project: never another file's bytes
        real = ResolveWithinProject(project_dir, named, "a prebuilt custom-op library");
      } catch (const ArtifactPathError& e) {
        throw Failure(what + e.what(), kExitBadInput);
      }
      if (!fs::is_regular_file(real))
        throw Failure(what + "library " + lib.library + ": no such file", kExitBadInput);
      const fs::path copy = dir / named.filename();
      fs::create_directories(dir);
      fs::copy_file(real, copy);
      have = Sha256FileHex(copy);
      want = lib.sha256;
    } else {
      continue;  // GenerateImage already refused it
    }
    if (have != want) {
      throw Failure(what + (lib.source.empty() ? lib.library : lib.source) +
                        " changed since the lock was made (sha256 " + have + ", the lock pins " +
                        want + "); run `trainlock lock`",
                    kExitVerdict);
    }
  }
}

// Copies what the Containerfile needs into a fresh context directory.
fs::path StageContext(const fs::path& project_dir, const Project& project,
                      const ImageBuildOptions& o) {
  const fs::path context = project_dir / ".trainlock" / ("build-" + o.image.target);
  IgnoreTrainlockDir(context);
  fs::remove_all(context);
  fs::create_directories(context);
  if (o.containerfile.empty()) {
    // The name it is pushed as varies between builds of one lock: it never enters the image.
    ImageOptions image = o.image;
    image.image_ref.clear();
    const auto files = GenerateImage(project, image);
    for (const auto& [name, text] : files) {
      fs::create_directories((context / name).parent_path());  // engine/trainlock_engine/
      WriteFileAtomically(context / name, text);
    }
    if (o.image.target == "cpu" && !o.image.build_validator) {
      StageValidator(o, files.at("image.json"), context);
    } else {
      StageSources(o.source_dir, context);
    }
    StageCustomOps(project_dir, project, context);
  } else {
    fs::copy_file(o.containerfile, context / "Containerfile");
  }
  const fs::path lock = project_dir / kLockFile;
  WriteFileAtomically(context / kLockFile,
                      LockTextForImage(ReadInputFile(lock, lock.string()), lock.string()));
  fs::copy_file(project_dir / kManifestFile, context / kManifestFile);
  const fs::path config = context / project.lock->config;
  fs::create_directories(config.parent_path());
  fs::copy_file(project_dir / project.lock->config, config);
  return context;
}

// `digest` when it is one ("sha256:" and 64 lower-case hex); else a Failure (exit 3): an engine
// that gives no digest has not told what it wrote, which is neither a success nor a difference.
std::string CheckedDigest(const std::string& digest, const std::string& source) {
  if (IsDigest(digest)) return digest;
  throw Failure(source + " " + (digest.empty() ? "no digest" : Quoted(digest)) +
                    ", not a manifest digest (sha256:<64 hex>): the engine failed to say what it "
                    "wrote",
                kExitEnvironment);
}

// The manifest digest `--digestfile` wrote: one line, at most a few hundred bytes.
std::string DigestFromFile(const std::string& engine, const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(file, ec))) {
    throw Failure(engine + " push exited 0 but wrote no --digestfile (" + file.string() + ")",
                  kExitEnvironment);
  }
  std::ifstream in(file, std::ios::binary);
  std::string text(256, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return CheckedDigest(text, engine + " push's --digestfile holds");
}

// One build; returns the local image name.
std::string BuildOnce(const std::string& engine, const ImageBuildOptions& o,
                      const fs::path& context, int n, bool plain_http_base) {
  const std::string name = "localhost/trainlock-build-" + o.image.target + "-" + std::to_string(n);
  const std::string epoch = std::to_string(o.image.source_date_epoch);
  std::vector<std::string> argv = ContainerToolCommand(engine, o.storage);
  if (engine == "docker") {
    argv.insert(argv.end(), {"build", "--no-cache", "--provenance=false", "--build-arg",
                             "SOURCE_DATE_EPOCH=" + epoch, "-f",
                             (context / "Containerfile").string(), "-t", name, context.string()});
  } else {
    argv.push_back("build");
    // RUN steps in a chroot: works in unprivileged CI containers where namespaces do not.
    if (engine == "buildah") argv.insert(argv.end(), {"--isolation", "chroot"});
    if (plain_http_base) argv.push_back("--tls-verify=false");
    argv.insert(argv.end(), {"--no-cache", "--layers=false", "--format", "oci", "--timestamp",
                             epoch, "--build-arg", "SOURCE_DATE_EPOCH=" + epoch, "-f",
                             (context / "Containerfile").string(), "-t", name, context.string()});
  }
  Run(argv, "build " + std::to_string(n), o.verbose, ContainerToolCall::kBuild);
  return name;
}

// The name an OCI layout the build writes gives its image (index.json's
// `org.opencontainers.image.ref.name`), so that tools which address a layout's image by name
// (umoci, skopeo's oci:DIR:REF) find it: the lock's build identity, which the image carries.
// It is in index.json only, never in the manifest, so the digest does not depend on it.
std::string OciLayoutDestination(const fs::path& layout, const Project& project) {
  return "oci:" + layout.string() + ":" + project.lock->lock_build_sha256;
}

// Pushes `name` to `destination` (docker://REF or oci:DIR:NAME) and returns the manifest digest.
std::string PushOnce(const std::string& engine, const ImageBuildOptions& o, const std::string& name,
                     const std::string& destination, const fs::path& digest_file) {
  std::vector<std::string> argv = ContainerToolCommand(engine, o.storage);
  if (engine == "docker") {
    const std::string ref = destination.substr(std::string("docker://").size());
    Run({"docker", "tag", name, ref}, "tag", o.verbose);
    std::string out = Run({"docker", "push", ref}, "push", o.verbose, ContainerToolCall::kTransfer);
    const size_t at = out.rfind("digest: sha256:");
    if (at == std::string::npos) throw Failure("docker push printed no digest", kExitEnvironment);
    return CheckedDigest(out.substr(at + 8, 71), "docker push printed");
  }
  argv.insert(argv.end(), {"push", "--digestfile", digest_file.string()});
  if (destination.starts_with("docker://") &&
      PlainHttpRegistry(destination.substr(std::string("docker://").size()), o.tls_verify))
    argv.push_back("--tls-verify=false");
  argv.insert(argv.end(), {name, destination});
  fs::remove(digest_file);
  Run(argv, "push to " + destination, o.verbose, ContainerToolCall::kTransfer);
  return DigestFromFile(engine, digest_file);
}

// What a --check rebuild that gives another digest differs in from the recorded image
// (image_diff.h): the recorded one is pulled by digest from where the lock says it was pushed
// and written as an OCI layout beside the rebuild's. Lines for Failure's notes; when the
// recorded image cannot be fetched or read, one line saying why (the digests alone remain).
std::vector<std::string> WhatDiffers(const std::string& engine, const ImageBuildOptions& o,
                                     const Project& project, const BuiltImage& recorded,
                                     const fs::path& rebuilt, const fs::path& layout) {
  constexpr size_t kMaxDifferenceLines = 40;
  if (recorded.ref.empty())
    return {"no per-file account: the lock records no ref to fetch the recorded image from"};
  if (engine == "docker")
    return {
        "no per-file account with docker (buildah or podman writes both images as OCI layouts)"};
  std::string problem;
  const std::optional<ImageRef> parsed = ParseImageRef(recorded.ref, &problem);
  if (!parsed)
    return {"no per-file account: the recorded ref " + CleanText(recorded.ref) + ": " + problem};
  const std::string source = parsed->Name() + "@" + recorded.digest;  // the repository, by digest
  try {
    std::vector<std::string> pull = ContainerToolCommand(engine, o.storage);
    pull.insert(pull.end(), {"pull", "--quiet"});
    if (PlainHttpRegistry(source, o.tls_verify)) pull.push_back("--tls-verify=false");
    pull.push_back("docker://" + source);
    std::string id = TailLines(
        Run(pull, "pull the recorded image " + source, o.verbose, ContainerToolCall::kTransfer), 1);
    while (!id.empty() && std::isspace(static_cast<unsigned char>(id.back()))) id.pop_back();
    if (id.empty() || id.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw Failure("the pull printed no image id", kExitEnvironment);
    fs::remove_all(layout);
    std::vector<std::string> push = ContainerToolCommand(engine, o.storage);
    push.insert(push.end(), {"push", id, OciLayoutDestination(layout, project)});
    Run(push, "write the recorded image as an OCI layout", o.verbose, ContainerToolCall::kTransfer);
    std::vector<std::string> lines = DescribeImageDifference(layout, rebuilt, kMaxDifferenceLines);
    if (lines.empty()) lines.push_back("the two images hold the same configuration and files");
    lines.insert(lines.begin(), "what differs from the recorded image (recorded -> rebuilt):");
    return lines;
  } catch (const std::exception& e) {
    return {"no per-file account: " + CleanText(e.what()).substr(0, 400)};
  }
}

// Whether the engine has `ref` among its images already (then the build does not pull it).
bool EngineHasImage(const std::string& engine, const ImageBuildOptions& o, const std::string& ref) {
  SpawnOptions spawn;
  spawn.argv = ContainerToolCommand(engine, o.storage);
  spawn.argv.insert(spawn.argv.end(), {"inspect", "--type", "image", ref});
  spawn.null_stdin = true;
  spawn.tail_lines = 1;
  return RunContainerTool(spawn, ContainerToolCall::kQuery, "look for the base image").exit_code ==
         0;
}

// --check rebuilds from what the lock records: each place that fetches from is probed first,
// for a few seconds, so a host that is down is one line at once (rebuild_sources.h). With a
// Containerfile of the user's own, only the base's registry, and only when it names the base.
void ProbeRebuildSources(const std::string& engine, const ImageBuildOptions& o,
                         const Target& target) {
  constexpr long kProbeSeconds = 5;
  const bool generated = o.containerfile.empty();
  if (!generated && ReadInputFile(o.containerfile, o.containerfile.string()).find(target.base) ==
                        std::string::npos)
    return;
  std::vector<RebuildSource> sources =
      RebuildSources(target, EngineHasImage(engine, o, target.base), o.tls_verify);
  if (!generated)
    std::erase_if(sources, [](const RebuildSource& s) {
      return s.kind != RebuildSource::Kind::kBaseRegistry;
    });
  RequireReachable(sources, kProbeSeconds);
}

// --check's reference: the digest the lock records for the target (exit 2 when none, before
// any work).
const BuiltImage& RecordedImage(const Project& project, const ImageBuildOptions& o) {
  if (!o.push.empty())
    throw Failure("--check rebuilds and compares; it does not push (drop --push)", kExitBadInput);
  auto it = project.lock->images.find(o.image.target);
  if (it == project.lock->images.end() || it->second.digest.empty()) {
    throw Failure(project.lock_path + ": [images." + o.image.target +
                      "] records no digest to check against; build it with --push first",
                  kExitBadInput);
  }
  return it->second;
}

// --check rebuilds with what the lock recorded: its SOURCE_DATE_EPOCH unless one is given (and
// then it must be the same). Locks written before the epoch was recorded need it given.
int64_t CheckEpoch(const BuiltImage& recorded, int64_t given, const std::string& table) {
  if (!recorded.source_date_epoch) return given;
  if (given >= 0 && given != *recorded.source_date_epoch) {
    throw Failure("SOURCE_DATE_EPOCH is " + std::to_string(given) + " but " + table +
                      " was built with " + std::to_string(*recorded.source_date_epoch) +
                      ": unset it (--check uses the lock's) or give that one",
                  kExitBadInput);
  }
  return *recorded.source_date_epoch;
}

// A lock that no longer follows from the project's files records an image of another lock:
// said before anything is built (the offline check of `lock --check`).
void RefuseStaleLock(const fs::path& project_dir, const Project& project,
                     const std::string& table) {
  LockOptions offline;
  offline.offline = true;
  offline.skip_python = true;
  const LockCheckResult check = CheckLockAgainstFiles(project_dir, offline);
  if (check.up_to_date) return;
  std::string fields;
  for (const std::string& f : check.fields) fields += "; " + f;
  throw Failure(project.lock_path + ": " + check.problem + fields + ": " + table +
                    " records the image of the lock as it was; re-lock and build it again "
                    "with --push, or check out the commit that pushed it",
                kExitVerdict);
}

// The validator a cpu image copies is part of its bytes: one other than the recorded build's
// cannot give its digest, so that is said before building.
void RefuseOtherValidator(const BuiltImage& recorded, const std::string& staged,
                          const ImageBuildOptions& o, const std::string& table) {
  if (recorded.validator_sha256.empty() || staged.empty() || staged == recorded.validator_sha256)
    return;
  const fs::path validator =
      o.image.validator.empty() ? DefaultValidatorBinary() : o.image.validator;
  throw Failure(table + " was built with trainlock-validate sha256 " +
                    recorded.validator_sha256.substr(0, 16) + "..., this build stages " +
                    validator.string() + " (sha256 " + staged.substr(0, 16) +
                    "...): give that validator with --validator FILE, or build trainlock at the "
                    "commit that pushed the image",
                kExitVerdict);
}

// The validator sha256 the staged image.json records ("" when the image compiles it).
std::string StagedValidatorSha256(const fs::path& context) {
  std::error_code ec;
  if (!fs::is_regular_file(context / "image.json", ec) ||
      !fs::is_regular_file(context / "trainlock-validate", ec))
    return "";
  const nlohmann::json record =
      nlohmann::json::parse(ReadInputFile(context / "image.json", "image.json"), nullptr, false);
  return record.is_object() ? record.value("validator_sha256", "") : "";
}

}  // namespace

std::string LockTextForImage(const std::string& lock_text, const std::string& display) {
  toml::table doc = ParseTomlDocument(lock_text, display);
  doc.erase("images");
  doc.erase("golden");  // pinned from reports of this image: no input of it
  return LockFileText(doc);
}

// The build itself, with --check's recorded image (null without --check).
static BuiltImageResult BuildChecked(const fs::path& project_dir, const Project& project,
                                     const ImageBuildOptions& o, const BuiltImage* recorded);

BuiltImageResult BuildImage(const fs::path& project_dir, const ImageBuildOptions& o) {
  Project project = LoadProject(project_dir);
  if (!project.lock)
    throw Failure(project.lock_path + ": missing; run `trainlock lock` first", kExitBadInput);
  const std::string table = "[images." + o.image.target + "]";
  const BuiltImage* recorded = o.check ? &RecordedImage(project, o) : nullptr;
  ImageBuildOptions opts = o;
  if (recorded) {
    opts.image.source_date_epoch = CheckEpoch(*recorded, o.image.source_date_epoch, table);
    RefuseStaleLock(project_dir, project, table);
  }
  return BuildChecked(project_dir, project, opts, recorded);
}

static BuiltImageResult BuildChecked(const fs::path& project_dir, const Project& project,
                                     const ImageBuildOptions& o, const BuiltImage* recorded) {
  if (o.image.source_date_epoch < 0) {
    throw Failure("image build needs SOURCE_DATE_EPOCH (or --source-date-epoch)", kExitBadInput);
  }
  const std::string table = "[images." + o.image.target + "]";
  BuiltImageResult result;
  result.source_date_epoch = o.image.source_date_epoch;
  result.engine = PickContainerTool(o.engine, ContainerToolUse::kBuild);
  const auto target = project.lock->targets.find(o.image.target);
  if (recorded && target != project.lock->targets.end())
    ProbeRebuildSources(result.engine, o, target->second);
  // The base comes over plain HTTP from a loopback registry (or with --no-tls-verify).
  const bool plain_http_base = PlainHttpRegistry(
      target == project.lock->targets.end() ? "" : target->second.base, o.tls_verify);
  Progress quiet(ProgressStyle::kNone, "");
  Progress& progress = o.progress ? *o.progress : quiet;
  progress.Begin("staging the build context");
  const fs::path context = StageContext(project_dir, project, o);
  result.validator_sha256 = StagedValidatorSha256(context);
  if (recorded) RefuseOtherValidator(*recorded, result.validator_sha256, o, table);
  const fs::path work = context.parent_path() / ("build-" + o.image.target + "-out");
  fs::remove_all(work);
  fs::create_directories(work);
  progress.Begin("building the " + o.image.target + " image with " + result.engine);
  const std::string first = BuildOnce(result.engine, o, context, 1, plain_http_base);
  progress.Begin(o.push.empty() ? "writing the image as an OCI layout" : "pushing to " + o.push);
  auto destination = [&](int n) {
    return o.push.empty() ? OciLayoutDestination(work / ("image-" + std::to_string(n)), project)
                          : "docker://" + o.push;
  };
  result.digest = PushOnce(result.engine, o, first, destination(1), work / "digest-1");
  if (o.verify_reproducible) {
    progress.Begin("building it again (--verify-reproducible)");
    const std::string second = BuildOnce(result.engine, o, context, 2, plain_http_base);
    progress.Begin("writing the second build");
    result.second_digest = PushOnce(result.engine, o, second, destination(2), work / "digest-2");
    if (result.second_digest != result.digest) {
      throw Failure("not reproducible: the first build is " + result.digest + ", the second " +
                        result.second_digest,
                    kExitVerdict);
    }
  }
  progress.End();
  if (recorded && result.digest != recorded->digest) {
    progress.Begin("comparing with the recorded image");
    std::vector<std::string> differences =
        WhatDiffers(result.engine, o, project, *recorded, work / "image-1", work / "recorded");
    progress.End();
    throw Failure("the rebuild of " + table + " gives " + result.digest + ", the lock records " +
                      recorded->digest + " (same lock, SOURCE_DATE_EPOCH " +
                      std::to_string(o.image.source_date_epoch) +
                      (result.validator_sha256.empty()
                           ? std::string()
                           : ", validator " + result.validator_sha256.substr(0, 16) + "...") +
                      "): what the build fetched differs (the base, a wheel or a Debian package) "
                      "or a file that goes into the image changed",
                  kExitVerdict, std::move(differences));
  }
  if (!o.push.empty()) result.ref = o.push;
  return result;
}

void RecordBuiltImage(const fs::path& project_dir, const std::string& target,
                      const BuiltImageResult& built) {
  const fs::path path = project_dir / kLockFile;
  const std::string text = ReadInputFile(path, path.string());
  toml::table doc = ParseTomlDocument(text, path.string());
  if (!doc["images"].is_table()) doc.insert_or_assign("images", toml::table{});
  toml::table image{{"ref", built.ref}, {"digest", built.digest}};
  // What `--check` needs to rebuild it from the lock alone.
  if (built.source_date_epoch >= 0) image.insert("source-date-epoch", built.source_date_epoch);
  if (!built.validator_sha256.empty()) image.insert("validator-sha256", built.validator_sha256);
  doc["images"].as_table()->insert_or_assign(target, std::move(image));
  const std::string text_out = LockFileText(doc);
  LoadLockfile(text_out, path.string(), LockfileKind::kLock);  // still a valid lock
  WriteFileAtomically(path, text_out);
}

}  // namespace trainlock
