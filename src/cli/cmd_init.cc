// `trainlock init [DIR] --from-hub ORG/NAME[@REV] --target cuda|rocm|cpu`: a newcomer's first
// project. Resolves the revision to its commit, fetches the model's config.json into the cache
// `trainlock fetch` fills, and writes trainlock.toml plus a training config whose model shape
// is config.json's (hub_model_config.h: honoured or refused, never ignored).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <regex>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/file_io.h"
#include "base/safe_paths.h"
#include "base/scoped_fd.h"
#include "base/scratch_dir.h"
#include "base/strings.h"
#include "cli/commands.h"
#include "lock/hf_hub.h"
#include "project/artifact_paths.h"
#include "project/lockfile_loader.h"
#include "project/project.h"
#include "project/train_config.h"
#include "run/hub_model_config.h"

namespace trainlock::cli {
namespace {

namespace fs = std::filesystem;

struct InitOptions {
  std::string dir = ".";
  std::string from_hub;
  std::string target;
  bool force = false;
  long timeout_s = 60;
};

struct HubModelRef {
  std::string repo;
  std::string revision;
};

// config.json read, and where it came from ("org/name@0123456789ab") for the config's comment.
struct HubModel {
  std::string source;
  HubModelConfig config;
};

HubModelRef ParseHubRef(const std::string& text) {
  static const std::regex kRef(
      R"(^([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)(@(.+))?$)");
  std::smatch m;
  if (!std::regex_match(text, m, kRef)) {
    throw InputError(Diagnostic{"--from-hub",
                                {},
                                "not a Hub model: " + Quoted(text),
                                "write ORG/NAME or ORG/NAME@REVISION, e.g. "
                                "meta-llama/Llama-3.2-1B@main"});
  }
  const std::string revision = m[3].matched ? std::string(m[3]) : "main";
  // The revision goes into the Hub's URLs and the manifest: only a branch, tag or commit.
  if (std::string why = HubRevisionProblem(revision); !why.empty()) {
    throw InputError(Diagnostic{"--from-hub",
                                {},
                                "revision " + Quoted(revision) + " is not a Hub revision: " + why,
                                "name a branch, tag or commit, e.g. main or v1.0"});
  }
  return {m[1], revision};
}

// What each target starts from: the images, versions and checks the shipped examples use
// (examples/h200-pilot, mi300x-pilot, tiny), for the user to edit.
std::string TargetToml(const std::string& target) {
  if (target == "cuda") {
    return "[targets.cuda]\n"
           "base = \"docker.io/nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04\"\n"
           "accelerators = [\"H200\", \"H100-80GB\"]\n"
           "torch = \"2.11.0+cu130\"\n"
           "cuda = \"13.0\"\n"
           "driver-min = \"580.65.06\"\n";
  }
  if (target == "rocm") {
    return "[targets.rocm]\n"
           "base = \"docker.io/rocm/dev-ubuntu-24.04:6.3.4-complete\"\n"
           "accelerators = [\"MI300X\", \"MI325X\"]\n"
           "torch = \"2.7.1+rocm6.3\"\n"
           "rocm = \"6.3.4\"\n";
  }
  return "[targets.cpu]\n"
         "base = \"docker.io/library/debian:bookworm-slim\"\n"
         "torch = \"1.13.0\"\n";
}

std::string RequiredChecks(const std::string& target) {
  const std::string train =
      "\"train.step\", \"train.roundtrip\", \"train.eval\", \"ckpt.portable\"";
  if (target == "cpu") return "[" + train + "]";
  return "[\"env.driver\", \"env.runtime\", \"env.arch\", \"env.versions\",\n            " + train +
         "]";
}

std::string ManifestToml(const std::string& name, const std::string& config, const HubModelRef& ref,
                         const std::string& commit, const std::string& target) {
  return "# Written by `trainlock init --from-hub " + ref.repo + "@" + ref.revision +
         "`: the intent of the run.\n"
         "# Edit it, then `trainlock check`, `trainlock lock` and `trainlock validate`.\n"
         "[project]\n"
         "name = \"" +
         name +
         "\"\n"
         "config = \"" +
         config +
         "\"\n"
         "seed = 1234\n\n"
         "[model]\n"
         "source = \"hf\"\n"
         "repo = \"" +
         ref.repo +
         "\"\n"
         "revision = \"" +
         commit + "\"  # " + ref.revision +
         " when initialised\n"
         "files = [\"config.json\"]\n\n" +
         TargetToml(target) +
         "\n[validate]\n"
         "steps = 8\n"
         "checkpoint-at = 4\n"
         "eval-batches = 2\n"
         "required = " +
         RequiredChecks(target) + "\n";
}

std::string RopeScalingYaml(const RopeScaling& r) {
  if (r.type.empty()) return "";
  std::string out =
      "  rope_scaling:\n    type: " + r.type + "\n    factor: " + NumberText(r.factor) + "\n";
  if (r.type == "llama3") {
    out += "    low_freq_factor: " + NumberText(r.low_freq_factor) + "\n" +
           "    high_freq_factor: " + NumberText(r.high_freq_factor) + "\n" +
           "    original_max_position_embeddings: " +
           std::to_string(r.original_max_position_embeddings) + "\n";
  }
  return out;
}

// The model section is config.json's; the training section a start the user tunes to the run
// they intend (seq_len capped at the model's context and at 4096 on a GPU, 256 on a CPU).
std::string TrainConfigYaml(const HubModel& hub_model, const std::string& target) {
  const ModelConfig& m = hub_model.config.model;
  const bool gpu = target != "cpu";
  const int64_t seq_len =
      std::min<int64_t>(hub_model.config.max_position_embeddings, gpu ? 4096 : 256);
  return "# Model shape from " + hub_model.source +
         " (config.json); `trainlock check` compares\n"
         "# the two. The training section is a start: set the run's real seq_len and micro_batch.\n"
         "model:\n"
         "  architecture: llama\n"
         "  hidden_size: " +
         std::to_string(m.hidden_size) + "\n" + "  num_layers: " + std::to_string(m.num_layers) +
         "\n" + "  num_heads: " + std::to_string(m.num_heads) + "\n" +
         "  num_kv_heads: " + std::to_string(m.num_kv_heads) + "\n" +
         "  intermediate_size: " + std::to_string(m.intermediate_size) + "\n" +
         "  vocab_size: " + std::to_string(m.vocab_size) + "\n" +
         "  tie_embeddings: " + (m.tie_embeddings ? "true" : "false") + "\n" +
         "  rope_theta: " + NumberText(m.rope_theta) + "\n" + RopeScalingYaml(m.rope_scaling) +
         "  norm_eps: " + NumberText(m.norm_eps) + "\n" +
         "  dropout: 0.0\n"
         "training:\n"
         "  seq_len: " +
         std::to_string(seq_len) + "\n" +
         "  micro_batch: 1\n"
         "  grad_accum: 1\n"
         "  precision: " +
         (gpu ? "bf16" : "fp32") + "\n" +
         "  optimizer:\n"
         "    name: adamw\n"
         "    lr: 3.0e-4\n"
         "    betas: [0.9, 0.95]\n"
         "    eps: 1.0e-8\n"
         "    weight_decay: 0.1\n"
         "  scheduler:\n"
         "    name: cosine\n"
         "    warmup_steps: 100\n"
         "    total_steps: 1000\n"
         "  grad_clip: 1.0\n"
         "  activation_checkpointing: false\n"
         "  parallelism: ddp\n";
}

// A project name and file stem from the model's name ("Llama-3.2-1B" -> "llama-3.2-1b").
std::string StemOf(const std::string& repo) {
  return AsciiLower(repo.substr(repo.find('/') + 1));
}

// Refuses, before anything is written, what `trainlock check` would refuse of the two files
// init writes: they are read back by the loaders check uses (LoadTrainConfig, LoadLockfile), so a
// config.json whose shape the training config validator refuses (hidden size not divisible by
// the heads, kv heads not dividing them, a zero rope_theta or rms_norm_eps) is refused here,
// naming the field, instead of written for check to refuse later.
void RefuseWhatCheckRefuses(const std::string& yaml, const std::string& toml,
                            const std::string& config_json) {
  try {
    LoadTrainConfig(yaml, config_json);
    LoadLockfile(toml, config_json, LockfileKind::kManifest);
  } catch (const InputError& e) {
    Diagnostics refused;
    for (const Diagnostic& d : e.diagnostics().items()) {
      refused.Error(config_json, {}, d.message + " (in the training config init would write)",
                    "trainlock trains the model config.json describes; this one `trainlock "
                    "check` refuses");
    }
    throw InputError(refused);
  }
}

// Writes `text` as `name` in the directory `dir_fd` through NAME.tmp and a rename: never
// through a symlink planted at either name (the rename replaces a link, it does not follow it).
void WriteFileAt(int dir_fd, const std::string& name, const std::string& text,
                 const fs::path& display) {
  const std::string tmp = name + ".tmp";
  ScopedFd out = CreateFileAt(dir_fd, tmp, display.string() + ".tmp");
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(out.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::unlinkat(dir_fd, tmp.c_str(), 0);
      throw Failure(display.string() + ": cannot write: " + std::strerror(error), kExitEnvironment);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(out.get()) != 0 || ::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
    const int error = errno;
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    throw InputError(
        Diagnostic{display.string(), {}, std::string("cannot write: ") + std::strerror(error), {}});
  }
}

// Refuses `file` when it exists and --force was not given, and always when it is something
// --force cannot write over (a directory, a symlink, a FIFO): before anything is fetched or
// written.
void RefuseToOverwrite(const fs::path& file, bool force) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(file, ec);
  if (!fs::exists(st)) return;
  if (!fs::is_regular_file(st)) {
    throw InputError(Diagnostic{file.string(),
                                {},
                                "exists and is not a regular file",
                                "move it away; --force writes over files only"});
  }
  if (!force) {
    throw InputError(Diagnostic{
        file.string(), {}, "already exists", "keep it, or pass --force to write over it"});
  }
}

// Refuses a `configs` that exists and is not a directory, before anything is written.
void RefuseNonDirectory(const fs::path& dir) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (fs::is_symlink(st)) {
    throw InputError(
        Diagnostic{dir.string(), {}, "is a symbolic link; not followed", "make it a directory"});
  }
  if (fs::exists(st) && !fs::is_directory(st)) {
    throw InputError(Diagnostic{dir.string(), {}, "exists and is not a directory", "move it away"});
  }
}

