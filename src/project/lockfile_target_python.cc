// A target's Python in a manifest or lock: `python` (the image's interpreter), `python-index`
// (where the closure comes from) and, in a lock, the closure ([[targets.<t>.wheels]]).
#include "project/lockfile_reader.h"

#include <regex>
#include <set>

#include "base/strings.h"

namespace trainlock {

// The image's Python: its version, the indexes its closure comes from and (lock) the closure.
void LockfileReader::ReadPythonTarget(TomlFields& f, Target& target) {
  if (auto python = f.String("python", Need::kOptional)) {
    static const std::regex kPythonVersion(R"(^3\.[0-9]{1,2}(\.[0-9]{1,3})?$)");
    if (!std::regex_match(*python, kPythonVersion)) {
      f.Error(f.Pos("python"),
              "'" + f.Qualified("python") + "' = " + Quoted(*python) + " is not a Python 3 version",
              "the image's interpreter, e.g. \"3.12\"");
    }
    target.python = *python;
  }
  if (auto indexes = f.StringArray("python-index", Need::kOptional)) {
    for (const std::string& url : *indexes) {
      if (std::string why = IndexUrlProblem(url); !why.empty()) {
        f.Error(f.Pos("python-index"),
                "'" + f.Qualified("python-index") + "' entry " + Quoted(url) + " " + why,
                why.find("user:password") != std::string::npos
                    ? "put the credentials in ~/.netrc (machine HOST login USER password PW), "
                      "which lock and pip read; a URL here is copied into the lock, "
                      "requirements.txt and the image"
                    : "name simple API roots, e.g. \"https://pypi.org/simple\"");
      }
    }
    if (indexes->empty()) {
      f.Error(f.Pos("python-index"), "'" + f.Qualified("python-index") + "' is empty",
              "leave it out for the target's default indexes");
    }
    target.python_index = *indexes;
  }
  if (lock()) ReadWheels(f, target);
}

// [[targets.<t>.wheels]]: name, version, file, sha256, index.
void LockfileReader::ReadWheels(TomlFields& f, Target& target) {
  const toml::array* wheels = f.Array("wheels", Need::kOptional);
  if (!wheels) return;
  target.wheels.emplace();
  std::set<std::string> names;
  for (const toml::node& element : *wheels) {
    const toml::table* t = EntryTable(
        f, element, "wheels", "a lock lists each wheel as { name, version, file, sha256, index }");
    if (!t) continue;
    TomlFields w = Fields(*t, f.Qualified("wheels"));
    PythonWheel wheel;
    ReadDownload(w, wheel);
    wheel.index = w.String("index", Need::kRequired).value_or("");
    // Each value goes into requirements.txt and the Containerfile: checked against its grammar
    // here, so that a crafted lock cannot add a line (a newline in a name) or an option.
    static const std::regex kName(R"(^[A-Za-z0-9]([A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$)");
    static const std::regex kVersion(R"(^[A-Za-z0-9][A-Za-z0-9.!+_-]{0,127}$)");
    static const std::regex kWheelFile(R"(^[A-Za-z0-9_.!+-]{1,250}\.whl$)");
    if (!wheel.name.empty() && !std::regex_match(wheel.name, kName)) {
      w.Error(w.Pos("name"), "'" + w.Qualified("name") + "' = " + Quoted(wheel.name) +
                                 " is not a package name (PEP 508)");
    }
    if (!wheel.version.empty() && !std::regex_match(wheel.version, kVersion)) {
      w.Error(w.Pos("version"), "'" + w.Qualified("version") + "' = " + Quoted(wheel.version) +
                                    " is not a version (PEP 440)");
    }
    if (!std::regex_match(wheel.file, kWheelFile) || wheel.file.find("..") != std::string::npos) {
      w.Error(w.Pos("file"),
              "'" + w.Qualified("file") + "' = " + Quoted(wheel.file) + " is not a wheel");
    }
    if (std::string why = IndexUrlProblem(wheel.index); !wheel.index.empty() && !why.empty()) {
      w.Error(w.Pos("index"),
              "'" + w.Qualified("index") + "' = " + Quoted(wheel.index) + " " + why);
    }
    if (!wheel.name.empty() && !names.insert(wheel.name).second) {
      w.Error(w.Pos("name"), "duplicate wheel for " + Quoted(wheel.name),
              "a closure pins one version of each package");
    }
    w.Finish();
    target.wheels->push_back(std::move(wheel));
  }
}

}  // namespace trainlock
