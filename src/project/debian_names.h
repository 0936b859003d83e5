// The grammars of Debian package names and versions (Debian Policy 5.6.1 and 5.6.12) and of a
// snapshot.debian.org timestamp, checked wherever one is read (the manifest, the lock, a
// package index) before any reaches a Containerfile's `apt-get install name=version`: a
// crafted value cannot add an option, a line or a shell word there.
#pragma once

#include <string_view>

namespace trainlock {

// Lower-case letters, digits, '+', '-', '.'; at least two characters, starting alphanumeric.
bool IsDebianPackageName(std::string_view name);

// [epoch:]upstream[-revision]: epoch digits, upstream starting with a digit, then
// alphanumerics and . + ~ (and '-' only before a revision), at most 128 characters.
bool IsDebianVersion(std::string_view version);

// A .deb's path in an archive's pool (a Packages index's Filename): pool/..., no "..".
bool IsDebianPoolFile(std::string_view file);

// A snapshot.debian.org timestamp: YYYYMMDDTHHMMSSZ.
bool IsAptSnapshot(std::string_view snapshot);

// dpkg's ordering of two versions (<0, 0, >0); both must satisfy IsDebianVersion.
int CompareDebianVersions(std::string_view a, std::string_view b);

}  // namespace trainlock
