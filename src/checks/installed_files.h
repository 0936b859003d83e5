// env.packages' file check: inside an image, every file each installed distribution lists in
// its RECORD (PEP 376, PEP 627; the wheel spec's `sha256=<urlsafe base64, no padding>`) has that
// hash and size, and every file under the image Python's site-packages directories is owned by
// some installed distribution's RECORD: a `.pth` file, a stray module or package, or a file
// changed or removed after the build fails naming its path. RECORD lines without a hash are
// allowed only where the spec allows them (RECORD itself, its signatures, `.pyc`/`.pyo`) and are
// counted; compiled `__pycache__/<name>.*.pyc` files of an owned `<name>.py` are tolerated.
// Bounded: capped entries, bytes and time; no link is followed (a link is a finding); what
// cannot be read is a finding too, never a pass.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/file_stream.h"

namespace trainlock {

// One RECORD row: a path relative to the site-packages directory holding the .dist-info,
// "algorithm=digest" or "", and the size in bytes or "".
struct RecordRow {
  std::string path;
  std::string hash;
  std::string size;
};

// RECORD's rows (CSV as Python's csv module writes it: quoted fields, doubled quotes); false
// with `error` naming the line when a row is malformed.
bool ParseRecord(std::string_view text, std::vector<RecordRow>* rows, std::string* error);

// The wheel spec's spelling of a SHA-256 digest given in hex: urlsafe base64 without padding.
std::string RecordDigestFromHex(std::string_view hex);

struct InstalledFiles {
  int64_t files_verified = 0;        // files whose RECORD hash and size matched
  int64_t bytes_verified = 0;        // their bytes
  int64_t files_unhashed = 0;        // RECORD lines the spec lets go without a hash (RECORD, .pyc)
  int64_t files_compiled = 0;        // __pycache__ files of owned sources, not in any RECORD
  int64_t records_outside = 0;       // RECORD lines outside site-packages (scripts): not read
  std::vector<std::string> changed;  // "<path>: why" (hash or size differs)
  std::vector<std::string> missing;  // "<path>: listed in <dist-info>'s RECORD"
  std::vector<std::string> unowned;  // "<path>" owned by no installed distribution
  std::vector<std::string> unreadable;  // "<path>: why" (a link, no RECORD, over a cap, ...)
  int64_t problems = 0;                 // all four lists' findings, also those not listed
};

// Verifies the RECORD of each `dist_infos` entry (a .dist-info directory directly under one of
// `dirs`) against the files under `dirs`, and every file under `dirs` against the RECORDs,
// within `deadline`.
InstalledFiles VerifyInstalledFiles(const std::vector<std::filesystem::path>& dirs,
                                    const std::vector<std::filesystem::path>& dist_infos,
                                    Deadline deadline);

}  // namespace trainlock
