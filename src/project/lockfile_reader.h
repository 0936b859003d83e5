// The reader of a manifest or lock, shared by the files that read its tables (lockfile_loader.h is
// the interface: LoadLockfile). One member reads one table; the tables are read in
// lockfile_loader.cc ([project], the lock's header, the order), spec_artifacts.cc ([model],
// [dataset]), spec_targets.cc ([targets.<t>]), spec_target_python.cc (a target's Python and
// wheels), spec_target_debian.cc (its Debian packages), spec_python.cc ([python]),
// spec_custom_ops.cc ([[custom-ops]]), spec_validate.cc ([validate]), spec_ext.cc
// ([ext.command]) and spec_images.cc ([images.<t>]); lockfile_reader.cc holds the checks several
// of them make. Each reads the fields it knows through TomlFields (which records positions and
// reports type/range errors), applies the rules that depend on several fields, then Finish()
// reports unknown keys.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/diagnostic.h"
#include "base/toml_fields.h"
#include "project/lockfile.h"

namespace trainlock {

inline constexpr int64_t kMaxInt = INT64_MAX;

// Why `url` cannot be a package index or archive root we store, or "" (lockfile_reader.cc).
std::string IndexUrlProblem(std::string_view url);

class LockfileReader {
 public:
  LockfileReader(const std::string& path, LockfileKind kind, Lockfile& spec)
      : path_(path), kind_(kind), spec_(spec) {}

  void Read(const toml::table& root);
  Diagnostics& diags() { return diags_; }

 private:
  bool lock() const { return kind_ == LockfileKind::kLock; }
  TomlFields Fields(const toml::table& t, std::string name) {
    return TomlFields(t, std::move(name), path_, diags_, &spec_.positions);
  }
  // `element` of the array `key` of `f` as a table; nullptr, with an error at its position
  // saying what an entry holds (`shape`), when it is not one.
  const toml::table* EntryTable(TomlFields& f, const toml::node& element, std::string_view key,
                                const char* shape) {
    const toml::table* t = element.as_table();
    if (!t) f.Error(PosOf(element), "'" + f.Qualified(key) + "' entries must be tables", shape);
    return t;
  }
  // The members every pinned download of a target has (a wheel, a .deb): name, version, file
  // and sha256, each required, the hash checked.
  template <class Download>
  void ReadDownload(TomlFields& w, Download& d) {
    d.name = w.String("name", Need::kRequired).value_or("");
    d.version = w.String("version", Need::kRequired).value_or("");
    d.file = w.String("file", Need::kRequired).value_or("");
    auto sha = w.String("sha256", Need::kRequired);
    CheckSha256(w, "sha256", sha);
    d.sha256 = sha.value_or("");
  }
  void CheckRelativePath(TomlFields& f, std::string_view key, const std::string& value,
                         SourcePos pos);
  void CheckImagePath(TomlFields& f, std::string_view key, const std::string& value);
  void CheckSha256(TomlFields& f, std::string_view key, const std::optional<std::string>& v);
  void CheckVersion(TomlFields& f, std::string_view key, const std::optional<std::string>& v);

  void ReadProject(const toml::table& t);
  std::optional<ArtifactSource> ReadArtifact(const toml::table& t, const std::string& name);
  void ReadFiles(TomlFields& f, ArtifactSource& a);
  void ReadTargets(const toml::table& t);
  Target ReadTarget(const toml::table& t, const std::string& target_name);
  void ReadBaseImage(TomlFields& f, Target& target);
  void ReadPython(const toml::table& t);
  void ReadPythonTarget(TomlFields& f, Target& target);
  void ReadWheels(TomlFields& f, Target& target);
  void ReadDebianPackages(TomlFields& f, Target& target);
  void ReadDebs(TomlFields& f, Target& target);
  void ReadCustomOps(const toml::array& a);
  void ReadSmoke(const toml::array& a, const std::string& name, CustomOpLibrary& lib);
  void ReadValidate(const toml::table& t);
  void ReadEngine(TomlFields& f, ValidateSection& v);
  void ReadExt(const toml::table& t);
  void ReadImages(const toml::table& t);
  void ReadGoldenPins(const toml::table& t);

  const std::string& path_;
  LockfileKind kind_;
  Lockfile& spec_;
  Diagnostics diags_;
};

}  // namespace trainlock
