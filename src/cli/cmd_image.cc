// `trainlock image generate DIR --target cpu|cuda|rocm`: write the target's Containerfile,
// requirements.txt and image.json (image_generate.h); `trainlock image build`: build, verify
// and push it (image_build.h); `trainlock image storage`: what DIR/.trainlock holds, and
// freeing its container storage (storage_usage.h).
#include <cstdlib>
#include <iostream>

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "base/terminal_text.h"
#include "base/text_format.h"
#include "cli/commands.h"
#include "image/image_build.h"
#include "image/image_generate.h"
#include "image/in_image_paths.h"
#include "image/storage_usage.h"
#include "project/artifact_paths.h"
#include "project/project.h"

namespace trainlock::cli {
namespace {

struct GenerateOptions {
  std::string dir = ".";
  std::string out;  // "" = DIR/.trainlock/image-<target>
  ImageOptions image;
};

int RunGenerate(GenerateOptions options, const GlobalOptions& global) {
  if (options.image.source_date_epoch < 0) {
    if (const char* env = std::getenv("SOURCE_DATE_EPOCH")) {
      char* end = nullptr;
      long long v = std::strtoll(env, &end, 10);
      if (!*env || *end || v < 0) {
        std::cerr << "SOURCE_DATE_EPOCH: error: '" << env << "' is not a non-negative integer\n";
        return kExitBadInput;
      }
      options.image.source_date_epoch = v;
    }
  }
  Project project = LoadProject(options.dir);
  const Catalog catalog = LoadCatalog(global);
  options.image.catalog = &catalog;
  auto files = GenerateImage(project, options.image);
  const std::filesystem::path out =
      options.out.empty()
          ? std::filesystem::path(options.dir) / ".trainlock" / ("image-" + options.image.target)
          : std::filesystem::path(options.out);
  IgnoreTrainlockDir(out);
  std::filesystem::create_directories(out);
  for (const auto& [name, text] : files) {
    std::filesystem::create_directories((out / name).parent_path());  // engine/trainlock_engine/
    WriteFileAtomically(out / name, text);
    if (!global.quiet()) std::cout << "wrote " << (out / name).string() << "\n";
  }
  return kExitOk;
}

struct BuildCommandOptions {
  std::string dir = ".";
  ImageBuildOptions build;
  std::string source_dir;
  std::string containerfile;
  std::string storage_root;
  bool no_tls_verify = false;
  bool json = false;
};

int RunBuild(BuildCommandOptions options, const GlobalOptions& global) {
  if (options.build.image.source_date_epoch < 0) {
    const char* env = std::getenv("SOURCE_DATE_EPOCH");
    if (env && *env) options.build.image.source_date_epoch = std::atoll(env);  // "" is unset
  }
  options.build.source_dir = options.source_dir;
  options.build.containerfile = options.containerfile;
  options.build.storage.root = options.storage_root.empty()
                                   ? DefaultStorageRoot(std::filesystem::absolute(options.dir))
                                   : std::filesystem::path(options.storage_root);
  options.build.verbose = global.verbosity > 0;
  CheckStorageDriver(options.build.storage.driver);
  IgnoreTrainlockDir(options.build.storage.root);
  options.build.tls_verify = !options.no_tls_verify;
  const Catalog catalog = LoadCatalog(global);
  options.build.image.catalog = &catalog;
  std::unique_ptr<Progress> progress = MakeProgress(global, "trainlock image build");
  options.build.progress = progress.get();
  BuiltImageResult r = BuildImage(options.dir, options.build);
  if (!r.ref.empty()) RecordBuiltImage(options.dir, options.build.image.target, r);
  if (options.json) {
    std::cout << DumpJsonOutput(nlohmann::json{
                     {"engine", r.engine},
                     {"digest", r.digest},
                     {"reproducible", r.second_digest.empty()
                                          ? nlohmann::json(nullptr)
                                          : nlohmann::json(r.second_digest == r.digest)},
                     {"checked", options.build.check},
                     {"pushed", r.ref.empty() ? nlohmann::json(nullptr)
                                              : nlohmann::json(r.ref + "@" + r.digest)}})
              << "\n";
    return kExitOk;
  }
  std::cout << "built with " << r.engine << ": " << r.digest << "\n";
  if (!r.second_digest.empty()) std::cout << "reproducible: a second build gave the same digest\n";
  if (options.build.check) {
    std::cout << "check: the rebuild gives the digest the lock records in [images."
              << options.build.image.target << "]\n";
  }
  if (!r.ref.empty()) {
    std::cout << "pushed " << r.ref << "@" << r.digest << "; recorded in [images."
              << options.build.image.target << "] of the lock\n";
  }
  return kExitOk;
}

struct StorageCommandOptions {
  std::string dir = ".";
  bool free = false;
  bool json = false;
  std::string driver = "vfs";
};

// What each entry of DIR/.trainlock is, for the listing.
std::string EntryPurpose(const std::string& name) {
  if (name == "containers") return "buildah/podman storage (--free frees it)";
  if (name == "cache") return "pinned model and dataset files (trainlock fetch writes them again)";
  if (name == "reports") return "validate's reports";
  if (name.starts_with("image-")) return "image generate's Containerfile and files";
  if (name.starts_with("build-") && name.ends_with("-out"))
    return "the last image build's OCI layouts";
  if (name.starts_with("build-")) return "the last image build's context";
  if (name == ".gitignore") return "keeps .trainlock out of git";
  return "";
}

uintmax_t Total(const std::vector<StorageEntry>& entries) {
  uintmax_t total = 0;
  for (const StorageEntry& e : entries) total += e.bytes;
  return total;
}

uintmax_t BytesOf(const std::vector<StorageEntry>& entries, const std::string& name) {
  for (const StorageEntry& e : entries)
    if (e.name == name) return e.bytes;
  return 0;
}

int RunStorage(const StorageCommandOptions& o, const GlobalOptions& global) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(o.dir, ec))
    throw InputError(Diagnostic{o.dir, {}, "is not a project directory", ""});
  if (o.free) CheckStorageDriver(o.driver);
  const fs::path root = fs::path(o.dir) / ".trainlock";
  const std::vector<StorageEntry> before = TrainlockDirUsage(root);
  std::string left;
  std::vector<StorageEntry> after = before;
  if (o.free) {
    IgnoreTrainlockDir(DefaultStorageRoot(fs::absolute(o.dir)));  // deletes only through real dirs
    left = FreeContainerStorage({DefaultStorageRoot(fs::absolute(o.dir)), o.driver},
                                global.verbosity > 0);
    after = TrainlockDirUsage(root);
  }
  const uintmax_t freed = BytesOf(before, "containers") -
                          std::min(BytesOf(before, "containers"), BytesOf(after, "containers"));
  if (o.json) {
    nlohmann::json entries = nlohmann::json::array();
    for (const StorageEntry& e : after)
      entries.push_back(
          {{"name", e.name}, {"bytes", e.bytes}, {"files", e.files}, {"unreadable", e.unreadable}});
    std::cout << DumpJsonOutput(
                     {{"dir", root.string()},
                      {"entries", entries},
                      {"bytes_in_all", Total(after)},
                      {"freed_bytes", o.free ? nlohmann::json(freed) : nlohmann::json(nullptr)}})
              << "\n";
  } else {
    if (o.free)
      std::cout << "freed " << FormatBytes(static_cast<double>(freed)) << " of container storage\n";
    if (after.empty())
      std::cout << TerminalLine(root.string()) << ": nothing stored\n";
    else
      std::cout << TerminalLine(root.string()) << ": "
                << FormatBytes(static_cast<double>(Total(after))) << " in all\n";
    for (const StorageEntry& e : after) {
      std::string size = FormatBytes(static_cast<double>(e.bytes)) + (e.unreadable ? "+" : "");
      // An entry's name is whatever was created in the directory: escape sequences, a newline
      // forging a row, bidirectional controls are shown escaped, never acted on (issue #61).
      std::string name = TerminalLine(e.name);
      name.resize(std::max<size_t>(name.size(), 14), ' ');
      size.insert(0, size.size() < 11 ? 11 - size.size() : 0, ' ');
      std::cout << "  " << name << size << "  " << EntryPurpose(e.name) << "\n";
    }
  }
  if (!left.empty()) {
    // What the container tool said: its output is shown through the terminal-safe printer.
    std::cerr << "trainlock image storage: error: " << TerminalText(left) << "\n";
    return kExitEnvironment;
  }
  return kExitOk;
}

}  // namespace

