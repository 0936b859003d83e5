// The manifest -> lock resolution; see lock_resolver.h.
#include "lock/lock_resolver.h"

#include <future>
#include <sstream>

#include "base/canonical.h"
#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/file_stream.h"
#include "base/refs.h"
#include "base/sha256.h"
#include "base/toml_document.h"
#include "project/artifact_paths.h"
#include "project/project.h"
#include "project/spec_loader.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

// The existing lock, when present and valid: what --offline may reuse and --check compares.
std::optional<Spec> ExistingLock(const fs::path& dir, std::string* lock_sha256) {
  std::error_code ec;
  const fs::path path = dir / kLockFile;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    return LoadSpec(ReadInputFile(path, path.string()), path.string(), SpecKind::kLock,
                    lock_sha256);
  } catch (const std::exception&) {
    lock_sha256->clear();
    return std::nullopt;  // an invalid lock is replaced, not reused
  }
}

struct PinnedBase {
  std::string base;
  std::map<std::string, std::string> platforms;
};

PinnedBase PinBase(const std::string& target, const std::string& base,
                   const std::optional<Spec>& old, const LockOptions& o) {
  std::string error;
  std::optional<ImageRef> ref = ParseImageRef(base, &error);
  if (!ref) throw Failure("targets." + target + ".base: " + error, kExitBadInput);
  if (o.offline) {
    // Reuse the existing lock's pin for the same name and tag (or the same digest).
    if (old) {
      auto it = old->targets.find(target);
      if (it != old->targets.end()) {
        std::optional<ImageRef> locked = ParseImageRef(it->second.base, &error);
        if (locked && locked->Name() == ref->Name() && locked->tag == ref->tag &&
            (ref->digest.empty() || ref->digest == locked->digest)) {
          return {it->second.base, it->second.base_platforms};
        }
      }
    }
    if (ref->pinned()) return {ref->ToString(), {}};
    throw Failure("targets." + target + ".base " + base +
                      " is not pinned and --offline does not ask the registry",
                  kExitVerdict);
  }
  try {
    ResolvedImage image = ResolveImage(*ref, o.registry);
    ImageRef pinned = *ref;
    pinned.digest = image.digest;
    return {pinned.ToString(), image.platforms};
  } catch (const Failure& e) {
    throw Failure("targets." + target + ".base: " + e.what(), e.exit_code());
  }
}

HubRevision PinHub(const std::string& kind, const ArtifactSource& a, const std::optional<Spec>& old,
                   const LockOptions& o) {
  std::vector<std::string> wanted;
  for (const PinnedFile& f : a.files) wanted.push_back(f.path);
  if (o.offline) {
    const std::optional<ArtifactSource>& locked =
        !old ? std::nullopt : (kind == "model" ? old->model : old->dataset);
    if (locked && locked->source == "hf" && locked->repo == a.repo &&
        (a.revision == locked->revision || !IsCommitId(a.revision))) {
      std::vector<std::string> have;
      for (const PinnedFile& f : locked->files) have.push_back(f.path);
      if (have == wanted || wanted.empty()) return {locked->revision, locked->files};
    }
    throw Failure(kind + " " + a.repo + "@" + a.revision +
                      " is not pinned in the existing lock and --offline does not ask the Hub",
                  kExitVerdict);
  }
  return ResolveHubRevision(kind, a.repo, a.revision, wanted, o.hub);
}

// A local file that is missing, not a regular file or (through a symlink) outside the project
// is bad input: "path: error: why".
std::vector<PinnedFile> HashLocal(const fs::path& dir, const ArtifactSource& a,
                                  const std::string& kind) {
  std::vector<PinnedFile> out;
  for (const PinnedFile& f : a.files) {
    const std::string display = (dir / a.repo / f.path).lexically_normal().string();
    uint64_t size = 0;
    std::string sha;
    try {
      sha = Sha256FileHex(ResolvePinnedFile(dir, a, kind, f.path), &size);
    } catch (const ArtifactPathError& e) {
      throw InputError(Diagnostic{display, {}, e.why(), {}});
    } catch (const StreamError& e) {
      throw InputError(Diagnostic{display, {}, e.why(), {}});
    }
    out.push_back({f.path, sha, size});
  }
  return out;
}

// One Failure naming every problem, one per line. Content that did not match its digest (1)
// outranks a registry that could not answer (3). The caller writes the lock only from a
// complete resolution, which the note tells the user.
Failure AllProblems(const std::vector<Failure>& problems) {
  std::string all;
  ExitCode code = kExitOk;
  for (const Failure& p : problems) {
    all += (all.empty() ? "" : "\n") + std::string(p.what());
    if (p.exit_code() == kExitVerdict || code == kExitOk) code = p.exit_code();
  }
  return Failure(all, code, {"nothing written"});
}

