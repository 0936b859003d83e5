// env.packages: inside an image built by trainlock, every file its Python can load is as the
// image recorded it at build time (checks/python_files.h, verified before any Python ran), and
// the Python distributions installed in the site directories of the recorded path (the venv
// the lock's closure was installed into) are exactly the target's locked wheels, each at its locked
// version. A package added, removed or changed after the build fails, naming it. Read torch-free
// from each *.dist-info/METADATA (Name, Version), bounded: capped entries and bytes, no link
// followed out of site-packages. Every file of every distribution is verified against its RECORD,
// and every file on the interpreter's path must be owned by one (installed_files.h); where the
// installer recorded the wheel's hash (PEP 610 direct_url.json), it must be the lock's. pip,
// setuptools and wheel, the venv's own bootstrap (ensurepip), are allowed unlocked and listed;
// locked, they are compared like any other. The Debian packages the lock pins (debian-packages) are
// compared with dpkg's database (/var/lib/dpkg/status, what dpkg-query reads): one missing or at
// another version fails; an image without the database is a skip that says so, never a pass. Debian
// packages the lock does not pin (the base's) are not judged.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "checks/installed_files.h"
#include "checks/python_files.h"
#include "project/lockfile.h"
#include "report/report.h"

namespace trainlock {

struct InstalledDistribution {
  std::string name;          // PEP 503-normalised
  std::string version;       // as METADATA spells it
  std::string where;         // the .dist-info directory
  std::string wheel_sha256;  // direct_url.json's archive hash (PEP 610); "" when none recorded
};

struct SitePackagesScan {
  std::vector<InstalledDistribution> distributions;
  std::vector<std::string> malformed;  // "<dir>: why", one per entry that could not be read
  InstalledFiles files;                // RECORD hashes and ownership (installed_files.h)
};

// PEP 503: lower case, every run of '-', '_' and '.' one '-' (base/package_name.h, the one rule).
std::string NormalizedDistributionName(std::string_view name);

// Every distribution under `dirs` (each read once: the same directory named twice counts once),
// and every file under them against the distributions' RECORDs, within `deadline`.
SitePackagesScan ScanSitePackages(const std::vector<std::filesystem::path>& dirs,
                                  Deadline deadline = Deadline::max());

// The verdict of `scan` against the target's locked closure.
CheckResult CompareInstalledPackages(const std::vector<PythonWheel>& wheels,
                                     const SitePackagesScan& scan,
                                     const std::vector<std::filesystem::path>& dirs);

// dpkg's database: Package -> Version of each stanza whose Status is "install ok installed".
struct DpkgScan {
  std::string error;  // "" when read; else why not (no database: the image has no dpkg)
  std::map<std::string, std::string> installed;
};
inline constexpr const char* kDpkgStatusFile = "/var/lib/dpkg/status";
DpkgScan ReadDpkgStatus(const std::filesystem::path& status);

// `r` (env.packages' Python verdict) with the pinned Debian packages' verdict folded in: a
// missing or changed one fails; no database turns a pass into a skip naming it.
void CompareDebianPackages(const std::vector<DebianPackage>& debs, const DpkgScan& scan,
                           const std::filesystem::path& status, CheckResult& r);

// env.packages for `target` of `lock`: skip outside an image (`python.in_image` false); a
// failure naming the file when the image's Python is not as its record says (checked before
// any Python ran, checks/python_files.h); skip when the lock has no resolved closure for the
// target; else CompareInstalledPackages over the recorded path's site directories; then, when
// the lock pins Debian packages, CompareDebianPackages against `dpkg_status`.
CheckResult CheckInstalledPackages(const Lockfile& lock, const std::string& target,
                                   const ImagePythonFiles& python, double timeout_s,
                                   const std::filesystem::path& dpkg_status = kDpkgStatusFile);

}  // namespace trainlock
