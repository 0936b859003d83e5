// A target's Debian packages in a manifest or lock: `debian-packages`, where they come from
// (apt-archive, apt-snapshot, apt-suite) and, in a lock, their pins ([[targets.<t>.debs]]).
#include "project/lockfile_reader.h"

#include <regex>
#include <set>

#include "base/strings.h"
#include "project/debian_names.h"

namespace trainlock {

// debian-packages and where they come from (apt-archive, apt-snapshot, apt-suite); the lock's
// pins ([[targets.<t>.debs]]). Every name and version is checked against Debian's grammar
// here: each goes into a Containerfile's `apt-get install`.
void LockfileReader::ReadDebianPackages(TomlFields& f, Target& target) {
  if (auto names = f.StringArray("debian-packages", Need::kOptional)) {
    std::set<std::string> seen;
    for (const std::string& name : *names) {
      if (!IsDebianPackageName(name)) {
        f.Error(f.Pos("debian-packages"),
                "'" + f.Qualified("debian-packages") + "' entry " + Quoted(name) +
                    " is not a Debian package name",
                "lower-case letters, digits, + - . (Debian Policy 5.6.1), e.g. \"libtorch1.13\"");
      } else if (!seen.insert(name).second) {
        f.Error(f.Pos("debian-packages"),
                "'" + f.Qualified("debian-packages") + "' names " + Quoted(name) + " twice");
      }
    }
    target.debian_packages = *names;
  }
  if (auto archive = f.String("apt-archive", Need::kOptional)) {
    if (std::string why = IndexUrlProblem(*archive); !why.empty())
      f.Error(f.Pos("apt-archive"),
              "'" + f.Qualified("apt-archive") + "' = " + Quoted(*archive) + " " + why);
    target.apt_archive = *archive;
  }
  if (auto snapshot = f.String("apt-snapshot", Need::kOptional)) {
    if (!IsAptSnapshot(*snapshot)) {
      f.Error(f.Pos("apt-snapshot"),
              "'" + f.Qualified("apt-snapshot") + "' = " + Quoted(*snapshot) +
                  " is not a snapshot time",
              "YYYYMMDDTHHMMSSZ, as snapshot.debian.org names them, e.g. \"20261201T000000Z\"");
    }
    target.apt_snapshot = *snapshot;
  }
  if (auto suite = f.String("apt-suite", Need::kOptional)) {
    static const std::regex kSuite(R"(^[a-z][a-z0-9-]{0,63}$)");
    if (!std::regex_match(*suite, kSuite))
      f.Error(f.Pos("apt-suite"),
              "'" + f.Qualified("apt-suite") + "' = " + Quoted(*suite) + " is not a suite name");
    target.apt_suite = *suite;
  }
  if (lock()) ReadDebs(f, target);
}

// [[targets.<t>.debs]]: name, version, file, sha256.
void LockfileReader::ReadDebs(TomlFields& f, Target& target) {
  const toml::array* debs = f.Array("debs", Need::kOptional);
  if (!debs) return;
  std::set<std::string> names;
  for (const toml::node& element : *debs) {
    const toml::table* t = EntryTable(
        f, element, "debs", "a lock lists each Debian package as { name, version, file, sha256 }");
    if (!t) continue;
    TomlFields w = Fields(*t, f.Qualified("debs"));
    DebianPackage deb;
    ReadDownload(w, deb);
    if (!deb.name.empty() && !IsDebianPackageName(deb.name)) {
      w.Error(w.Pos("name"), "'" + w.Qualified("name") + "' = " + Quoted(deb.name) +
                                 " is not a Debian package name");
    }
    if (!deb.version.empty() && !IsDebianVersion(deb.version)) {
      w.Error(w.Pos("version"), "'" + w.Qualified("version") + "' = " + Quoted(deb.version) +
                                    " is not a Debian version");
    }
    if (!IsDebianPoolFile(deb.file)) {
      w.Error(w.Pos("file"), "'" + w.Qualified("file") + "' = " + Quoted(deb.file) +
                                 " is not a pool/....deb path");
    }
    if (!deb.name.empty() && !names.insert(deb.name).second) {
      w.Error(w.Pos("name"), "duplicate Debian package " + Quoted(deb.name),
              "a lock pins one version of each package");
    }
    w.Finish();
    target.debs.push_back(std::move(deb));
  }
}

}  // namespace trainlock
