// The engine spec resolved from the project; see spec_resolver.h.
#include "coordinator/spec_resolver.h"

#include <algorithm>
#include <filesystem>

#include "project/artifact_paths.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

// The pinned files of `a` as the engine reads them: absolute paths with the lock's hashes. A
// file missing on this node stays listed: the engine's point-of-use verification fails the
// training checks naming it, as for a changed file. Training a seeded model or synthetic
// tokens in its place would pass on what the lock does not pin.
std::vector<SpecFile> PinnedSpecFiles(const fs::path& dir, const ArtifactSource& a,
                                      std::string_view kind) {
  std::vector<SpecFile> files;
  for (const PinnedFile& f : a.files) {
    const fs::path path = ResolvePinnedFile(dir, a, kind, f.path);
    files.push_back({fs::absolute(path).lexically_normal().string(), f.path, f.sha256,
                     static_cast<int64_t>(f.size)});
  }
  return files;
}

}  // namespace

EngineSpec ResolveEngineSpec(const Project& project, int64_t steps, const std::string& engine) {
  const Lockfile& lock = *project.lock;
  EngineSpec spec;
  spec.engine = engine;
  spec.lock_sha256 = project.lock_sha256;
  spec.config_sha256 = project.config_sha256;
  spec.seed = static_cast<uint64_t>(lock.seed);
  spec.eval_batches = lock.validate.eval_batches;
  spec.config = project.config;
  if (lock.model) {
    std::vector<SpecFile> files = PinnedSpecFiles(project.dir, *lock.model, "model");
    // Weights only when the lock pins some: a pinned config.json alone is not a model.
    if (std::any_of(files.begin(), files.end(),
                    [](const SpecFile& f) { return f.name.ends_with(".safetensors"); })) {
      spec.model_files = std::move(files);
      spec.model_dir =
          fs::absolute(ArtifactDir(project.dir, *lock.model, "model")).lexically_normal().string();
    }
  }
  if (lock.dataset && !lock.dataset->token_dtype.empty() && !lock.dataset->files.empty()) {
    spec.data.kind = "shards";
    spec.data.files = PinnedSpecFiles(project.dir, *lock.dataset, "dataset");
    spec.data.bytes_per_token = lock.dataset->token_dtype == "uint16" ? 2 : 4;
  }
  if (spec.data.kind == "synthetic") {
    // Enough windows for every step's micro-batches (at least 64) and the evaluation's.
    const TrainingConfig& t = spec.config.training;
    const int64_t windows = std::max<int64_t>(64, steps * t.grad_accum * t.micro_batch) +
                            spec.eval_batches * t.micro_batch;
    spec.data.seed = spec.seed;
    spec.data.length = static_cast<uint64_t>(windows * t.seq_len + 1);
  }
  return spec;
}

}  // namespace trainlock::validate
