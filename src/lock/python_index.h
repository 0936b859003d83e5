// Reading a Python package index through the simple repository API, as pip and uv do: a
// project's release files from its HTML (PEP 503) or JSON (PEP 691) page, with their hashes,
// Requires-Python and yanked marks, and a wheel's core metadata (its Requires-Dist) from the
// PEP 658 `.metadata` file beside it, else from the wheel itself. Every body with a hash the
// index names is checked against it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/failure.h"

namespace trainlock {

struct IndexOptions {
  long timeout_s = 30;
  int attempts = 4;
  std::filesystem::path scratch;  // where wheels are downloaded to read their metadata
};

struct IndexFile {
  std::string file;             // e.g. "torch-2.11.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"
  std::string url;              // absolute, without the #fragment
  std::string sha256;           // "" when the index names none
  std::string requires_python;  // "" = any
  bool metadata = false;        // a PEP 658 .metadata file exists
  std::string metadata_sha256;  // its hash, when the index names one
  bool yanked = false;
};

// The project's files on `index` (a simple API root such as https://pypi.org/simple), or
// nullopt when the index answers 404 (it does not have the project). Throws a Failure with
// exit 3 when the index cannot answer.
std::optional<std::vector<IndexFile>> ListIndexFiles(const std::string& index,
                                                     const std::string& project,
                                                     const IndexOptions& options);

// The files a simple API page lists: PEP 691 JSON when `content_type` names it, else PEP 503
// HTML. `url` is the page's own address (hrefs resolve against it), `what` names it in errors.
// Linear in the page's size; JSON is parsed within base/json_limits.h's bounds. Throws a
// Failure (exit 3) for a JSON page that is refused or has no 'files' list.
std::vector<IndexFile> ParseIndexPage(const std::string& page, const std::string& content_type,
                                      const std::string& url, const std::string& what);

// The parts of a METADATA file the resolver reads.
struct CoreMetadata {
  std::string name;
  std::string version;
  std::string requires_python;
  std::vector<std::string> requires_dist;
};
// Reads the headers (up to the first blank line) of at most the first 16 MiB of `text`, in
// one pass; never throws.
CoreMetadata ParseCoreMetadata(const std::string& text);

// The wheel's METADATA: the .metadata file when the index offers one, else read from the
// wheel, downloaded into options.scratch (then `file.sha256` is set when the index named
// none). Throws a Failure: exit 1 when a body does not match its hash or the wheel holds no
// METADATA, 3 when the index cannot answer.
CoreMetadata FetchCoreMetadata(IndexFile& file, const IndexOptions& options);

// Downloads the file to learn its SHA-256 (for an index that names none); exit codes as above.
std::string HashIndexFile(const IndexFile& file, const IndexOptions& options);

// `href` resolved against the page `base` it appears on (absolute, host-relative or relative
// with ./ and ../), without its #fragment.
std::string ResolveUrl(const std::string& base, const std::string& href);

}  // namespace trainlock
