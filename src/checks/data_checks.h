// data.model and data.dataset: every file the lock pins for the model and the dataset is
// present under the project (or the cache) with the pinned size and SHA-256, and every token
// of a pinned dataset shard is a valid id of the config's vocabulary.
#pragma once

#include <optional>
#include <string>

#include "base/file_stream.h"
#include "project/project.h"
#include "report/report.h"

namespace trainlock {

// The check `data.<kind>` ("model" or "dataset") of `artifact`; skip when the lock pins no files.
// Each file is read once (regular files only) by `deadline`; a dataset of token shards
// (token-dtype) also has every token id checked against the config's vocab_size.
CheckResult VerifyArtifact(const Project& project, const std::optional<ArtifactSource>& artifact,
                           const std::string& kind, Deadline deadline = Deadline::max());

}  // namespace trainlock
