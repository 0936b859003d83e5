// Manifest and lock schema; see lockfile_loader.h and docs/formats.md. This file reads the
// document's top level (the lock's header: lock-version, manifest-sha256), hands each table to its
// reader (lockfile_reader.h lists which file reads which) and reads [project].
#include "project/lockfile_loader.h"

#include <regex>

#include "base/canonical.h"
#include "base/strings.h"
#include "base/toml_document.h"
#include "project/lockfile_reader.h"

namespace trainlock {

SourcePos Lockfile::Pos(const std::string& dotted) const {
  auto it = positions.find(dotted);
  return it == positions.end() ? SourcePos{} : it->second;
}

void LockfileReader::Read(const toml::table& root) {
  TomlFields f = Fields(root, "");
  if (lock()) {
    if (auto v = f.Integer("lock-version", Need::kRequired, 1, INT64_MAX)) {
      if (*v > kLockVersion) {
        f.Error(f.Pos("lock-version"),
                "lock-version " + std::to_string(*v) + " is newer than this trainlock reads (" +
                    std::to_string(kLockVersion) + ")",
                "upgrade trainlock, or re-run `trainlock lock` with this one");
      }
      spec_.lock_version = *v;
    }
    auto sha = f.String("manifest-sha256", Need::kRequired);
    CheckSha256(f, "manifest-sha256", sha);
    spec_.manifest_sha256 = sha.value_or("");
  }
  if (const toml::table* t = f.Table("project", Need::kRequired)) ReadProject(*t);
  if (const toml::table* t = f.Table("model", Need::kOptional)) {
    spec_.model = ReadArtifact(*t, "model");
  }
  if (const toml::table* t = f.Table("dataset", Need::kOptional)) {
    spec_.dataset = ReadArtifact(*t, "dataset");
  }
  if (const toml::table* t = f.Table("targets", Need::kRequired)) ReadTargets(*t);
  if (const toml::table* t = f.Table("python", Need::kOptional)) ReadPython(*t);
  if (const toml::array* a = f.Array("custom-ops", Need::kOptional)) ReadCustomOps(*a);
  if (const toml::table* t = f.Table("validate", Need::kOptional)) ReadValidate(*t);
  if (const toml::table* t = f.Table("ext", Need::kOptional)) ReadExt(*t);
  if (lock()) {
    if (const toml::table* t = f.Table("images", Need::kOptional)) ReadImages(*t);
    if (const toml::table* t = f.Table("golden", Need::kOptional)) ReadGoldenPins(*t);
  }
  f.Finish();
}

void LockfileReader::ReadProject(const toml::table& t) {
  TomlFields f = Fields(t, "project");
  if (auto name = f.String("name", Need::kRequired)) {
    static const std::regex kName(R"(^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$)");
    if (!std::regex_match(*name, kName)) {
      f.Error(f.Pos("name"), "'project.name' = " + Quoted(*name) + " is not a valid name",
              "use letters, digits, '.', '_' and '-' (at most 128)");
    }
    spec_.name = *name;
  }
  if (auto config = f.String("config", Need::kRequired)) {
    CheckRelativePath(f, "config", *config, f.Pos("config"));
    CheckImagePath(f, "config", *config);
    spec_.config = *config;
  }
  if (auto seed = f.Integer("seed", Need::kRequired, 0, kMaxInt)) spec_.seed = *seed;
  if (lock()) {
    auto sha = f.String("config-sha256", Need::kRequired);
    CheckSha256(f, "config-sha256", sha);
    spec_.config_sha256 = sha.value_or("");
  }
  f.Finish();
}

Lockfile LoadLockfile(std::string_view text, const std::string& path, LockfileKind kind,
                      std::string* identity_sha256) {
  toml::table root = ParseTomlDocument(text, path);
  Lockfile spec;
  spec.kind = kind;
  spec.path = path;
  LockfileReader reader(path, kind, spec);
  reader.Read(root);
  if (!reader.diags().empty()) throw InputError(reader.diags());
  if (kind == LockfileKind::kLock) spec.lock_build_sha256 = LockBuildSha256(root);
  if (identity_sha256) {
    *identity_sha256 = kind == LockfileKind::kLock ? LockSha256(root) : ManifestSha256(root);
  }
  return spec;
}

}  // namespace trainlock
