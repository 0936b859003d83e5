// env.packages; see python_packages.h.
#include "checks/python_packages.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/package_name.h"
#include "base/strings.h"
#include "base/subprocess.h"
#include "lock/pep440.h"
#include "report/check_metrics.h"
#include "report/pass_rules.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxSitePackagesEntries = 20000;  // a site-packages larger than this is refused
constexpr std::streamsize kMaxInstalledMetadataBytes = 1 << 20;  // METADATA's headers come first
constexpr size_t kShownPackageNames = 10;                        // names listed in a summary
constexpr size_t kMaxDpkgStatusBytes = size_t{64} << 20;         // a full desktop's is about 3 MiB
constexpr std::streamsize kMaxDirectUrlBytes = 64 << 10;

// Bootstrap distributions the venv brings (ensurepip): allowed when the lock does not pin them.
const std::set<std::string>& BootstrapPackages() {
  static const std::set<std::string> kNames = {"pip", "setuptools", "wheel"};
  return kNames;
}

bool DistNameEndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Name and Version from METADATA's header block (RFC 822 style, ends at the first blank line).
std::string ReadDistMetadata(const fs::path& dist_info, InstalledDistribution* out) {
  const fs::path file = dist_info / "METADATA";
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(file, ec);
  if (ec || !fs::is_regular_file(st)) return "no METADATA file (a regular file, not a link)";
  std::ifstream in(file, std::ios::binary);
  if (!in) return "METADATA cannot be read";
  std::string text(static_cast<size_t>(kMaxInstalledMetadataBytes), '\0');
  in.read(text.data(), kMaxInstalledMetadataBytes);
  text.resize(static_cast<size_t>(in.gcount()));
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string::npos || line[0] == ' ' || line[0] == '\t') continue;
    const std::string key = AsciiLower(TrimBlanks(line.substr(0, colon)));
    const std::string value = TrimBlanks(line.substr(colon + 1));
    if (key == "name" && out->name.empty()) out->name = NormalizedDistributionName(value);
    if (key == "version" && out->version.empty()) out->version = value;
  }
  if (out->name.empty()) return "METADATA has no Name";
  if (out->version.empty()) return "METADATA has no Version";
  return "";
}

// The wheel's sha256 PEP 610's direct_url.json records (archive_info.hashes.sha256, or the
// older archive_info.hash "sha256=..."); "" when the installer wrote none (an index install).
std::string ReadDirectUrlSha256(const fs::path& dist_info) {
  const fs::path file = dist_info / "direct_url.json";
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(file, ec))) return "";
  std::ifstream in(file, std::ios::binary);
  std::string text(static_cast<size_t>(kMaxDirectUrlBytes), '\0');
  in.read(text.data(), kMaxDirectUrlBytes);
  text.resize(static_cast<size_t>(in.gcount()));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("archive_info") || !j["archive_info"].is_object()) return "";
  const nlohmann::json& a = j["archive_info"];
  if (a.contains("hashes") && a["hashes"].is_object() && a["hashes"].contains("sha256") &&
      a["hashes"]["sha256"].is_string())
    return a["hashes"]["sha256"].get<std::string>();
  if (a.contains("hash") && a["hash"].is_string()) {
    const std::string h = a["hash"].get<std::string>();
    if (h.starts_with("sha256=")) return h.substr(7);
  }
  return "";
}

void ScanSiteDir(const fs::path& dir, SitePackagesScan& scan) {
  std::error_code ec;
  size_t entries = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (++entries > kMaxSitePackagesEntries) {
      scan.malformed.push_back(dir.string() + ": more than " +
                               std::to_string(kMaxSitePackagesEntries) +
                               " entries; not read further");
      return;
    }
    const fs::path path = it->path();
    const std::string name = path.filename().string();
    if (DistNameEndsWith(name, ".egg-info")) {
      scan.malformed.push_back(path.string() +
                               ": an egg-info distribution, not installed from a "
                               "locked wheel");
      continue;
    }
    if (!DistNameEndsWith(name, ".dist-info")) continue;
    std::error_code st_ec;
    if (!fs::is_directory(fs::symlink_status(path, st_ec))) {
      scan.malformed.push_back(path.string() + ": not a directory (a link is not followed)");
      continue;
    }
    InstalledDistribution d;
    d.where = path.string();
    const std::string problem = ReadDistMetadata(path, &d);
    if (!problem.empty()) {
      scan.malformed.push_back(path.string() + ": " + problem);
      continue;
    }
    d.wheel_sha256 = ReadDirectUrlSha256(path);
    scan.distributions.push_back(std::move(d));
  }
  if (ec) scan.malformed.push_back(dir.string() + ": cannot be listed: " + ec.message());
}

