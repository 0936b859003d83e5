// The manifest -> lock resolution; see lock_resolver.h.
#include "lock/lock_resolver.h"

#include <stdlib.h>

#include <future>
#include <sstream>

#include "base/canonical.h"
#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/file_stream.h"
#include "base/refs.h"
#include "base/scratch_dir.h"
#include "base/sha256.h"
#include "base/toml_document.h"
#include "base/tree_hash.h"
#include "lock/debian_index.h"
#include "lock/pep508.h"
#include "lock/python_resolver.h"
#include "project/artifact_paths.h"
#include "project/lockfile_loader.h"
#include "project/project.h"
#include "project/round_trip_engines.h"
#include "project/train_config.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

// The existing lock, when present and valid: what --offline may reuse and --check compares.
std::optional<Lockfile> ExistingLock(const fs::path& dir, std::string* lock_sha256) {
  std::error_code ec;
  const fs::path path = dir / kLockFile;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    return LoadLockfile(ReadInputFile(path, path.string()), path.string(), LockfileKind::kLock,
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
                   const std::optional<Lockfile>& old, const LockOptions& o) {
  std::string error;
  std::optional<ImageRef> ref = ParseImageRef(base, &error);
  if (!ref) throw Failure("targets." + target + ".base: " + error, kExitBadInput);
  if (o.offline || o.python_only) {
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
    throw Failure("targets." + target + ".base " + base + " is not pinned and " +
                      (o.offline ? "--offline" : "--python-only") + " does not ask the registry",
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

HubRevision PinHub(const std::string& kind, const ArtifactSource& a,
                   const std::optional<Lockfile>& old, const LockOptions& o) {
  std::vector<std::string> wanted;
  for (const PinnedFile& f : a.files) wanted.push_back(f.path);
  if (o.offline || o.python_only) {
    const std::optional<ArtifactSource>& locked =
        !old ? std::nullopt : (kind == "model" ? old->model : old->dataset);
    if (locked && locked->source == "hf" && locked->repo == a.repo &&
        (a.revision == locked->revision || !IsCommitId(a.revision))) {
      std::vector<std::string> have;
      for (const PinnedFile& f : locked->files) have.push_back(f.path);
      if (have == wanted || wanted.empty()) return {locked->revision, locked->files};
    }
    throw Failure(kind + " " + a.repo + "@" + a.revision +
                      " is not pinned in the existing lock and " +
                      (o.offline ? "--offline" : "--python-only") + " does not ask the Hub",
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

// pins_verified_at_use_from_lock: the existing lock's pin of each local file the manifest
// lists, in the manifest's order; a file the lock does not pin is not re-derivable (exit 1).
std::vector<PinnedFile> LockedLocalFiles(const ArtifactSource& a, const std::string& kind,
                                         const std::optional<Lockfile>& old) {
  const std::optional<ArtifactSource>* locked =
      !old ? nullptr : (kind == "model" ? &old->model : &old->dataset);
  std::vector<PinnedFile> out;
  for (const PinnedFile& f : a.files) {
    const PinnedFile* pin = nullptr;
    if (locked && *locked && (*locked)->source == "local" && (*locked)->repo == a.repo) {
      for (const PinnedFile& l : (*locked)->files)
        if (l.path == f.path) pin = &l;
    }
    if (!pin) {
      throw Failure(kind + " file " + (fs::path(a.repo) / f.path).string() +
                        " is not pinned in the existing lock",
                    kExitVerdict);
    }
    out.push_back(*pin);
  }
  return out;
}

// The Python a target's image runs and where its packages come from, unless the manifest
// says: Debian 12's interpreter for cpu (the base of examples/tiny), Ubuntu 24.04's for the GPU
// targets (the CUDA and ROCm bases of the pilots); PyTorch's index of the torch build first for
// them (torch and its CUDA/ROCm libraries), then PyPI.
struct TargetPython {
  std::string python;
  std::vector<std::string> indexes;
  std::map<std::string, std::string> roots;  // package -> exact version
  int glibc_minor = 36;
};

TargetPython EffectivePython(const Target& t, const Lockfile& manifest) {
  TargetPython p;
  const bool gpu = t.name != "cpu";
  p.python = t.ImagePython();
  p.glibc_minor = gpu ? 39 : 36;
  p.indexes = t.python_index;
  if (p.indexes.empty()) {
    const size_t plus = t.torch.find('+');
    if (gpu && plus != std::string::npos)
      p.indexes.push_back("https://download.pytorch.org/whl/" + t.torch.substr(plus + 1));
    p.indexes.push_back("https://pypi.org/simple");
  }
  // The cpu image's torch is Debian's LibTorch (the validator is C++): no torch wheel.
  if (gpu) p.roots["torch"] = t.torch;
  for (const auto& [name, version] : manifest.python) p.roots[NormalizePackageName(name)] = version;
  return p;
}

// The existing lock's closure for this target, when it was resolved for the same request.
std::optional<std::vector<PythonPin>> ReusableClosure(const std::string& target,
                                                      const TargetPython& want,
                                                      const std::optional<Lockfile>& old) {
  if (!old || !old->targets.count(target)) return std::nullopt;
  const Target& t = old->targets.at(target);
  if (!t.wheels || t.python != want.python || t.python_index != want.indexes) return std::nullopt;
  std::map<std::string, std::string> roots;
  if (target != "cpu") roots["torch"] = t.torch;
  for (const auto& [name, version] : old->python) roots[NormalizePackageName(name)] = version;
  if (roots != want.roots) return std::nullopt;
  std::vector<PythonPin> pins;
  for (const PythonWheel& w : *t.wheels)
    pins.push_back({w.name, w.version, w.file, w.sha256, w.index});
  return pins;
}

// nullopt: left unresolved (--skip-python).
std::optional<std::vector<PythonPin>> PinClosure(const std::string& target, const TargetPython& p,
                                                 const std::optional<Lockfile>& old,
                                                 const LockOptions& o) {
  if (p.roots.empty()) return std::vector<PythonPin>{};
  if (o.offline || o.skip_python) {
    if (auto reused = ReusableClosure(target, p, old)) return reused;
    if (o.skip_python) return std::nullopt;
    throw Failure("targets." + target +
                      ": the Python closure is not pinned in the existing lock "
                      "and --offline does not ask the package index",
                  kExitVerdict);
  }
  ClosureRequest request;
  request.what = "targets." + target;
  request.indexes = p.indexes;
  request.platform = *PythonPlatform::Parse(p.python);
  request.platform.glibc_minor = p.glibc_minor;
  request.roots = p.roots;
  return ResolvePythonClosure(request, o.index);
}

toml::array WheelsArray(const std::vector<PythonPin>& pins) {
  toml::array arr;
  for (const PythonPin& w : pins) {
    arr.push_back(toml::table{{"name", w.name},
                              {"version", w.version},
                              {"file", w.file},
                              {"sha256", w.sha256},
                              {"index", w.index}});
  }
  return arr;
}

std::string EffectiveAptSuite(const Target& t) {
  return t.apt_suite.empty() ? kDefaultAptSuite : t.apt_suite;
}

// A target's Debian packages at exact versions from its archive; offline (and --python-only),
// the existing lock's pins when it pinned the same names from the same source.
std::vector<DebianPackage> PinDebs(const std::string& target, const Target& want,
                                   const std::optional<Lockfile>& old, const LockOptions& o) {
  if (want.debian_packages.empty()) return {};
  if (o.offline || o.python_only) {
    if (old && old->targets.count(target)) {
      const Target& t = old->targets.at(target);
      // Reused as pinned: a pin edited by hand is named by PinConsistencyProblems (CheckDebs).
      if (t.debian_packages == want.debian_packages && t.AptSourceUrl() == want.AptSourceUrl() &&
          EffectiveAptSuite(t) == EffectiveAptSuite(want) &&
          t.debs.size() == want.debian_packages.size())
        return t.debs;
    }
    throw Failure("targets." + target + ".debian-packages: not pinned in the existing lock and " +
                      (o.offline ? "--offline" : "--python-only") + " does not ask the archive",
                  kExitVerdict);
  }
  return ResolveDebianPackages("targets." + target, want, o.index);
}

// Writes the pins and the effective source (archive and suite) into the target's table.
void WriteDebs(const Target& want, const std::vector<DebianPackage>& debs, toml::table& t) {
  if (want.debian_packages.empty()) return;
  std::string archive = want.AptSourceUrl();
  if (!want.apt_snapshot.empty()) archive.resize(archive.size() - want.apt_snapshot.size() - 1);
  t.insert_or_assign("apt-archive", archive);
  t.insert_or_assign("apt-suite", EffectiveAptSuite(want));
  toml::array arr;
  for (const DebianPackage& d : debs) {
    arr.push_back(toml::table{
        {"name", d.name}, {"version", d.version}, {"file", d.file}, {"sha256", d.sha256}});
  }
  t.insert_or_assign("debs", arr);
}

// A prebuilt custom-op library as it is on disk; one that leads out of the project through a
// symlink is bad input naming it (the image would carry another file's bytes). Sources may
// live beside the project ('..', spec_custom_ops.cc), so they are hashed where they are named.
fs::path CustomOpLibraryPath(const fs::path& dir, const std::string& relative) {
  try {
    return ResolveWithinProject(dir, dir / relative, "a prebuilt custom-op library");
  } catch (const ArtifactPathError& e) {
    throw InputError(Diagnostic{e.path().lexically_normal().string(), {}, e.why(), {}});
  }
}

// The existing lock's entry for custom-ops[i] when it pins the same library from the same
// source; nullptr otherwise.
const CustomOpLibrary* LockedCustomOp(size_t i, const CustomOpLibrary& lib,
                                      const std::optional<Lockfile>& old) {
  if (!old || i >= old->custom_ops.size()) return nullptr;
  const CustomOpLibrary& locked = old->custom_ops[i];
  return locked.library == lib.library && locked.source == lib.source ? &locked : nullptr;
}

// [[custom-ops]]: the source tree's hash, or the prebuilt library's when it exists. With
// pins_verified_at_use_from_lock, the lock's source-sha256 (the validator never reads the
// sources, and an image carries only the library built from them; none is not re-derivable,
// exit 1) and the lock's library sha256 (the ops worker verifies the library against it
// before loading it; a library here that the lock does not pin is hashed, so the missing pin
// shows).
void PinCustomOps(const fs::path& dir, const Lockfile& manifest, const std::optional<Lockfile>& old,
                  const LockOptions& o, toml::table& doc, std::vector<std::string>& pinned) {
  toml::array* libs = doc["custom-ops"].as_array();
  for (size_t i = 0; i < manifest.custom_ops.size(); ++i) {
    const CustomOpLibrary& lib = manifest.custom_ops[i];
    toml::table* t = (*libs)[i].as_table();
    const CustomOpLibrary* locked =
        o.pins_verified_at_use_from_lock ? LockedCustomOp(i, lib, old) : nullptr;
    if (!lib.source.empty() && o.pins_verified_at_use_from_lock) {
      if (!locked || locked->source_sha256.empty()) {
        throw Failure("custom-ops[" + std::to_string(i) + "].source: " + lib.source +
                          " is not pinned in the existing lock",
                      kExitVerdict);
      }
      t->insert_or_assign("source-sha256", locked->source_sha256);
    } else if (!lib.source.empty()) {
      try {
        t->insert_or_assign("source-sha256", TreeSha256(dir / lib.source));
      } catch (const std::exception& e) {
        throw Failure("custom-ops[" + std::to_string(i) + "].source: " + e.what(), kExitBadInput);
      }
      pinned.push_back("custom op sources " + lib.source + " hashed");
    } else if (locked && !locked->sha256.empty()) {
      t->insert_or_assign("sha256", locked->sha256);
    } else if (!fs::path(lib.library).is_absolute() && fs::is_regular_file(dir / lib.library)) {
      t->insert_or_assign("sha256", Sha256FileHex(CustomOpLibraryPath(dir, lib.library)));
      pinned.push_back("custom op library " + lib.library + " hashed");
    }
  }
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

namespace {

// A Python engine runs from the files this trainlock ships: the lock pins their bytes
// (validate.engine-sha256), which the image installs and the validator verifies before running.
void PinEngine(const Lockfile& manifest, const std::optional<Lockfile>& old, const LockOptions& o,
               toml::table& doc, std::vector<std::string>& pinned) {
  const RoundTripEngine* engine = FindRoundTripEngine(manifest.validate.engine);
  if (!engine || !engine->python) return;
  // The validator verifies the files it runs against the lock's pin (engine_command.h): a
  // validator of another trainlock than the lock's is not a hand edit.
  const bool locked =
      o.pins_verified_at_use_from_lock && old && old->validate.engine == manifest.validate.engine;
  const std::string sha = locked ? old->validate.engine_sha256 : PythonEngineSha256();
  if (sha.empty()) {
    throw Failure("validate.engine = " + Quoted(manifest.validate.engine) +
                      ": this trainlock was built without the Python engines "
                      "(validators/engines/python)",
                  kExitEnvironment);
  }
  doc["validate"].as_table()->insert_or_assign("engine-sha256", sha);
  pinned.push_back("engine " + std::string(engine->name) + " files " + sha.substr(0, 12));
}

// The lock's network lookups (base digests, Hub revisions, Python closures, Debian
// packages), all started at once by StartLookups and read by CollectLookups.
struct Lookups {
  std::map<std::string, std::future<PinnedBase>> bases;
  std::map<std::string, std::future<HubRevision>> hubs;
  std::map<std::string, TargetPython> pythons;  // read by the closures' lookups
  std::map<std::string, std::future<std::optional<std::vector<PythonPin>>>> closures;
  std::map<std::string, std::future<std::vector<DebianPackage>>> debs;
};

// Starts every lookup of `manifest`; `l`, `old` and `o` must outlive them (CollectLookups).
void StartLookups(const Lockfile& manifest, const std::optional<Lockfile>& old,
                  const LockOptions& o, Lookups& l) {
  for (const auto& [name, target] : manifest.targets) {
    if (target.base.empty()) continue;
    l.bases[name] =
        std::async(std::launch::async, PinBase, name, target.base, std::cref(old), std::cref(o));
  }
  for (const auto& [kind, artifact] :
       {std::pair{"model", &manifest.model}, std::pair{"dataset", &manifest.dataset}}) {
    if (*artifact && (*artifact)->source == "hf") {
      l.hubs[kind] = std::async(std::launch::async, PinHub, std::string(kind), **artifact,
                                std::cref(old), std::cref(o));
    }
  }
  for (const auto& [name, target] : manifest.targets) {
    l.pythons[name] = EffectivePython(target, manifest);
    l.closures[name] = std::async(std::launch::async, PinClosure, name, std::cref(l.pythons[name]),
                                  std::cref(old), std::cref(o));
  }
  for (const auto& [name, target] : manifest.targets) {
    l.debs[name] = std::async(std::launch::async, PinDebs, name, std::cref(target), std::cref(old),
                              std::cref(o));
  }
}

// Writes every lookup's result into `doc` (and a line into `lines`); the failures are
// returned, all of them, so that one run of `trainlock lock` reports every problem.
std::vector<Failure> CollectLookups(const fs::path& dir, const Lockfile& manifest,
                                    const std::optional<Lockfile>& old, const LockOptions& o,
                                    Lookups& l, toml::table& doc, std::vector<std::string>& lines) {
  std::vector<Failure> problems;
  for (auto& [name, future] : l.debs) {
    try {
      const std::vector<DebianPackage> pins = future.get();
      WriteDebs(manifest.targets.at(name), pins, *doc["targets"][name].as_table());
      if (!pins.empty()) {
        lines.push_back("targets." + name + " Debian packages: " + std::to_string(pins.size()) +
                        " from " + manifest.targets.at(name).AptSourceUrl());
      }
    } catch (const Failure& e) {
      problems.push_back(e);
    }
  }
  for (auto& [name, future] : l.closures) {
    try {
      std::optional<std::vector<PythonPin>> pins = future.get();
      toml::table* t = doc["targets"][name].as_table();
      t->insert_or_assign("python", l.pythons[name].python);
      toml::array indexes;
      for (const std::string& index : l.pythons[name].indexes) indexes.push_back(index);
      t->insert_or_assign("python-index", indexes);
      if (pins) {
        t->insert_or_assign("wheels", WheelsArray(*pins));
        lines.push_back("targets." + name + " Python closure: " + std::to_string(pins->size()) +
                        " wheels");
      } else {
        lines.push_back("targets." + name +
                        " Python closure left unresolved (--skip-python): `image generate` "
                        "refuses this target until `trainlock lock` resolves it");
      }
    } catch (const Failure& e) {
      problems.push_back(e);
    }
  }
  try {
    PinCustomOps(dir, manifest, old, o, doc, lines);
  } catch (const Failure& e) {
    problems.push_back(e);
  }
  for (auto& [name, future] : l.bases) {
    try {
      PinnedBase pinned = future.get();
      toml::table* t = doc["targets"][name].as_table();
      t->insert_or_assign("base", pinned.base);
      if (!pinned.platforms.empty()) {
        toml::table platforms;
        for (const auto& [platform, digest] : pinned.platforms) platforms.insert(platform, digest);
        t->insert_or_assign("base-platforms", platforms);
      }
      lines.push_back("targets." + name + ".base = " + pinned.base);
    } catch (const Failure& e) {
      problems.push_back(e);
    }
  }
  for (auto& [kind, future] : l.hubs) {
    try {
      HubRevision pinned = future.get();
      toml::table* t = doc[kind].as_table();
      t->insert_or_assign("revision", pinned.commit);
      t->insert_or_assign("files", FilesArray(pinned.files));
      lines.push_back(kind + " " +
                      (kind == "model" ? manifest.model->repo : manifest.dataset->repo) + " @ " +
                      pinned.commit + " (" + std::to_string(pinned.files.size()) + " files)");
    } catch (const Failure& e) {
      problems.push_back(e);
    }
  }
  for (const auto& [kind, artifact] :
       {std::pair{"model", &manifest.model}, std::pair{"dataset", &manifest.dataset}}) {
    if (*artifact && (*artifact)->source == "local" && !(*artifact)->files.empty()) {
      try {
        const bool locked = o.pins_verified_at_use_from_lock;
        doc[kind].as_table()->insert_or_assign(
            "files", FilesArray(locked ? LockedLocalFiles(**artifact, kind, old)
                                       : HashLocal(dir, **artifact, kind)));
        lines.push_back(std::string(kind) +
                        (locked ? " local files as the lock pins them" : " local files hashed"));
      } catch (const Failure& e) {
        problems.push_back(e);
      }
    }
  }
  return problems;
}

// `url` sources load (the lock format has room for them) but nothing resolves them yet: a lock
// written from one would pin file names without hashes, so it is refused at its field.
void RefuseUrlSources(const Lockfile& manifest) {
  for (const auto& [kind, artifact] :
       {std::pair{"model", &manifest.model}, std::pair{"dataset", &manifest.dataset}}) {
    if (!*artifact || (*artifact)->source != "url") continue;
    const std::string field = std::string(kind) + ".source";
    throw InputError(Diagnostic{manifest.path, manifest.Pos(field),
                                "'" + field + "' = 'url' is not resolved by `trainlock lock` yet",
                                "download the files into the project and use source = \"local\""});
  }
}

// A custom op's sources are hashed from the project directory (`source` is relative to it, and
// may reach beside it: "../ops"): a directory that is not there, as in a copied example, is
// refused at the manifest's field, before anything is looked up. Not where the lock's own pin
// is used (the validator never reads the sources).
void RefuseMissingCustomOpSources(const fs::path& dir, const Lockfile& manifest,
                                  const LockOptions& o) {
  if (o.pins_verified_at_use_from_lock) return;
  for (size_t i = 0; i < manifest.custom_ops.size(); ++i) {
    const std::string& source = manifest.custom_ops[i].source;
    std::error_code ec;
    if (source.empty() || fs::is_directory(dir / source, ec)) continue;
    const std::string field = "custom-ops[" + std::to_string(i) + "].source";
    const fs::path where = (dir / source).lexically_normal();
    throw InputError(Diagnostic{
        manifest.path, manifest.Pos(field),
        field + ": " + source + ": " +
            (fs::exists(dir / source, ec) ? "not a directory" : "no such directory") + " (" +
            where.string() + ")",
        "source is relative to the project directory: bring the sources there, or point source "
        "at them"});
  }
}

// Built images are outputs recorded in the lock: a re-lock keeps them.
void KeepBuiltImages(const std::optional<Lockfile>& old, toml::table& doc) {
  if (!old || old->images.empty()) return;
  toml::table images;
  for (const auto& [target, image] : old->images) {
    toml::table kept{{"ref", image.ref}, {"digest", image.digest}};
    if (image.source_date_epoch) kept.insert("source-date-epoch", *image.source_date_epoch);
    if (!image.validator_sha256.empty()) kept.insert("validator-sha256", image.validator_sha256);
    images.insert(target, std::move(kept));
  }
  doc.insert_or_assign("images", images);
}

// Pinned golden digests are outputs too: a re-lock keeps them (a pin whose key names another
// build identity no longer matches any report, and does no harm).
void KeepGoldenPins(const std::optional<Lockfile>& old, toml::table& doc) {
  if (!old || old->golden.empty()) return;
  toml::table golden;
  for (const auto& [key_sha256, pin] : old->golden) {
    toml::table kept{{"digest", pin.digest}};
    for (const auto& [name, value] : pin.key) kept.insert(name, value);
    golden.insert(key_sha256, std::move(kept));
  }
  doc.insert_or_assign("golden", golden);
}

}  // namespace

ResolvedLock ResolveLock(const fs::path& dir, const LockOptions& options) {
  LockOptions o = options;
  // Wheels downloaded to read their metadata (an index without PEP 658 files) go here.
  ScratchDir scratch("trainlock-wheels");
  if (o.index.scratch.empty()) o.index.scratch = scratch.path();
  const fs::path manifest_path = dir / kManifestFile;
  const std::string manifest_text = ReadInputFile(manifest_path, manifest_path.string());
  std::string manifest_sha;
  Lockfile manifest =
      LoadLockfile(manifest_text, manifest_path.string(), LockfileKind::kManifest, &manifest_sha);
  RefuseUrlSources(manifest);
  RefuseMissingCustomOpSources(dir, manifest, o);
  const fs::path config_path = dir / manifest.config;
  const std::string config_text = ReadInputFile(config_path, config_path.string());
  // The lock pins the config by its hash; one that does not load is refused before it is
  // pinned, with its position, as `check` and `image generate` would refuse it later.
  LoadTrainConfig(config_text, config_path.string());
  ResolvedLock out;
  std::optional<Lockfile> old = ExistingLock(dir, &out.existing_lock_sha256);
  toml::table doc = ParseTomlDocument(manifest_text, manifest_path.string());

  // Every lookup at once; failures are collected so that all are reported.
  Lookups lookups;
  StartLookups(manifest, old, o, lookups);
  std::vector<Failure> problems = CollectLookups(dir, manifest, old, o, lookups, doc, out.pinned);
  if (!problems.empty()) throw AllProblems(problems);
  PinEngine(manifest, old, o, doc, out.pinned);
  doc.insert_or_assign("lock-version", 1);
  doc.insert_or_assign("manifest-sha256", manifest_sha);
  doc["project"].as_table()->insert_or_assign("config-sha256", Sha256Hex(config_text));
  KeepBuiltImages(old, doc);
  KeepGoldenPins(old, doc);
  std::ostringstream text;
  text
      << "# trainlock.lock: written by `trainlock lock` from trainlock.toml; do not edit by hand.\n"
      << "# Identity (lock-sha256): `trainlock hash .`\n"
      << doc << "\n";
  out.text = text.str();
  std::string lock_sha;
  LoadLockfile(out.text, (dir / kLockFile).string(), LockfileKind::kLock,
               &lock_sha);  // proves it loads
  out.lock_sha256 = lock_sha;
  return out;
}

}  // namespace trainlock
