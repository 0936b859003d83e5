// Manifest and lock schema; see spec_loader.h and docs/DESIGN.md ("Formats").
//
// One reader per table. Each reads the fields it knows through TomlFields (which records
// positions and reports type/range errors), applies the rules that depend on several fields,
// then Finish() reports unknown keys.
#include "project/spec_loader.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include "base/canonical.h"
#include "base/package_name.h"
#include "base/refs.h"
#include "base/sha256.h"
#include "base/strings.h"
#include "base/suggest.h"
#include "base/time_text.h"
#include "base/toml_document.h"
#include "base/version.h"
#include "project/check_ids.h"
#include "project/debian_names.h"
#include "project/project_path.h"
#include "project/round_trip_engines.h"

namespace trainlock {

SourcePos Spec::Pos(const std::string& dotted) const {
  auto it = positions.find(dotted);
  return it == positions.end() ? SourcePos{} : it->second;
}

namespace {

constexpr int64_t kMaxInt = INT64_MAX;

// [validate] valid-for = "24h": how long a passing report stands. A duration a person reads
// ("24h", "7d", "1h30m"), at least a minute (a shorter window would expire before a job
// starts) and at most a year.
void ReadValidFor(TomlFields& f, ValidateSpec& v) {
  std::optional<std::string> text = f.String("valid-for", Need::kOptional);
  if (!text) return;
  std::optional<int64_t> seconds = ParseDurationSeconds(*text);
  if (!seconds || *seconds < 60 || *seconds > 366 * 86400) {
    f.Error(f.Pos("valid-for"),
            "'validate.valid-for' = " + Quoted(*text) + " is not a duration from 1m to 366d",
            "write it as e.g. \"24h\", \"7d\" or \"1h30m\" (units w d h m s)");
    return;
  }
  v.valid_for_s = *seconds;
}

// [ext.command] argv: the strings exactly as the program will get them. Unlike other string
// arrays, values may repeat ("--lr 1 --warmup 1") and be empty (an argument ""). A NUL cannot
// be passed: the kernel would end the argument there and run something else than the lock says.
std::vector<std::string> ReadArgv(TomlFields& f, const toml::array& array) {
  std::vector<std::string> argv;
  for (const toml::node& element : array) {
    const auto* s = element.as_string();
    if (!s) {
      f.Error(PosOf(element), "'ext.command.argv' must contain only strings, found " +
                                  TomlTypeName(element.type()));
    } else if (s->get().find('\0') != std::string::npos) {
      f.Error(PosOf(element),
              "'ext.command.argv' argument " + std::to_string(argv.size()) +
                  " has a NUL character in it",
              "a program's arguments cannot carry one: it would end the argument there");
    }
    argv.push_back(s ? s->get() : std::string());
  }
  return argv;
}

class SpecReader {
 public:
  SpecReader(const std::string& path, SpecKind kind, Spec& spec)
      : path_(path), kind_(kind), spec_(spec) {}

  void Read(const toml::table& root);
  Diagnostics& diags() { return diags_; }