// Versions compare by PEP 440 value (1.0 and 1.0.0 differ in spelling only); text otherwise.
bool SameInstalledVersion(const std::string& a, const std::string& b) {
  const std::optional<PyVersion> va = ParsePyVersion(a);
  const std::optional<PyVersion> vb = ParsePyVersion(b);
  if (va && vb) return ComparePyVersions(*va, *vb) == 0 && va->local == vb->local;
  return a == b;
}

std::string ListedPackages(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < kShownPackageNames; ++i)
    out += (i ? ", " : "") + names[i];
  if (names.size() > kShownPackageNames)
    out += " and " + std::to_string(names.size() - kShownPackageNames) + " more";
  return out;
}

nlohmann::json PackageNames(const std::vector<std::string>& v) {
  return nlohmann::json(v);
}

void AddFileMetrics(const InstalledFiles& f, PackagesMetrics& m) {
  m.files_verified = f.files_verified;
  m.bytes_verified = f.bytes_verified;
  m.files_unhashed = f.files_unhashed;
  m.files_compiled = f.files_compiled;
  m.records_outside = f.records_outside;
  m.files_problems = f.problems;
  m.files_changed = PackageNames(f.changed);
  m.files_missing = PackageNames(f.missing);
  m.files_unowned = PackageNames(f.unowned);
  m.files_unreadable = PackageNames(f.unreadable);
}

// The first finding of the file check, worst first; "" when there is none.
std::string FilesFinding(const InstalledFiles& f) {
  if (f.problems == 0) return "";
  const std::string more =
      f.problems > 1 ? " (" + std::to_string(f.problems) + " findings in all)" : "";
  if (!f.changed.empty())
    return "an installed file differs from its RECORD: " + f.changed[0] + more;
  if (!f.missing.empty()) return "an installed file is missing: " + f.missing[0] + more;
  if (!f.unreadable.empty())
    return "an installed file cannot be verified: " + f.unreadable[0] + more;
  if (!f.unowned.empty())
    return "a file on the interpreter's path that no installed distribution owns: " + f.unowned[0] +
           more;
  return "installed files cannot be verified" + more;
}

constexpr size_t kShownPythonFiles = 100;  // each list's entries kept in the metrics

nlohmann::json FirstPaths(const std::vector<std::string>& paths) {
  return nlohmann::json(std::vector<std::string>(
      paths.begin(),
      paths.begin() + static_cast<std::ptrdiff_t>(std::min(paths.size(), kShownPythonFiles))));
}

// `m` with what the walk of the image's Python found.
PackagesMetrics PythonFilesMetrics(const ImagePythonFiles& python, PackagesMetrics m) {
  m.python_files = python.record;
  m.python_interpreter = python.interpreter;
  if (!python.walked) return m;
  m.python_files_verified = python.diff.files_verified;
  m.python_bytes_verified = python.diff.bytes_verified;
  m.python_files_added = FirstPaths(python.diff.added);
  m.python_files_changed = FirstPaths(python.diff.changed);
  m.python_files_missing = FirstPaths(python.diff.missing);
  m.python_files_refused = FirstPaths(python.diff.refused);
  return m;
}

// env.packages failed before any Python ran: the record is missing or unreadable, --python is
// not the recorded interpreter, or a file on the Python's path is not as the image recorded.
CheckResult ImagePythonFailure(const ImagePythonFiles& python) {
  PackagesMetrics m = PythonFilesMetrics(python, {});
  if (!python.problem.empty()) m.python_problem = python.problem;
  CheckResult r{"env.packages", CheckStatus::kSkip, 0, "", "", ToJson(m)};  // judged below
  const PythonFilesDiff& d = python.diff;
  const std::string more =
      d.problems() > 1 ? " (" + std::to_string(d.problems()) + " findings in all)" : "";
  r.remedy =
      "rebuild the image from the lock (`trainlock image build`) and never change a built "
      "image; no Python engine ran";
  if (!python.problem.empty()) {
    r.summary = python.problem;
    if (python.problem.starts_with("--python"))
      r.remedy = "leave out --python inside an image: the engine runs the image's interpreter";
  } else if (!d.changed.empty()) {
    r.summary =
        "a file of the image's Python differs from the image's record: " + d.changed[0] + more;
  } else if (!d.missing.empty()) {
    r.summary = "a file of the image's Python is missing: " + d.missing[0] + more;
  } else if (!d.added.empty()) {
    r.summary =
        "a file on the image Python's path that the image did not record: " + d.added[0] + more;
  } else {
    r.summary = "a file on the image Python's path is refused: " + d.refused[0] + more;
  }
  return Judged("env.packages", std::move(r.metrics), std::move(r.summary), std::move(r.remedy));
}

}  // namespace

std::string NormalizedDistributionName(std::string_view name) {
  return NormalizePackageName(name);
}

