// data.model and data.dataset: every file the lock pins for the model and the dataset is
// present under the project (or the cache) with the pinned size and SHA-256.
#pragma once

#include <optional>
#include <string>

#include "project/project.h"
#include "report/report.h"

namespace trainlock {

// The check `data.<kind>` ("model" or "dataset") of `artifact`; skip when the lock pins no files.
CheckResult VerifyArtifact(const Project& project, const std::optional<ArtifactSource>& artifact,
                           const std::string& kind);

}  // namespace trainlock