int RunInit(const InitOptions& o, const GlobalOptions& global) {
  const HubModelRef ref = ParseHubRef(o.from_hub);
  const fs::path dir = o.dir;
  const std::string stem = StemOf(ref.repo);
  const std::string config = "configs/" + stem + ".yaml";
  // DIR itself is the user's choice (made when missing; a file there is refused, exit 2);
  // everything below it is opened without following a symlink (base/safe_paths.h).
  const ScopedFd project_dir = OpenDirectoryBelow(dir, "", true);
  RefuseNonDirectory(dir / "configs");
  RefuseToOverwrite(dir / kManifestFile, o.force);
  RefuseToOverwrite(dir / config, o.force);

  HubOptions hub;
  hub.timeout_s = o.timeout_s;
  hub.max_git_file_bytes = kMaxInputFileBytes;  // refused from the size the Hub declares
  const HubRevision revision =
      ResolveHubRevision("model", ref.repo, ref.revision, {"config.json"}, hub);
  const std::string source = ref.repo + "@" + revision.commit.substr(0, 12);
  const PinnedFile& declared = revision.files.front();
  if (declared.size > kMaxInputFileBytes) {
    // Refused from the size the Hub declares, before a byte is downloaded.
    throw InputError(Diagnostic{source + ":config.json",
                                {},
                                "the Hub declares " + std::to_string(declared.size) +
                                    " bytes; refusing inputs over " +
                                    std::to_string(kMaxInputFileBytes) + " bytes",
                                "a model's config.json is a few kilobytes: check the repository"});
  }
  // Fetched into a private directory first: nothing lands in the project before the last
  // refusal (RefuseWhatCheckRefuses).
  const ScratchDir scratch("trainlock-init");
  if (scratch.path().empty())
    throw Failure("cannot make a temporary directory for the download", kExitEnvironment);
  const fs::path fetched = scratch.path() / "config.json";
  const ScopedFd scratch_dir = OpenDirectoryBelow(scratch.path(), "", false);
  DownloadHubFile("model", ref.repo, revision.commit, declared, scratch_dir.get(), fetched, hub);
  const std::string config_json = ReadInputFile(fetched, source + ":config.json");
  const HubModel hub_model{source, ReadHubModelConfig(config_json, source + ":config.json")};
  const std::string yaml = TrainConfigYaml(hub_model, o.target);
  const std::string toml = ManifestToml(stem, config, ref, revision.commit, o.target);
  RefuseWhatCheckRefuses(yaml, toml, source + ":config.json");

  // Into the cache fetch fills, without following a symlink below the project.
  ArtifactSource model{"hf", ref.repo, revision.commit, "", revision.files};
  const ArtifactLocation where = LocateArtifact(dir, model, "model");
  IgnoreTrainlockDir(where.dir());
  const ScopedFd cache_dir = OpenDirectoryBelow(where.root, where.below, true);
  WriteFileAt(cache_dir.get(), "config.json", config_json, where.dir() / "config.json");
  const ScopedFd configs_dir = OpenDirectoryBelow(dir, "configs", true);
  WriteFileAt(configs_dir.get(), stem + ".yaml", yaml, dir / config);
  WriteFileAt(project_dir.get(), kManifestFile, toml, dir / kManifestFile);
  if (global.quiet()) return kExitOk;
  std::cout << "resolved " << ref.repo << "@" << ref.revision << " to " << revision.commit << "\n"
            << "wrote " << DisplayPath(dir, kManifestFile) << " and " << DisplayPath(dir, config)
            << "\nnext: trainlock check " << o.dir << " && trainlock lock " << o.dir
            << " && trainlock validate " << o.dir << "\n";
  return kExitOk;
}

}  // namespace

