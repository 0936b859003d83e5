// The lock's pins against what follows from the manifest offline; see pin_consistency.h.
#include "lock/pin_consistency.h"

#include <map>
#include <set>

#include "base/diagnostic.h"
#include "base/refs.h"
#include "lock/pep440.h"
#include "lock/pep508.h"
#include "lock/wheel_tags.h"

namespace trainlock {
namespace {

using Problems = std::vector<LockFieldDifference>;

std::string WheelField(const std::string& target, size_t i, const std::string& key) {
  return "targets." + target + ".wheels[" + std::to_string(i) + "]" +
         (key.empty() ? "" : "." + key);
}

// A wheel's name and version against its file name, which names the distribution and version.
void CheckWheelFile(const std::string& target, size_t i, const PythonWheel& w, Problems& out) {
  const std::optional<WheelName> file = ParseWheelName(w.file);
  if (!file) {
    out.push_back({WheelField(target, i, "file"), "", "",
                   Quoted(w.file) + " is not a wheel's "
                                    "file name"});
    return;
  }
  if (NormalizePackageName(w.name) != file->name) {
    out.push_back({WheelField(target, i, "name"), "", "",
                   Quoted(w.name) + " but its file " + w.file + " is " + file->name});
  }
  const std::optional<PyVersion> stated = ParsePyVersion(w.version);
  const std::optional<PyVersion> spelled = ParsePyVersion(file->version);
  if (!stated || !spelled || ComparePyVersions(*stated, *spelled) != 0) {
    out.push_back({WheelField(target, i, "version"), "", "",
                   Quoted(w.version) + " but its file " + w.file + " is version " + file->version});
  }
}

// Every root (torch, [python]) has exactly one wheel, at a version its pin admits.
void CheckRoots(const std::string& target, const std::vector<PythonWheel>& wheels,
                const std::map<std::string, std::pair<std::string, std::string>>& roots,
                Problems& out) {
  std::map<std::string, std::vector<size_t>> by_name;
  for (size_t i = 0; i < wheels.size(); ++i)
    by_name[NormalizePackageName(wheels[i].name)].push_back(i);
  for (const auto& [name, indexes] : by_name) {
    if (indexes.size() > 1) {
      out.push_back({WheelField(target, indexes[1], "name"), "", "",
                     Quoted(name) + " is locked more than once: a closure installs one "
                                    "version of each package"});
    }
  }
  for (const auto& [name, pin] : roots) {
    const auto& [version, who] = pin;
    auto found = by_name.find(name);
    if (found == by_name.end()) {
      out.push_back({"targets." + target + ".wheels", "", "",
                     "no wheel of " + name + ", which " + who + " pins at " + Quoted(version)});
      continue;
    }
    const size_t i = found->second.front();
    std::string error;
    const std::optional<PySpecifierSet> want = PySpecifierSet::Parse("==" + version, &error);
    const std::optional<PyVersion> have = ParsePyVersion(wheels[i].version);
    if (!want || !have || !want->Contains(*have)) {
      out.push_back(
          {WheelField(target, i, "version"), "", "",
           Quoted(wheels[i].version) + " but " + who + " pins " + name + " at " + Quoted(version)});
    }
  }
}

// A base with base-platforms was pinned to an index, which lists those manifests.
void CheckBase(const std::string& target, const Target& t, Problems& out) {
  std::string error;
  const std::optional<ImageRef> ref = ParseImageRef(t.base, &error);
  if (!ref || ref->digest.empty()) return;
  for (const auto& [platform, digest] : t.base_platforms) {
    if (digest != ref->digest) continue;
    out.push_back({"targets." + target + ".base", "", "",
                   "its digest " + ref->digest.substr(0, 19) + "... is base-platforms' " +
                       platform +
                       " manifest, not the index that lists it (the lock pins the index "
                       "digest the tag resolved to)"});
  }
}

// Each pinned .deb is a package the target's debian-packages names, every name has one, and
// its pool file is that package at that version ("pool/.../<name>_<version>_<arch>.deb", the
// epoch left out as Debian's file names leave it): a renamed pin would install another package.
void CheckDebs(const std::string& target, const Target& t, Problems& out) {
  std::set<std::string> named(t.debian_packages.begin(), t.debian_packages.end()), pinned;
  for (size_t i = 0; i < t.debs.size(); ++i) {
    const DebianPackage& deb = t.debs[i];
    const std::string field = "targets." + target + ".debs[" + std::to_string(i) + "]";
    pinned.insert(deb.name);
    if (!named.contains(deb.name)) {
      out.push_back({field + ".name", "", "",
                     Quoted(deb.name) + " is not among targets." + target + ".debian-packages"});
      continue;
    }
    const size_t colon = deb.version.find(':');
    const std::string version =
        colon == std::string::npos ? deb.version : deb.version.substr(colon + 1);
    const std::string base = deb.file.substr(deb.file.rfind('/') + 1);
    if (!base.starts_with(deb.name + "_" + version + "_")) {
      out.push_back({field + ".file", "", "",
                     Quoted(deb.file) + " is not " + deb.name + " at " + Quoted(deb.version)});
    }
  }
  for (const std::string& name : named) {
    if (!pinned.contains(name))
      out.push_back({"targets." + target + ".debs", "", "", "no pin of " + Quoted(name)});
  }
}

}  // namespace

std::vector<LockFieldDifference> PinConsistencyProblems(const Lockfile& lock,
                                                        const Lockfile& manifest) {
  Problems out;
  for (const auto& [name, t] : lock.targets) {
    CheckBase(name, t, out);
    CheckDebs(name, t, out);
    auto wanted = manifest.targets.find(name);
    if (!t.wheels || wanted == manifest.targets.end()) continue;       // the re-derivation says so
    std::map<std::string, std::pair<std::string, std::string>> roots;  // name -> version, who
    // As the resolver's roots (lock_resolver.cc): the cpu image's torch is Debian's LibTorch.
    if (name != "cpu" && !wanted->second.torch.empty())
      roots["torch"] = {wanted->second.torch, "targets." + name + ".torch"};
    for (const auto& [package, version] : manifest.python)
      roots[NormalizePackageName(package)] = {version, "[python]"};
    for (size_t i = 0; i < t.wheels->size(); ++i) CheckWheelFile(name, i, (*t.wheels)[i], out);
    CheckRoots(name, *t.wheels, roots, out);
  }
  return out;
}

namespace {

// The Hub's part of PinsNotCheckedOffline for the manifest's model or dataset.
void HubPinsNotChecked(const std::string& kind, const std::optional<ArtifactSource>& a,
                       std::vector<std::string>& out) {
  if (!a || a->source != "hf") return;
  if (IsCommitId(a->revision)) {
    out.push_back("the hashes of the " + kind + "'s Hub files");
  } else {
    out.push_back("the commit the " + kind + "'s revision " + Quoted(a->revision) +
                  " resolves to on the Hub, and its files' hashes");
  }
}

}  // namespace

std::vector<std::string> PinsNotCheckedOffline(const Lockfile& lock, const Lockfile& manifest) {
  std::vector<std::string> out;
  for (const auto& [name, t] : lock.targets) {
    if (t.wheels && !t.wheels->empty())
      out.push_back("the dependencies and hashes of " + name +
                    "'s wheels (a deleted dependency wheel)");
    auto wanted = manifest.targets.find(name);
    std::string error;
    const std::optional<ImageRef> base = wanted == manifest.targets.end()
                                             ? std::nullopt
                                             : ParseImageRef(wanted->second.base, &error);
    if (base && base->digest.empty()) {
      out.push_back("the base digest of " + name + "'s tag-only base" +
                    (t.base_platforms.empty() ? "" : " and its platform manifests"));
    }
    if (!t.debs.empty()) out.push_back("the versions and hashes of " + name + "'s Debian packages");
  }
  HubPinsNotChecked("model", manifest.model, out);
  HubPinsNotChecked("dataset", manifest.dataset, out);
  return out;
}

}  // namespace trainlock