SitePackagesScan ScanSitePackages(const std::vector<fs::path>& dirs, Deadline deadline) {
  SitePackagesScan scan;
  std::vector<fs::path> seen;
  for (const fs::path& dir : dirs) {
    std::error_code ec;
    bool again = false;
    for (const fs::path& s : seen) again = again || fs::equivalent(s, dir, ec);
    if (again) continue;
    seen.push_back(dir);
    if (!fs::is_directory(dir, ec)) continue;  // a platlib the Python has not made
    ScanSiteDir(dir, scan);
  }
  std::vector<fs::path> dist_infos;
  for (const InstalledDistribution& d : scan.distributions) dist_infos.emplace_back(d.where);
  scan.files = VerifyInstalledFiles(seen, dist_infos, deadline);
  return scan;
}

CheckResult CompareInstalledPackages(const std::vector<PythonWheel>& wheels,
                                     const SitePackagesScan& scan,
                                     const std::vector<fs::path>& dirs) {
  std::map<std::string, std::vector<const InstalledDistribution*>> installed;
  for (const InstalledDistribution& d : scan.distributions) installed[d.name].push_back(&d);
  std::vector<std::string> missing, changed, added, bootstrap, twice;
  std::set<std::string> locked;
  int64_t wheel_hashes = 0;
  for (const PythonWheel& w : wheels) {
    const std::string name = NormalizedDistributionName(w.name);
    locked.insert(name);
    auto it = installed.find(name);
    if (it == installed.end()) {
      missing.push_back(name + " " + w.version);
    } else if (!SameInstalledVersion(it->second.front()->version, w.version)) {
      changed.push_back(name + " " + it->second.front()->version + " (locked " + w.version + ")");
    } else if (const std::string& h = it->second.front()->wheel_sha256; !h.empty()) {
      ++wheel_hashes;
      if (h != w.sha256)
        changed.push_back(name + " " + w.version + " (installed from a wheel of sha256 " + h +
                          ", the lock's is " + w.sha256 + ")");
    }
  }
  for (const auto& [name, found] : installed) {
    if (found.size() > 1) twice.push_back(name);
    if (locked.count(name)) continue;
    (BootstrapPackages().count(name) ? bootstrap : added)
        .push_back(name + " " + found.front()->version);
  }
  PackagesMetrics m;
  m.packages_locked = static_cast<int64_t>(wheels.size());
  m.packages_installed = static_cast<int64_t>(scan.distributions.size());
  std::vector<std::string> where;
  for (const fs::path& d : dirs) where.push_back(d.string());
  m.site_packages = PackageNames(where);
  m.packages_missing = PackageNames(missing);
  m.packages_changed = PackageNames(changed);
  m.packages_added = PackageNames(added);
  m.packages_bootstrap = PackageNames(bootstrap);
  m.packages_malformed = PackageNames(scan.malformed);
  m.packages_twice = PackageNames(twice);
  m.wheel_hashes = wheel_hashes;
  AddFileMetrics(scan.files, m);
  CheckResult r{"env.packages", CheckStatus::kSkip, 0, "", "", ToJson(m)};  // judged below
  const std::string rebuild =
      "rebuild the image from the lock (`trainlock image build`); "
      "never install into a built image";
  if (!scan.malformed.empty()) {
    r.summary = "unreadable installed distribution: " + scan.malformed.front();
    r.remedy = rebuild;
  } else if (!changed.empty()) {
    r.summary = "installed at another version than the lock's: " + ListedPackages(changed);
    r.remedy = rebuild;
  } else if (!missing.empty()) {
    r.summary = "locked but not installed: " + ListedPackages(missing);
    r.remedy = rebuild;
  } else if (!added.empty()) {
    r.summary = "installed but not in the lock: " + ListedPackages(added);
    r.remedy = rebuild + ", or add them to trainlock.toml's [python] and re-lock";
  } else if (!twice.empty()) {
    r.summary = "installed more than once: " + ListedPackages(twice);
    r.remedy = rebuild;
  } else if (const std::string files = FilesFinding(scan.files); !files.empty()) {
    r.summary = files;
    r.remedy = rebuild;
  } else {
    r.summary = std::to_string(wheels.size()) + " locked distributions installed at their " +
                "locked versions, nothing else" +
                (bootstrap.empty() ? "" : " (bootstrap " + ListedPackages(bootstrap) + ")") + "; " +
                std::to_string(scan.files.files_verified) +
                " files match their RECORD hashes, none unowned";
  }
  return Judged("env.packages", std::move(r.metrics), std::move(r.summary), std::move(r.remedy));
}

