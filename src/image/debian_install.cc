// The Debian step of a generated Containerfile; see debian_install.h.
#include "image/debian_install.h"

#include "base/strings.h"
#include "image/in_image_paths.h"

namespace trainlock {
namespace {

// apt's name for a downloaded .deb, up to its architecture: name_version_ with a version's
// epoch colon written %3a (apt quotes '_' and ':'; Debian's grammar allows no '_').
std::string AptFilePrefix(const DebianPackage& d) {
  std::string version;
  for (char c : d.version) version += c == ':' ? std::string("%3a") : std::string(1, c);
  return d.name + "_" + version + "_";
}

// A shell function `pinned_deb NAME VERSION SHA256 PREFIX`, run in the download directory:
// exactly one PREFIX*.deb must be there, with the lock's SHA256; otherwise one line on stderr
// naming the package, and status 1. Its text reaches a RUN line as it is: it holds no value
// of the lock (those are its arguments, single-quoted), only the target's name (cpu, cuda or
// rocm).
std::string PinnedDebFunction(const std::string& target) {
  const std::string field = "(targets." + target + ".debs)";
  return "pinned_deb() { \\\n"
         "      deb=$4; set -- \"$1\" \"$2\" \"$3\" \"$deb\"*.deb; \\\n"
         "      if [ \"$#\" -ne 4 ] || [ ! -f \"$4\" ]; then \\\n"
         "        echo \"trainlock: $1 $2: apt downloaded no single ${deb}*.deb to compare with "
         "the lock's sha256 " +
         field +
         "\" >&2; \\\n"
         "        return 1; \\\n"
         "      fi; \\\n"
         "      got=$(sha256sum < \"$4\") && got=${got%% *} && \\\n"
         "      if [ \"$got\" != \"$3\" ]; then \\\n"
         "        echo \"trainlock: $1 $2: sha256 $got is not the lock's $3 " +
         field +
         ": the archive serves other bytes for this version than it did when the lock was "
         "made\" >&2; \\\n"
         "        return 1; \\\n"
         "      fi; \\\n"
         "    }";
}

}  // namespace

std::string DebianInstallStep(const Target& t) {
  if (t.debs.empty()) return "";
  const std::string dir = kDebianDownloadsInImage;
  std::string pins;
  std::string checks;
  for (const DebianPackage& d : t.debs) {
    pins += " \\\n        " + SingleQuotedForShell(d.name + "=" + d.version);
    checks += " && \\\n    pinned_deb " + SingleQuotedForShell(d.name) + " " +
              SingleQuotedForShell(d.version) + " " + SingleQuotedForShell(d.sha256) + " " +
              SingleQuotedForShell(AptFilePrefix(d));
  }
  const std::string source = t.AptSourceUrl() + " " + t.apt_suite;
  const std::string apt =
      "apt-get -o Dir::Etc::SourceList=/etc/apt/trainlock.list "
      "-o Dir::Etc::SourceParts=/nonexistent";
  // --reinstall: a pinned package the base already holds at its version is downloaded,
  // compared and installed all the same, so every pinned .deb in the image is the lock's.
  const std::string install = apt + " -o Dir::Cache::Archives=" + dir +
                              "/ \\\n        install -y --no-install-recommends --reinstall";
  return "\n# The Debian packages the lock pins (debian-packages), at exactly its versions, from\n"
         "# " +
         source +
         ". apt downloads them, and what they depend on, into\n"
         "# " +
         dir +
         ", checking each against the archive's signed index; each pinned .deb is\n"
         "# then compared with the lock's sha256 (targets." +
         t.name +
         ".debs), the build failing on one that\n"
         "# differs, and apt installs from those files, downloading nothing more.\n"
         "RUN echo " +
         SingleQuotedForShell("deb [check-valid-until=no] " + source + " main") +
         " > /etc/apt/trainlock.list && \\\n    mkdir -p " + dir + "/partial && \\\n    " + apt +
         " update && \\\n    " + install + " --download-only" + pins + " && \\\n    cd " + dir +
         " && \\\n    " + PinnedDebFunction(t.name) + checks + " && \\\n    cd / && \\\n    " +
         install + " --no-download" + pins + " && \\\n    rm -rf " + dir +
         " /var/lib/apt/lists/* /etc/apt/trainlock.list";
}

}  // namespace trainlock
