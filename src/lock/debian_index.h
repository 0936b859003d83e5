// A Debian archive's package index, for `trainlock lock`: each package a target's
// debian-packages names is pinned to the version the archive's
// dists/<suite>/main/binary-amd64/Packages.gz lists (the highest, by dpkg's order, when it
// lists several), with the .deb's Filename and SHA256. With a dated snapshot
// (snapshot.debian.org, or a loopback stand-in in tests) the answer never changes; without
// one, `lock --check --upstream` says when the archive has moved on. The index is hostile
// input: its size is capped compressed and uncompressed, it is read in one pass, and every
// value kept is checked against Debian's grammar (project/debian_names.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lock/python_index.h"
#include "project/lockfile.h"

namespace trainlock {

// Every well-formed stanza of a Packages file (Package, Version, Filename, SHA256); a stanza
// whose values fail their grammar is left out.
std::vector<DebianPackage> ParseDebianPackagesIndex(std::string_view text);

// The index URL of `target`'s apt source.
std::string DebianPackagesIndexUrl(const Target& target);

// Pins each of target.debian_packages from its archive. Throws a Failure naming `what` and the
// package: exit 1 for a name the index does not list, 3 when the index cannot be fetched or
// read.
std::vector<DebianPackage> ResolveDebianPackages(const std::string& what, const Target& target,
                                                 const IndexOptions& options);

}  // namespace trainlock