// --validator and --build-validator, which both subcommands take for the cpu target.
void AddValidatorOptions(CLI::App* cmd, ImageOptions& image) {
  cmd->add_option("--validator", image.validator,
                  "cpu: the trainlock-validate binary the image copies (default: the one beside "
                  "trainlock); its sha256 goes into a label and image.json");
  cmd->add_flag("--build-validator", image.build_validator,
                "cpu: compile the validator in a builder stage from trainlock-src/ instead");
}

Command RegisterImage(CLI::App& app, const GlobalOptions& global) {
  auto options = std::make_shared<GenerateOptions>();
  CLI::App* image = app.add_subcommand("image", "Generate the container image of a lock's target");
  image->require_subcommand(1);
  CLI::App* generate = image->add_subcommand(
      "generate",
      "Write DIR/.trainlock/image-<target>/Containerfile, requirements.txt and image.json from\n"
      "the lock and the templates in images/: FROM the digest-pinned base, OS packages from the\n"
      "dated snapshot archive of SOURCE_DATE_EPOCH, the lock's whole Python closure with\n"
      "pip --require-hashes --no-deps, the validator (compiled against the image's torch for\n"
      "cuda/rocm, copied for cpu), the custom ops built for the target's architectures, lock,\n"
      "config and image.json in " +
          std::string(kProjectInImage) +
          "/, OCI labels, the validator as entrypoint. The\n"
          "same inputs give byte-identical files. A target whose lock has no resolved Python\n"
          "closure is refused (exit 2) with the command that resolves it.");
  generate
      ->add_option("DIR", options->dir,
                   "Project directory (or its trainlock.lock or trainlock.toml)")
      ->transform(ProjectDirArgument())
      ->capture_default_str();
  generate->add_option("--target", options->image.target, "cpu, cuda or rocm")->required();
  generate->add_option("--out", options->out, "Output directory");
  generate->add_option("--source-date-epoch", options->image.source_date_epoch,
                       "Build time in seconds since 1970 (default: $SOURCE_DATE_EPOCH)");
  generate->add_option("--source", options->image.source, "org.opencontainers.image.source");
  generate->add_option("--revision", options->image.revision, "org.opencontainers.image.revision");
  generate->add_option("--image-ref", options->image.image_ref,
                       "The name the image will be pushed as");
  AddValidatorOptions(generate, options->image);
  auto build = std::make_shared<BuildCommandOptions>();
  CLI::App* b = image->add_subcommand(
      "build",
      "Build the target's image (the generated Containerfile, or --containerfile) with buildah,\n"
      "podman or docker under reproducibility settings: timestamps from SOURCE_DATE_EPOCH, no\n"
      "cache, OCI format, no provenance attestations. --verify-reproducible builds twice and\n"
      "fails (exit 1) when the digests differ; --push REF pushes and records ref and digest in\n"
      "the lock's [images.<target>]: lock-sha256 changes, the build identity the image and its\n"
      "reports carry (`trainlock hash --build`) does not. The image carries the lock without\n"
      "[images], so --check, run on the committed lock anywhere, rebuilds and compares.");
  b->add_option("DIR", build->dir, "Project directory (or its trainlock.lock or trainlock.toml)")
      ->transform(ProjectDirArgument())
      ->capture_default_str();
  b->add_option("--target", build->build.image.target, "cpu, cuda or rocm")->required();
  b->add_option("--container-engine", build->build.engine,
                "buildah, podman or docker (default: the first found)");
  b->add_option("--push", build->build.push, "Registry reference to push to");
  b->add_flag("--verify-reproducible", build->build.verify_reproducible,
              "Build twice; the digests must match");
  b->add_flag("--check", build->build.check,
              "Rebuild and compare the digest with the lock's [images.<target>]: exit 1 when "
              "they differ, 2 when it records none");
  b->add_option("--containerfile", build->containerfile,
                "Build this Containerfile instead of the generated one");
  b->add_option("--source-dir", build->source_dir,
                "trainlock's source tree (cuda/rocm images and --build-validator compile it)");
  b->add_option("--source-date-epoch", build->build.image.source_date_epoch,
                "Build time (default: $SOURCE_DATE_EPOCH)");
  b->add_flag("--json", build->json, "Print the engine, digest and push result as JSON");
  b->add_flag("--no-tls-verify", build->no_tls_verify,
              "Talk plain HTTP to every registry (loopback registries always are)");
  b->add_option("--storage-root", build->storage_root,
                "buildah/podman storage directory (default: DIR/.trainlock/containers)");
  b->add_option("--storage-driver", build->build.storage.driver,
                "buildah/podman storage driver: vfs (works unprivileged) or overlay (faster)")
      ->capture_default_str();
  AddValidatorOptions(b, build->build.image);

  auto storage = std::make_shared<StorageCommandOptions>();
  CLI::App* st = image->add_subcommand(
      "storage",
      "What DIR/.trainlock holds, entry by entry (sizes as du counts them); --free removes its "
      "buildah/podman storage through the engine");
  st->add_option("DIR", storage->dir, "Project directory (or its trainlock.lock or trainlock.toml)")
      ->transform(ProjectDirArgument());
  st->add_flag("--free", storage->free,
               "Remove DIR/.trainlock/containers (every image and container in it)");
  st->add_flag("--json", storage->json, "Print the entries as JSON");
  st->add_option("--storage-driver", storage->driver,
                 "the storage driver it was written with: vfs or overlay")
      ->capture_default_str();
  return [options, build, b, storage, st, &global] {
    if (st->parsed()) return RunStorage(*storage, global);
    if (b->parsed()) return RunBuild(*build, global);
    return RunGenerate(*options, global);
  };
}

}  // namespace trainlock::cli
