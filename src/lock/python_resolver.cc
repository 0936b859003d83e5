// The Python closure resolver; see python_resolver.h.
#include "lock/python_resolver.h"

#include <algorithm>
#include <deque>
#include <set>

#include "base/diagnostic.h"
#include "base/strings.h"
#include "lock/pep508.h"

namespace trainlock {
namespace {

// Re-picking rounds before giving up: each round only re-picks packages a constraint excludes.
constexpr int kMaxRounds = 64;

struct Candidate {
  PyVersion version;
  std::string version_text;
  IndexFile file;  // the preferred wheel of this version for the platform
  int rank = 0;
};

struct Constraint {
  PySpecifierSet specifier;
  std::string from;  // "name version" of the package that requires it, or the manifest
};

class ClosureResolver {
 public:
  ClosureResolver(const ClosureRequest& request, const IndexOptions& options)
      : r_(request), o_(options), env_(request.platform.Markers()) {}

  std::vector<PythonPin> Run() {
    for (int round = 0; round < kMaxRounds; ++round) {
      if (Walk()) return Pins();
    }
    Fail(r_.what + ": the Python closure did not settle after " + std::to_string(kMaxRounds) +
         " rounds of re-picking");
  }

 private:
  [[noreturn]] void Fail(const std::string& why) const { throw Failure(why, kExitVerdict); }

  // One walk from the roots over the current picks; true when every pick satisfied every
  // constraint on it (the closure is final).
  bool Walk() {
    constraints_.clear();
    std::map<std::string, std::set<std::string>> extras;
    std::map<std::string, std::set<std::string>> expanded;  // name -> extras it was walked with
    std::deque<std::string> queue;
    for (const auto& [name, version] : r_.roots) {
      const std::string n = NormalizePackageName(name);
      std::string error;
      // A pin the manifest loader let through but PEP 440 cannot read (a number beyond an
      // int64_t) is refused here, never dereferenced.
      std::optional<PySpecifierSet> pin = PySpecifierSet::Parse("==" + version, &error);
      if (!pin) {
        throw Failure(r_.what + ": " + name + " = " + Quoted(version) + ": " + error,
                      kExitBadInput);
      }
      constraints_[n].push_back({*pin, "the manifest"});
      queue.push_back(n);
    }
    bool settled = true;
    while (!queue.empty()) {
      const std::string name = queue.front();
      queue.pop_front();
      if (expanded.count(name) && expanded[name] == extras[name]) continue;
      expanded[name] = extras[name];
      auto pick = picks_.find(name);
      if (pick == picks_.end() || !Satisfies(name, pick->second)) {
        if (pick != picks_.end()) settled = false;
        pick = picks_.insert_or_assign(name, Choose(name)).first;
      }
      const Candidate& c = pick->second;
      for (const std::string& text : Metadata(c).requires_dist) {
        std::string error;
        auto req = ParsePyRequirement(text, &error);
        if (!req) Fail(r_.what + ": " + c.file.file + ": Requires-Dist " + error);
        if (!EvaluateMarker(req->marker, env_, extras[name])) continue;
        if (!req->url.empty()) {
          Fail(r_.what + ": " + name + " " + c.version_text + " requires " + req->name +
               " from a URL (" + req->url + "), which no index serves");
        }
        constraints_[req->name].push_back({req->specifier, name + " " + c.version_text});
        const size_t before = extras[req->name].size();
        extras[req->name].insert(req->extras.begin(), req->extras.end());
        if (!expanded.count(req->name) || extras[req->name].size() != before)
          queue.push_back(req->name);
      }
    }
    // A pick made before a later constraint arrived may not satisfy it: re-pick next round.
    for (auto it = picks_.begin(); it != picks_.end();) {
      if (!expanded.count(it->first)) {
        it = picks_.erase(it);  // no longer required by anything
      } else if (!Satisfies(it->first, it->second)) {
        settled = false;
        picks_[it->first] = Choose(it->first);
        ++it;
      } else {
        ++it;
      }
    }
    return settled;
  }

  bool Satisfies(const std::string& name, const Candidate& c) const {
    auto it = constraints_.find(name);
    if (it == constraints_.end()) return true;
    return std::all_of(it->second.begin(), it->second.end(),
                       [&](const Constraint& k) { return k.specifier.Contains(c.version); });
  }

  std::string Describe(const std::string& name) const {
    std::string out;
    for (const Constraint& k : constraints_.at(name)) {
      out += (out.empty() ? "" : ", ") +
             (k.specifier.empty() ? std::string("any version") : k.specifier.ToString()) +
             " (from " + k.from + ")";
    }
    return out;
  }

