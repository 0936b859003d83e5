// [model] and [dataset] of a manifest or lock: where the artifact comes from (hf, local, url),
// its revision (a commit in a lock) and its files (with hash and size in a lock).
#include "project/lockfile_reader.h"

#include <algorithm>
#include <regex>
#include <set>

#include "base/refs.h"
#include "base/strings.h"
#include "base/suggest.h"

namespace trainlock {

std::optional<ArtifactSource> LockfileReader::ReadArtifact(const toml::table& t,
                                                           const std::string& name) {
  TomlFields f = Fields(t, name);
  ArtifactSource a;
  static constexpr std::string_view kSources[] = {"hf", "local", "url"};
  if (auto source = f.String("source", Need::kRequired)) {
    if (std::find(std::begin(kSources), std::end(kSources), *source) == std::end(kSources)) {
      std::string hint = DidYouMean(*source, kSources);
      f.Error(f.Pos("source"),
              "'" + name + ".source' = " + Quoted(*source) + " is not one of hf, local, url", hint);
    }
    a.source = *source;
  }
  bool known_source =
      std::find(std::begin(kSources), std::end(kSources), a.source) != std::end(kSources);
  if (!known_source) {
    // Which keys belong depends on the source; do not call them unknown when it is misspelt.
    for (const char* key : {"repo", "revision", "path", "url", "files", "token-dtype"})
      f.Allow(key);
    f.Finish();
    return a;
  }
  if (a.source == "hf") {
    if (auto repo = f.String("repo", Need::kRequired)) {
      static const std::regex kRepo(R"(^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$)");
      if (!std::regex_match(*repo, kRepo)) {
        f.Error(f.Pos("repo"),
                "'" + name + ".repo' = " + Quoted(*repo) + " is not a Hugging Face repository id",
                "expected 'org/name'");
      }
      a.repo = *repo;
    }
    if (auto revision = f.String("revision", Need::kRequired)) {
      if (lock() && !IsCommitId(*revision)) {
        f.Error(f.Pos("revision"),
                "unpinned revision " + Quoted(*revision) + " in '" + name + ".revision'",
                "a lock pins a 40-hex commit id; run `trainlock lock` to resolve it");
      }
      a.revision = *revision;
    }
  } else if (a.source == "local") {
    if (auto p = f.String("path", Need::kRequired)) {
      CheckRelativePath(f, "path", *p, f.Pos("path"));
      a.repo = *p;
    }
  } else if (a.source == "url") {
    if (auto url = f.String("url", Need::kRequired)) {
      if (url->rfind("https://", 0) != 0 && url->rfind("http://", 0) != 0) {
        f.Error(f.Pos("url"), "'" + name + ".url' = " + Quoted(*url) + " is not an http(s) URL");
      }
      a.repo = *url;
    }
  }
  if (name == "dataset") {
    if (auto dtype = f.String("token-dtype", Need::kOptional)) {
      if (*dtype != "uint16" && *dtype != "uint32") {
        f.Error(f.Pos("token-dtype"),
                "'dataset.token-dtype' = " + Quoted(*dtype) + " is not one of uint16, uint32");
      }
      a.token_dtype = *dtype;
    }
  }
  ReadFiles(f, a);
  f.Finish();
  return a;
}

void LockfileReader::ReadFiles(TomlFields& f, ArtifactSource& a) {
  std::set<std::string> seen;
  auto add = [&](PinnedFile file, SourcePos pos) {
    CheckRelativePath(f, "files", file.path, pos);
    if (!seen.insert(file.path).second) {
      f.Error(pos, "duplicate entry " + Quoted(file.path) + " in '" + f.Qualified("files") + "'");
      return;
    }
    a.files.push_back(std::move(file));
  };
  if (!lock()) {
    const toml::array* files = f.Array("files", Need::kOptional);
    if (!files) return;
    for (const toml::node& element : *files) {
      const auto* s = element.as_string();
      if (!s || s->get().empty()) {
        f.Error(PosOf(element), "'" + f.Qualified("files") + "' must contain file paths (strings)",
                "found " + TomlTypeName(element.type()));
        continue;
      }
      add({s->get(), "", 0}, PosOf(element));
    }
    return;
  }
  // In the lock every file carries its hash and size: [[model.files]] path/sha256/size.
  const toml::array* files = f.Array("files", Need::kOptional);
  if (!files) return;
  for (const toml::node& element : *files) {
    const toml::table* t =
        EntryTable(f, element, "files", "a lock lists each file as { path, sha256, size }");
    if (!t) continue;
    TomlFields ff = Fields(*t, f.Qualified("files"));
    auto path = ff.String("path", Need::kRequired);
    auto sha = ff.String("sha256", Need::kRequired);
    CheckSha256(ff, "sha256", sha);
    auto size = ff.Integer("size", Need::kRequired, 0, kMaxInt);
    ff.Finish();
    if (path && sha && size) {
      add({*path, *sha, static_cast<uint64_t>(*size)}, PosOf(*t));
    }
  }
}

}  // namespace trainlock