DpkgScan ReadDpkgStatus(const fs::path& status) {
  DpkgScan scan;
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(status, ec))) {
    scan.error = "the image has no dpkg database (" + status.string() + ")";
    return scan;
  }
  std::ifstream in(status, std::ios::binary);
  std::string text(static_cast<size_t>(kMaxDpkgStatusBytes) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (!in.eof() || text.size() > kMaxDpkgStatusBytes) {
    scan.error = status.string() + " cannot be read whole (over " +
                 std::to_string(kMaxDpkgStatusBytes >> 20) + " MiB, or unreadable)";
    return scan;
  }
  std::string name, version, state;
  auto keep = [&] {
    if (!name.empty() && state == "install ok installed") scan.installed[name] = version;
    name.clear(), version.clear(), state.clear();
  };
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) keep();
    if (line.starts_with("Package:")) name = TrimBlanks(line.substr(8));
    if (line.starts_with("Version:")) version = TrimBlanks(line.substr(8));
    if (line.starts_with("Status:")) state = TrimBlanks(line.substr(7));
  }
  keep();
  return scan;
}

void CompareDebianPackages(const std::vector<DebianPackage>& debs, const DpkgScan& scan,
                           const fs::path& status, CheckResult& r) {
  if (debs.empty()) return;
  std::vector<std::string> missing, changed;
  for (const DebianPackage& d : debs) {
    auto it = scan.installed.find(d.name);
    if (it == scan.installed.end()) {
      missing.push_back(d.name + " " + d.version);
    } else if (it->second != d.version) {
      changed.push_back(d.name + " " + it->second + " (locked " + d.version + ")");
    }
  }
  PackagesMetrics m = ReadMetrics<PackagesMetrics>(r.metrics);
  m.debs_locked = static_cast<int64_t>(debs.size());
  m.dpkg_status = status.string();
  if (scan.error.empty()) {
    m.debs_missing = PackageNames(missing);
    m.debs_changed = PackageNames(changed);
  }
  r.metrics = ToJson(m);
  const std::string rebuild =
      "rebuild the image from the lock (`trainlock image build`); "
      "never install into a built image";
  if (r.status == CheckStatus::kFail || r.status == CheckStatus::kError) return;
  if (!scan.error.empty()) {
    r = NotMeasured("env.packages", CheckStatus::kSkip,
                    scan.error + ": its " + std::to_string(debs.size()) +
                        " pinned Debian packages cannot be verified" +
                        (r.summary.empty() ? "" : "; " + r.summary),
                    "validate in the image built from the lock, whose base carries dpkg",
                    std::move(r.metrics));
  } else if (!changed.empty() || !missing.empty()) {
    r = Judged("env.packages", std::move(r.metrics),
               !changed.empty()
                   ? "Debian packages installed at another version than the lock's: " +
                         ListedPackages(changed)
                   : "Debian packages locked but not installed: " + ListedPackages(missing),
               rebuild);
  } else if (r.status == CheckStatus::kPass) {
    r.summary += "; " + std::to_string(debs.size()) + " pinned Debian packages at their versions";
  }
}

CheckResult CheckInstalledPackages(const Lockfile& lock, const std::string& target,
                                   const ImagePythonFiles& python, double timeout_s,
                                   const fs::path& dpkg_status) {
  CheckResult r{"env.packages", CheckStatus::kSkip, 0, "", "", nlohmann::json::object()};
  if (!python.in_image) {
    r.summary =
        "not inside an image built by trainlock: the host's Python is not locked, and a Python "
        "engine's interpreter is unverified";
    r.remedy = "validate in the lock's image (`trainlock validate --image`)";
    return r;
  }
  if (!python.MayRunPython()) return ImagePythonFailure(python);
  auto t = lock.targets.find(target);
  if (t == lock.targets.end() || !t->second.wheels) {
    r.summary = "the lock has no resolved Python closure for target " + target;
    r.remedy = "run `trainlock lock` without --skip-python and rebuild the image";
    r.metrics = ToJson(PythonFilesMetrics(python, {}));
    if (t != lock.targets.end())
      CompareDebianPackages(t->second.debs, ReadDpkgStatus(dpkg_status), dpkg_status, r);
    return r;
  }
  const auto start = std::chrono::steady_clock::now();
  const Deadline deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                        std::chrono::duration<double>(timeout_s));
  const std::vector<fs::path> dirs = SiteDirectoriesOf(python.sys_path);
  r = CompareInstalledPackages(*t->second.wheels, ScanSitePackages(dirs, deadline), dirs);
  r.metrics = ToJson(PythonFilesMetrics(python, ReadMetrics<PackagesMetrics>(r.metrics)));
  if (r.status == CheckStatus::kPass)
    r.summary += "; " + std::to_string(python.diff.files_verified) + " files of " +
                 python.interpreter +
                 "'s path (interpreter, standard library, site-packages) as the image recorded "
                 "them, nothing added";
  CompareDebianPackages(t->second.debs, ReadDpkgStatus(dpkg_status), dpkg_status, r);
  r.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace trainlock