Command RegisterInit(CLI::App& app, const GlobalOptions& global) {
  auto options = std::make_shared<InitOptions>();
  CLI::App* cmd = app.add_subcommand(
      "init",
      "Start a project in DIR from a Hugging Face model: resolve REV (default main) to its\n"
      "commit, fetch the model's config.json into the cache (TRAINLOCK_CACHE, default\n"
      "DIR/.trainlock/cache) and write DIR/trainlock.toml, pinned to that commit, and\n"
      "DIR/configs/<name>.yaml, whose model shape is config.json's: rope_theta and\n"
      "rope_scaling (none, linear, llama3) are carried over; a model the validator's Llama\n"
      "does not compute (another model_type, rope_scaling type, activation, biases) is\n"
      "refused. HF_ENDPOINT and HF_TOKEN as for `trainlock lock`. Exit 2 for a refused model\n"
      "or existing files, 3 when the Hub cannot answer.");
  cmd->add_option("DIR", options->dir, "Project directory (created)")->capture_default_str();
  cmd->add_option("--from-hub", options->from_hub, "ORG/NAME[@REV]: the model to train")
      ->required();
  cmd->add_option("--target", options->target, "cuda, rocm or cpu")
      ->required()
      ->check(CLI::IsMember({"cuda", "rocm", "cpu"}));
  cmd->add_flag("--force", options->force, "Write over an existing manifest and config");
  cmd->add_option("--timeout", options->timeout_s, "Seconds per Hub request")
      ->capture_default_str()
      ->check(CLI::Range(1L, 3600L));
  return [options, &global] { return RunInit(*options, global); };
}

}  // namespace trainlock::cli