 private:
  bool lock() const { return kind_ == SpecKind::kLock; }
  TomlFields Fields(const toml::table& t, std::string name) {
    return TomlFields(t, std::move(name), path_, diags_, &spec_.positions);
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
  void ReadEngine(TomlFields& f, ValidateSpec& v);
  void ReadExt(const toml::table& t);
  void ReadImages(const toml::table& t);

  const std::string& path_;
  SpecKind kind_;
  Spec& spec_;
  Diagnostics diags_;
};

void SpecReader::CheckRelativePath(TomlFields& f, std::string_view key, const std::string& value,
                                   SourcePos pos) {
  if (std::string problem = RelativePathProblem(value); !problem.empty()) {
    f.Error(pos, "'" + f.Qualified(key) + "': " + problem,
            "paths are relative to the project directory");
  }
}

// A path an image build copies, written into Containerfile lines (project_path.h).
void SpecReader::CheckImagePath(TomlFields& f, std::string_view key, const std::string& value) {
  if (std::string problem = ImagePathProblem(value); !problem.empty())
    f.Error(f.Pos(key), "'" + f.Qualified(key) + "': " + problem, "rename it");
}

void SpecReader::CheckSha256(TomlFields& f, std::string_view key,
                             const std::optional<std::string>& v) {
  if (v && !IsSha256Hex(*v)) {
    f.Error(f.Pos(key), "'" + f.Qualified(key) + "' = " + Quoted(*v) + " is not a SHA-256",
            "expected 64 lower-case hex characters");
  }
}

void SpecReader::CheckVersion(TomlFields& f, std::string_view key,
                              const std::optional<std::string>& v) {
  if (v && !ParseVersion(*v)) {
    f.Error(f.Pos(key), "'" + f.Qualified(key) + "' = " + Quoted(*v) + " is not a version",
            "expected dotted numbers such as '13.0' or '2.11.0+cu130'");
  }
}

void SpecReader::Read(const toml::table& root) {
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
  }
  f.Finish();
}

void SpecReader::ReadProject(const toml::table& t) {
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

std::optional<ArtifactSource> SpecReader::ReadArtifact(const toml::table& t,
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

void SpecReader::ReadFiles(TomlFields& f, ArtifactSource& a) {
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
    const auto* t = element.as_table();
    if (!t) {
      f.Error(PosOf(element), "'" + f.Qualified("files") + "' entries must be tables",
              "a lock lists each file as { path, sha256, size }");
      continue;
    }
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

void SpecReader::ReadTargets(const toml::table& t) {
  static constexpr std::string_view kTargets[] = {"cuda", "rocm", "cpu"};
  TomlFields f = Fields(t, "targets");
  for (std::string_view name : kTargets) {
    if (const toml::table* target = f.Table(name, Need::kOptional)) {
      spec_.targets[std::string(name)] = ReadTarget(*target, std::string(name));
    }
  }
  // Unknown target names get a clearer message than the generic unknown key.
  for (auto&& [key, node] : t) {
    std::string_view k = key.str();
    if (std::find(std::begin(kTargets), std::end(kTargets), k) == std::end(kTargets)) {
      f.Error(PosOf(key.source()), "unknown target " + Quoted(k) + " in [targets]",
              DidYouMean(k, kTargets).empty() ? "targets are cuda, rocm and cpu"
                                              : DidYouMean(k, kTargets));
      f.Allow(k);
    }
  }
  if (t.empty())
    f.Error(f.TablePos(), "[targets] names no target",
            "add [targets.cuda], [targets.rocm] or [targets.cpu]");
  f.Finish();
}

void SpecReader::ReadBaseImage(TomlFields& f, Target& target) {
  auto base = f.String("base", target.name == "cpu" ? Need::kOptional : Need::kRequired);
  if (!base) return;
  target.base = *base;
  std::string error;
  auto ref = ParseImageRef(*base, &error);
  if (!ref) {
    f.Error(f.Pos("base"), "'" + f.Qualified("base") + "' = " + Quoted(*base) +
                               " is not an image reference: " + error);
    return;
  }
  if (lock() && !ref->pinned()) {
    f.Error(f.Pos("base"),
            "unpinned image reference " + Quoted(*base) + " in '" + f.Qualified("base") + "'",
            "a lock pins base images by digest (name@sha256:...); run `trainlock lock`");
  }
  if (!lock()) return;
  if (const toml::table* platforms = f.Table("base-platforms", Need::kOptional)) {
    for (auto&& [platform, node] : *platforms) {
      const auto* digest = node.as_string();
      std::string problem = digest ? DigestProblem(digest->get()) : "must be a digest string";
      if (!problem.empty()) {
        f.Error(PosOf(node), "'" + f.Qualified("base-platforms") + "." +
                                 std::string(platform.str()) + "': " + problem);
        continue;
      }
      target.base_platforms[std::string(platform.str())] = digest->get();
    }
  }
}

Target SpecReader::ReadTarget(const toml::table& t, const std::string& target_name) {
  TomlFields f = Fields(t, "targets." + target_name);
  Target target;
  target.name = target_name;
  ReadBaseImage(f, target);
  bool gpu = target_name != "cpu";
  if (auto acc = f.StringArray("accelerators", gpu ? Need::kRequired : Need::kOptional)) {
    if (gpu && acc->empty()) {
      f.Error(f.Pos("accelerators"), "'" + f.Qualified("accelerators") + "' is empty",
              "name at least one catalog accelerator, e.g. \"H200\"");
    }
    target.accelerators = *acc;
  }
  auto version = [&](std::string_view key, Need need) {
    auto v = f.String(key, need);
    CheckVersion(f, key, v);
    return v.value_or("");
  };
  target.torch = version("torch", Need::kRequired);
  if (target_name == "cuda") {
    target.cuda = version("cuda", Need::kRequired);
    target.nccl = version("nccl", Need::kOptional);
    target.cudnn = version("cudnn", Need::kOptional);
    target.driver_min = version("driver-min", Need::kRequired);
  } else if (target_name == "rocm") {
    target.rocm = version("rocm", Need::kRequired);
    target.rccl = version("rccl", Need::kOptional);
    target.driver_min = version("driver-min", Need::kOptional);
  }
  ReadPythonTarget(f, target);
  ReadDebianPackages(f, target);
  if (lock()) f.Allow("base-platforms");
  f.Finish();
  return target;
}

// Why `url` cannot be a package index or archive root we store, or "": an http(s) URL with a
// host, written only in RFC 3986's characters (unreserved, reserved, %XX escapes) less "$" and
// "'", so that no shell that reads a line it is written into (a Containerfile's RUN, quoted)
// expands anything in it, and without user:password (credentials never go into a lock, a
// generated file or an image: they come from ~/.netrc when used).
std::string IndexUrlProblem(std::string_view url) {
  if (!url.starts_with("https://") && !url.starts_with("http://")) return "is not an http(s) URL";
  if (url.size() > 2048) return "is longer than 2048 characters";
  for (size_t i = 0; i < url.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(url[i]);
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\'' || c == '\\')
      return "holds a space, quote, backslash or control character";
    if (c == '$' || c == '`') return "holds '$' or a backtick, which a URL cannot";
    if (!std::isalnum(c) && std::string_view("-._~:/?#[]@!&()*+,;=%").find(static_cast<char>(c)) ==
                                std::string_view::npos)
      return "holds " + Quoted(std::string(1, static_cast<char>(c))) + ", which a URL cannot";
    if (c == '%' &&
        (i + 2 >= url.size() || !std::isxdigit(static_cast<unsigned char>(url[i + 1])) ||
         !std::isxdigit(static_cast<unsigned char>(url[i + 2]))))
      return "holds a '%' that is not a %XX escape";
  }
  const size_t host = url.find("://") + 3;
  const size_t authority_end = url.find_first_of("/?#", host);
  const std::string authority(url.substr(host, authority_end - host));
  if (authority.find('@') != std::string::npos) return "holds user:password (userinfo)";
  static const std::regex kAuthority(R"(^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$)");
  if (!std::regex_match(authority, kAuthority)) return "has no host name";
  return "";
}

// The image's Python: its version, the indexes its closure comes from and (lock) the closure.
void SpecReader::ReadPythonTarget(TomlFields& f, Target& target) {
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
void SpecReader::ReadWheels(TomlFields& f, Target& target) {
  const toml::array* wheels = f.Array("wheels", Need::kOptional);
  if (!wheels) return;
  target.wheels.emplace();
  std::set<std::string> names;
  for (const toml::node& element : *wheels) {
    const auto* t = element.as_table();
    if (!t) {
      f.Error(PosOf(element), "'" + f.Qualified("wheels") + "' entries must be tables",
              "a lock lists each wheel as { name, version, file, sha256, index }");
      continue;
    }
    TomlFields w = Fields(*t, f.Qualified("wheels"));
    PythonWheel wheel;
    wheel.name = w.String("name", Need::kRequired).value_or("");
    wheel.version = w.String("version", Need::kRequired).value_or("");
    wheel.file = w.String("file", Need::kRequired).value_or("");
    auto sha = w.String("sha256", Need::kRequired);
    CheckSha256(w, "sha256", sha);
    wheel.sha256 = sha.value_or("");
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

// debian-packages and where they come from (apt-archive, apt-snapshot, apt-suite); the lock's
// pins ([[targets.<t>.debs]]). Every name and version is checked against Debian's grammar
// here: each goes into a Containerfile's `apt-get install`.
void SpecReader::ReadDebianPackages(TomlFields& f, Target& target) {
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
void SpecReader::ReadDebs(TomlFields& f, Target& target) {
  const toml::array* debs = f.Array("debs", Need::kOptional);
  if (!debs) return;
  std::set<std::string> names;
  for (const toml::node& element : *debs) {
    const auto* t = element.as_table();
    if (!t) {
      f.Error(PosOf(element), "'" + f.Qualified("debs") + "' entries must be tables",
              "a lock lists each Debian package as { name, version, file, sha256 }");
      continue;
    }
    TomlFields w = Fields(*t, f.Qualified("debs"));
    DebianPackage deb;
    deb.name = w.String("name", Need::kRequired).value_or("");
    deb.version = w.String("version", Need::kRequired).value_or("");
    deb.file = w.String("file", Need::kRequired).value_or("");
    auto sha = w.String("sha256", Need::kRequired);
    CheckSha256(w, "sha256", sha);
    deb.sha256 = sha.value_or("");
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

void SpecReader::ReadPython(const toml::table& t) {
  static const std::regex kPackage(R"(^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$)");
  // Each number at most 18 digits (it fits an int64_t; pep440.h reads no longer one).
  static const std::regex kExact(
      R"(^[0-9]{1,18}(\.[0-9]{1,18})*([a-z]+[0-9]{0,18})?(\.post[0-9]{1,18})?(\+[A-Za-z0-9.]+)?$)");
  // PEP 503 makes 'My_Pkg' and 'my-pkg' one package: two spellings would pin it twice and the
  // resolver would keep one of them without a word.
  std::map<std::string, std::pair<std::string, SourcePos>> spelled;  // normalised -> key, where
  for (auto&& [key, node] : t) {
    std::string name(key.str());
    SourcePos pos = PosOf(node);
    if (!std::regex_match(name, kPackage)) {
      diags_.Error(path_, PosOf(key.source()),
                   "[python] key " + Quoted(name) + " is not a package name");
      continue;
    }
    const auto* version = node.as_string();
    if (!version) {
      diags_.Error(path_, pos,
                   "'python." + name + "' must be a string, not " + TomlTypeName(node.type()),
                   "write the exact version, e.g. " + name + " = \"1.2.3\"");
      continue;
    }
    if (!std::regex_match(version->get(), kExact)) {
      diags_.Error(path_, pos,
                   "'python." + name + "' = " + Quoted(version->get()) + " is not an exact version",
                   "pin one release, e.g. \"1.2.3\"; ranges and wildcards are not reproducible");
      continue;
    }
    const SourcePos key_pos = PosOf(key.source());
    auto [other, fresh] = spelled.try_emplace(NormalizePackageName(name), name, key_pos);
    if (!fresh) {  // named at the later of the two lines, in the file's order
      const auto& [first_name, first_pos] = other->second;
      const bool before =
          std::tie(first_pos.line, first_pos.column) < std::tie(key_pos.line, key_pos.column);
      diags_.Error(path_, before ? key_pos : first_pos,
                   "[python] names " + other->first + " twice (" +
                       Quoted(before ? first_name : name) + " and " +
                       Quoted(before ? name : first_name) + ")",
                   "package names compare without case and '-', '_', '.'; keep one pin");
      continue;
    }
    spec_.python[name] = version->get();
    spec_.positions["python." + name] = pos;
  }
}

void SpecReader::ReadCustomOps(const toml::array& a) {
  std::set<std::string> libraries;
  size_t index = 0;
  for (const toml::node& element : a) {
    std::string name = "custom-ops[" + std::to_string(index++) + "]";
    const auto* t = element.as_table();
    if (!t) {
      diags_.Error(path_, PosOf(element), "'" + name + "' must be a table",
                   "declare each library as [[custom-ops]]");
      continue;
    }
    TomlFields f = Fields(*t, name);
    CustomOpLibrary lib;
    if (auto library = f.String("library", Need::kRequired)) {
      CheckRelativePath(f, "library", *library, f.Pos("library"));
      CheckImagePath(f, "library", *library);
      if (!libraries.insert(*library).second) {
        f.Error(f.Pos("library"), "duplicate custom-op library " + Quoted(*library));
      }
      lib.library = *library;
    }
    if (auto source = f.String("source", Need::kOptional)) {
      // The sources may live beside the project (examples/ops for examples/h200-pilot): '..'
      // is allowed, an absolute path is not (the lock must mean the same on every machine).
      if (source->empty() || source->front() == '/' || source->find('\\') != std::string::npos) {
        f.Error(
            f.Pos("source"),
            "'" + f.Qualified("source") + "' = " + Quoted(*source) + " is not a relative directory",
            "name the CMake project that builds the library, relative to the project");
      }
      CheckImagePath(f, "source", *source);
      lib.source = *source;
    }
    if (lock()) {
      auto source_sha =
          f.String("source-sha256", lib.source.empty() ? Need::kOptional : Need::kRequired);
      CheckSha256(f, "source-sha256", source_sha);
      lib.source_sha256 = source_sha.value_or("");
      auto sha = f.String("sha256", Need::kOptional);
      CheckSha256(f, "sha256", sha);
      lib.sha256 = sha.value_or("");
    }
    if (auto ops = f.StringArray("ops", Need::kRequired)) {
      static const std::regex kOp(R"(^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_.]*$)");
      for (const std::string& op : *ops) {
        if (!std::regex_match(op, kOp)) {
          f.Error(f.Pos("ops"), "op " + Quoted(op) + " is not a qualified op name",
                  "expected 'namespace::name' as registered with TORCH_LIBRARY");
        }
      }
      lib.ops = *ops;
    }
    if (const toml::array* smoke = f.Array("smoke", Need::kOptional)) ReadSmoke(*smoke, name, lib);
    f.Finish();
    spec_.custom_ops.push_back(std::move(lib));
  }
}

void SpecReader::ReadSmoke(const toml::array& a, const std::string& name, CustomOpLibrary& lib) {
  size_t index = 0;
  for (const toml::node& element : a) {
    std::string smoke_name = name + ".smoke[" + std::to_string(index++) + "]";
    const auto* t = element.as_table();
    if (!t) {
      diags_.Error(path_, PosOf(element), "'" + smoke_name + "' must be a table");
      continue;
    }
    TomlFields f = Fields(*t, smoke_name);
    SmokeSpec smoke;
    if (auto op = f.String("op", Need::kRequired)) {
      if (std::find(lib.ops.begin(), lib.ops.end(), *op) == lib.ops.end()) {
        f.Error(f.Pos("op"),
                "smoke test names op " + Quoted(*op) + " which is not in '" + name + ".ops'");
      }
      smoke.op = *op;
    }
    if (auto reference = f.String("reference", Need::kRequired)) smoke.reference = *reference;
    if (const toml::array* inputs = f.Array("inputs", Need::kRequired)) {
      for (const toml::node& input : *inputs) {
        const auto* it = input.as_table();
        if (!it) {
          f.Error(PosOf(input), "'" + f.Qualified("inputs") + "' entries must be tables",
                  "e.g. { shape = [4, 2048], dtype = \"bf16\" }");
          continue;
        }
        TomlFields fi = Fields(*it, f.Qualified("inputs"));
        TensorSpec tensor;
        if (auto dtype = fi.String("dtype", Need::kRequired)) {
          if (std::find(std::begin(kSmokeDtypes), std::end(kSmokeDtypes), *dtype) ==
              std::end(kSmokeDtypes)) {
            fi.Error(fi.Pos("dtype"),
                     "'" + fi.Qualified("dtype") + "' = " + Quoted(*dtype) +
                         " is not one of fp32, bf16, fp16, fp64, int64, int32",
                     DidYouMean(*dtype, kSmokeDtypes));
          }
          tensor.dtype = *dtype;
        }
        if (const toml::array* shape = fi.Array("shape", Need::kRequired)) {
          for (const toml::node& dim : *shape) {
            const auto* d = dim.as_integer();
            if (!d || d->get() < 1 || d->get() > kMaxSmokeDim) {
              fi.Error(PosOf(dim), "'" + fi.Qualified("shape") +
                                       "' dimensions must be integers from 1 to 2^31");
              continue;
            }
            tensor.shape.push_back(d->get());
          }
          if (shape->empty() || shape->size() > kMaxSmokeRank) {
            fi.Error(fi.Pos("shape"), "a shape has 1 to 8 dimensions");
          }
        }
        fi.Finish();
        smoke.inputs.push_back(std::move(tensor));
      }
    }
    smoke.rtol = f.Number("rtol", Need::kOptional, 0, kMaxSmokeTolerance).value_or(smoke.rtol);
    smoke.atol = f.Number("atol", Need::kOptional, 0, kMaxSmokeTolerance).value_or(smoke.atol);
    smoke.grad_rtol =
        f.Number("grad-rtol", Need::kOptional, 0, kMaxSmokeTolerance).value_or(smoke.grad_rtol);
    smoke.grad_atol =
        f.Number("grad-atol", Need::kOptional, 0, kMaxSmokeTolerance).value_or(smoke.grad_atol);
    f.Finish();
    lib.smoke.push_back(std::move(smoke));
  }
}

// validate.engine, and in a lock the pin of a Python engine's shipped files.
void SpecReader::ReadEngine(TomlFields& f, ValidateSpec& v) {
  if (auto engine = f.String("engine", Need::kOptional)) {
    if (!FindRoundTripEngine(*engine)) {
      const std::vector<std::string> names = RoundTripEngineNames();
      const std::vector<std::string_view> views(names.begin(), names.end());
      std::string hint = DidYouMean(*engine, views);
      f.Error(f.Pos("engine"), "unknown engine " + Quoted(*engine) + " in 'validate.engine'",
              (hint.empty() ? "" : hint + "; ") + "engines: " + JoinStrings(names, ", "));
    } else {
      v.engine = *engine;
    }
  }
  if (!lock()) return;
  const RoundTripEngine* engine = FindRoundTripEngine(v.engine);
  auto sha =
      f.String("engine-sha256", engine && engine->python ? Need::kRequired : Need::kOptional);
  CheckSha256(f, "engine-sha256", sha);
  v.engine_sha256 = sha.value_or("");
}

void SpecReader::ReadValidate(const toml::table& t) {
  TomlFields f = Fields(t, "validate");
  ValidateSpec& v = spec_.validate;
  v.steps = f.Integer("steps", Need::kOptional, 2, 1000000).value_or(v.steps);
  if (auto at = f.Integer("checkpoint-at", Need::kOptional, 1, 1000000)) {
    if (*at >= v.steps) {
      f.Error(f.Pos("checkpoint-at"),
              "'validate.checkpoint-at' = " + std::to_string(*at) +
                  " must be below 'validate.steps' = " + std::to_string(v.steps),
              "the resumed run needs steps after the checkpoint");
    }
    v.checkpoint_at = *at;
  } else if (v.checkpoint_at >= v.steps) {
    v.checkpoint_at = v.steps / 2;
  }
  v.eval_batches = f.Integer("eval-batches", Need::kOptional, 1, 10000).value_or(v.eval_batches);
  v.keep_last = f.Integer("keep-last", Need::kOptional, 1, 100).value_or(v.keep_last);
  v.loss_tolerance = f.Number("loss-tolerance", Need::kOptional, 0, 1).value_or(v.loss_tolerance);
  v.eval_tolerance = f.Number("eval-tolerance", Need::kOptional, 0, 1).value_or(v.eval_tolerance);
  if (auto dir = f.String("checkpoint-dir", Need::kOptional)) {
    // Absolute paths are allowed: the checkpoint storage of the long run lives outside the project.
    if (dir->front() != '/') CheckRelativePath(f, "checkpoint-dir", *dir, f.Pos("checkpoint-dir"));
    v.checkpoint_dir = *dir;
  }
  ReadEngine(f, v);
  if (auto required = f.StringArray("required", Need::kOptional)) {
    for (const std::string& id : *required) {
      if (!IsCheckId(id)) {
        f.Error(f.Pos("required"), "unknown check id " + Quoted(id) + " in 'validate.required'",
                DidYouMean(id, kCheckIds));
      }
    }
    v.required = *required;
  }
  ReadValidFor(f, v);
  f.Finish();
}

void SpecReader::ReadExt(const toml::table& t) {
  TomlFields ext = Fields(t, "ext");
  const toml::table* table = ext.Table("command", Need::kRequired);
  ext.Finish();
  if (!table) return;
  TomlFields f = Fields(*table, "ext.command");
  ExtCommand command;
  if (const toml::array* argv = f.Array("argv", Need::kRequired)) {
    command.argv = ReadArgv(f, *argv);
    if (command.argv.empty() || (argv->front().is_string() && command.argv.front().empty())) {
      f.Error(f.Pos("argv"), "'ext.command.argv' must name a program",
              "e.g. argv = [\"python3\", \"train.py\", \"--max-steps\", \"2\"]");
    }
  }
  command.timeout_s = f.Number("timeout-s", Need::kOptional, 1, 86400).value_or(command.timeout_s);
  command.tail_lines =
      f.Integer("tail-lines", Need::kOptional, 1, 1000).value_or(command.tail_lines);
  if (auto cwd = f.String("cwd", Need::kOptional)) {
    CheckRelativePath(f, "cwd", *cwd, f.Pos("cwd"));
    command.cwd = *cwd;
  }
  if (const toml::table* env = f.Table("env", Need::kOptional)) {
    for (auto&& [key, node] : *env) {
      std::string name(key.str());
      static const std::regex kEnvName(R"(^[A-Za-z_][A-Za-z0-9_]*$)");
      if (!std::regex_match(name, kEnvName)) {
        diags_.Error(path_, PosOf(key.source()),
                     "'ext.command.env' key " + Quoted(name) + " is not an environment name");
      } else if (const auto* value = node.as_string()) {
        if (value->get().find('\0') != std::string::npos) {
          diags_.Error(path_, PosOf(node),
                       "'ext.command.env." + name + "' has a NUL character in it",
                       "the environment cannot carry one: it would end the value there");
        }
        command.env[name] = value->get();
      } else {
        diags_.Error(
            path_, PosOf(node),
            "'ext.command.env." + name + "' must be a string, not " + TomlTypeName(node.type()));
      }
    }
  }
  f.Finish();
  spec_.ext_command = std::move(command);
}

void SpecReader::ReadImages(const toml::table& t) {
  for (auto&& [key, node] : t) {
    std::string target(key.str());
    const auto* image = node.as_table();
    if (!image) {
      diags_.Error(path_, PosOf(node), "'images." + target + "' must be a table");
      continue;
    }
    TomlFields f = Fields(*image, "images." + target);
    BuiltImage built;
    built.ref = f.String("ref", Need::kRequired).value_or("");
    if (auto digest = f.String("digest", Need::kRequired)) {
      if (std::string problem = DigestProblem(*digest); !problem.empty()) {
        f.Error(f.Pos("digest"), "'images." + target + ".digest': " + problem);
      }
      built.digest = *digest;
    }
    built.source_date_epoch =
        f.Integer("source-date-epoch", Need::kOptional, 0, std::numeric_limits<int64_t>::max());
    if (auto sha = f.String("validator-sha256", Need::kOptional)) {
      if (!IsSha256Hex(*sha)) {
        f.Error(f.Pos("validator-sha256"),
                "'images." + target + ".validator-sha256' is not 64 lower-case hex characters");
      }
      built.validator_sha256 = *sha;
    }
    f.Finish();
    if (!spec_.targets.count(target)) {
      f.Error(PosOf(key.source()), "[images." + target + "] names a target the lock does not have");
    }
    spec_.images[target] = built;
  }
}

}  // namespace

Spec LoadSpec(std::string_view text, const std::string& path, SpecKind kind,
              std::string* identity_sha256) {
  toml::table root = ParseTomlDocument(text, path);
  Spec spec;
  spec.kind = kind;
  spec.path = path;
  SpecReader reader(path, kind, spec);
  reader.Read(root);
  if (!reader.diags().empty()) throw InputError(reader.diags());
  if (kind == SpecKind::kLock) spec.lock_build_sha256 = LockBuildSha256(root);
  if (identity_sha256) {
    *identity_sha256 = kind == SpecKind::kLock ? LockSha256(root) : ManifestSha256(root);
  }
  return spec;
}

}  // namespace trainlock
