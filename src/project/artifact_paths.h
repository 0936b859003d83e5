// Where a project's generated files live on this machine. The files a lock pins for [model] and [dataset] live on this machine: the project's
// own directory for `source = "local"`, else a cache keyed by repository and commit
// (TRAINLOCK_CACHE, default DIR/.trainlock/cache) that `trainlock fetch` fills.
#pragma once

#include <filesystem>
#include <string_view>

#include "project/spec.h"

namespace trainlock {

// Where `trainlock validate` writes its report unless --out says otherwise, and where
// `trainlock gate` looks for it: DIR/.trainlock/reports/report.json (beside the cache, ignored
// with the rest of .trainlock/).
std::filesystem::path DefaultReportPath(const std::filesystem::path& project_dir);

// `kind` is "model" or "dataset".
std::filesystem::path ArtifactDir(const std::filesystem::path& project_dir,
                                  const ArtifactSource& artifact, std::string_view kind);

}  // namespace trainlock