toml::array FilesArray(const std::vector<PinnedFile>& files) {
  toml::array arr;
  for (const PinnedFile& f : files) {
    arr.push_back(toml::table{
        {"path", f.path}, {"sha256", f.sha256}, {"size", static_cast<int64_t>(f.size)}});
  }
  return arr;
}

}  // namespace

std::string LockFileText(const toml::table& lock) {
  std::ostringstream text;
  text
      << "# trainlock.lock: written by `trainlock lock` from trainlock.toml; do not edit by hand.\n"
      << "# Identity (lock-sha256): `trainlock hash .`\n"
      << lock << "\n";
  return text.str();
}

ResolvedLock ResolveLock(const fs::path& dir, const LockOptions& o) {
  const fs::path manifest_path = dir / kManifestFile;
  const std::string manifest_text = ReadInputFile(manifest_path, manifest_path.string());
  std::string manifest_sha;
  Spec manifest =
      LoadSpec(manifest_text, manifest_path.string(), SpecKind::kManifest, &manifest_sha);
  const fs::path config_path = dir / manifest.config;
  const std::string config_text = ReadInputFile(config_path, config_path.string());
  ResolvedLock out;
  std::optional<Spec> old = ExistingLock(dir, &out.existing_lock_sha256);
  toml::table doc = ParseTomlDocument(manifest_text, manifest_path.string());

  // Every lookup at once; failures are collected so that all are reported.
  std::map<std::string, std::future<PinnedBase>> bases;
  for (const auto& [name, target] : manifest.targets) {
    if (target.base.empty()) continue;
    bases[name] =
        std::async(std::launch::async, PinBase, name, target.base, std::cref(old), std::cref(o));
  }
  std::map<std::string, std::future<HubRevision>> hubs;
  for (const auto& [kind, artifact] :
       {std::pair{"model", &manifest.model}, std::pair{"dataset", &manifest.dataset}}) {
    if (*artifact && (*artifact)->source == "hf") {
      hubs[kind] = std::async(std::launch::async, PinHub, std::string(kind), **artifact,
                              std::cref(old), std::cref(o));
    }
  }
  std::vector<Failure> problems;
  for (auto& [name, future] : bases) {
    try {
      PinnedBase pinned = future.get();
      toml::table* t = doc["targets"][name].as_table();
      t->insert_or_assign("base", pinned.base);
      if (!pinned.platforms.empty()) {
        toml::table platforms;
        for (const auto& [platform, digest] : pinned.platforms) platforms.insert(platform, digest);
        t->insert_or_assign("base-platforms", platforms);
      }
      out.pinned.push_back("targets." + name + ".base = " + pinned.base);
    } catch (const Failure& e) {
      problems.push_back(e);
    }
  }
  for (auto& [kind, future] : hubs) {
    try {
      HubRevision pinned = future.get();
      toml::table* t = doc[kind].as_table();
      t->insert_or_assign("revision", pinned.commit);
      t->insert_or_assign("files", FilesArray(pinned.files));
      out.pinned.push_back(
          kind + " " + (kind == "model" ? manifest.model->repo : manifest.dataset->repo) + " @ " +
          pinned.commit + " (" + std::to_string(pinned.files.size()) + " files)");
    } catch (const Failure& e) {
      problems.push_back(e);
    }
  }
  for (const auto& [kind, artifact] :
       {std::pair{"model", &manifest.model}, std::pair{"dataset", &manifest.dataset}}) {
    if (*artifact && (*artifact)->source == "local" && !(*artifact)->files.empty()) {
      try {
        doc[kind].as_table()->insert_or_assign("files",
                                               FilesArray(HashLocal(dir, **artifact, kind)));
        out.pinned.push_back(std::string(kind) + " local files hashed");
      } catch (const Failure& e) {
        problems.push_back(e);
      }
    }
  }
  if (!problems.empty()) throw AllProblems(problems);
  doc.insert_or_assign("lock-version", 1);
  doc.insert_or_assign("manifest-sha256", manifest_sha);
  doc["project"].as_table()->insert_or_assign("config-sha256", Sha256Hex(config_text));
  if (old && !old->images.empty()) {
    // Built images are outputs recorded in the lock: a re-lock keeps them.
    toml::table images;
    for (const auto& [target, image] : old->images)
      images.insert(target, toml::table{{"ref", image.ref}, {"digest", image.digest}});
    doc.insert_or_assign("images", images);
  }
  std::ostringstream text;
  text
      << "# trainlock.lock: written by `trainlock lock` from trainlock.toml; do not edit by hand.\n"
      << "# Identity (lock-sha256): `trainlock hash .`\n"
      << doc << "\n";
  out.text = text.str();
  std::string lock_sha;
  LoadSpec(out.text, (dir / kLockFile).string(), SpecKind::kLock, &lock_sha);  // proves it loads
  out.lock_sha256 = lock_sha;
  return out;
}

}  // namespace trainlock
