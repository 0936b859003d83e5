// env.packages: inside an image built by trainlock, the Python distributions installed in the
// image's Python (its purelib and platlib: the venv the lock's closure was installed into) are
// exactly the target's locked wheels, each at its locked version. A package added, removed or
// changed after the build fails, naming it. Read torch-free from each *.dist-info/METADATA
// (Name, Version), bounded: capped entries and bytes, no link followed out of site-packages.
// pip, setuptools and wheel, the venv's own bootstrap (ensurepip), are allowed unlocked and
// listed; locked, they are compared like any other. Debian packages are not read here.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "project/spec.h"
#include "report/report.h"

namespace trainlock {

struct InstalledDistribution {
  std::string name;     // PEP 503-normalised
  std::string version;  // as METADATA spells it
  std::string where;    // the .dist-info directory
};

struct SitePackagesScan {
  std::vector<InstalledDistribution> distributions;
  std::vector<std::string> malformed;  // "<dir>: why", one per entry that could not be read
};

// PEP 503: lower case, every run of '-', '_' and '.' one '-'.
std::string NormalizedDistributionName(std::string_view name);

// Every distribution under `dirs` (each read once: the same directory named twice counts once).
SitePackagesScan ScanSitePackages(const std::vector<std::filesystem::path>& dirs);

// The verdict of `scan` against the target's locked closure.
CheckResult CompareInstalledPackages(const std::vector<PythonWheel>& wheels,
                                     const SitePackagesScan& scan,
                                     const std::vector<std::filesystem::path>& dirs);

// The image Python's purelib and platlib (sysconfig), asked within `timeout_s`; empty with
// `error` set when it cannot answer.
std::vector<std::filesystem::path> PythonSitePackages(const std::filesystem::path& python,
                                                      double timeout_s, std::string* error);

// env.packages for `target` of `lock`: skip outside an image (`in_image` false) or when the lock
// has no resolved closure for the target; error when the image's Python cannot say where its
// packages are; else CompareInstalledPackages.
CheckResult CheckInstalledPackages(const Spec& lock, const std::string& target, bool in_image,
                                   const std::filesystem::path& python, double timeout_s);

}  // namespace trainlock