  // The newest candidate that satisfies every constraint on `name` known so far.
  Candidate Choose(const std::string& name) {
    const std::vector<Candidate>& all = Candidates(name);
    const std::vector<Constraint>& cs = constraints_[name];
    const bool pre = std::any_of(
        cs.begin(), cs.end(), [](const Constraint& k) { return k.specifier.AllowsPreReleases(); });
    const bool root = r_.roots.count(name) > 0;
    for (bool yanked : {false, true}) {
      if (yanked && !root) break;  // PEP 592: a yanked file only for an exact pin
      for (const Candidate& c : all) {
        if (c.file.yanked != yanked || (c.version.IsPreRelease() && !pre)) continue;
        if (Satisfies(name, c)) return c;
      }
    }
    std::string have;
    for (const Candidate& c : all) have += (have.empty() ? "" : ", ") + c.version_text;
    Fail(r_.what + ": no version of " + name + " satisfies " + Describe(name) +
         (have.empty() ? "; the index has no wheel of it for " + r_.platform.Describe()
                       : "; wheels for " + r_.platform.Describe() + ": " + have));
  }

  // The project's versions with a wheel for the platform, newest first, from the first index
  // that has the project.
  const std::vector<Candidate>& Candidates(const std::string& name) {
    auto cached = candidates_.find(name);
    if (cached != candidates_.end()) return cached->second;
    for (const std::string& index : r_.indexes) {
      auto files = ListIndexFiles(index, name, o_);
      if (!files) continue;
      index_[name] = index;
      return candidates_[name] = Compatible(name, *files);
    }
    const std::string asked = JoinStrings(r_.indexes, ", ");
    Fail(r_.what + ": no index has " + name + " (required by " + constraints_[name].front().from +
         "; asked " + asked + ")");
  }

  std::vector<Candidate> Compatible(const std::string& name, std::vector<IndexFile>& files) {
    std::map<std::string, Candidate> best;  // by normalised version
    for (IndexFile& f : files) {
      auto wheel = ParseWheelName(f.file);
      if (!wheel || wheel->name != name) continue;  // sdists are never built
      auto version = ParsePyVersion(wheel->version);
      auto rank = WheelTagRank(*wheel, r_.platform);
      if (!version || !rank) continue;
      if (!f.requires_python.empty()) {
        std::string error;
        auto python = PySpecifierSet::Parse(f.requires_python, &error);
        auto full = ParsePyVersion(env_.at("python_full_version"));
        if (!python || !python->Contains(*full)) continue;
      }
      const std::string key = version->ToString();
      auto it = best.find(key);
      if (it == best.end() || *rank < it->second.rank ||
          (*rank == it->second.rank && f.file < it->second.file.file)) {
        best[key] = Candidate{*version, wheel->version, f, *rank};
      }
    }
    std::vector<Candidate> out;
    for (auto& [key, c] : best) out.push_back(c);
    std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
      return ComparePyVersions(a.version, b.version) > 0;
    });
    return out;
  }

  const CoreMetadata& Metadata(const Candidate& c) {
    auto it = metadata_.find(c.file.url);
    if (it != metadata_.end()) return it->second;
    IndexFile file = c.file;
    CoreMetadata m = FetchCoreMetadata(file, o_);
    if (!file.sha256.empty()) hashes_[c.file.url] = file.sha256;
    auto version = ParsePyVersion(m.version);
    if (!version || ComparePyVersions(*version, c.version) != 0 ||
        NormalizePackageName(m.name) != NormalizePackageName(ParseWheelName(c.file.file)->name)) {
      Fail(r_.what + ": " + c.file.file + ": its METADATA names " + m.name + " " + m.version +
           ", not the file's package and version");
    }
    return metadata_[c.file.url] = m;
  }

  std::vector<PythonPin> Pins() {
    std::vector<PythonPin> out;
    for (const auto& [name, c] : picks_) {
      std::string sha256 = c.file.sha256;
      if (sha256.empty() && hashes_.count(c.file.url)) sha256 = hashes_[c.file.url];
      if (sha256.empty()) sha256 = HashIndexFile(c.file, o_);
      out.push_back({name, c.version_text, c.file.file, sha256, index_[name]});
    }
    return out;
  }

  const ClosureRequest& r_;
  const IndexOptions& o_;
  const MarkerEnvironment env_;
  std::map<std::string, std::vector<Constraint>> constraints_;
  std::map<std::string, Candidate> picks_;
  std::map<std::string, std::vector<Candidate>> candidates_;
  std::map<std::string, std::string> index_;
  std::map<std::string, CoreMetadata> metadata_;
  std::map<std::string, std::string> hashes_;  // url -> sha256 learnt by downloading
};

}  // namespace

std::vector<PythonPin> ResolvePythonClosure(const ClosureRequest& request,
                                            const IndexOptions& options) {
  return ClosureResolver(request, options).Run();
}

}  // namespace trainlock
