// The engine spec of a project as the coordinator writes it (coordinator/spec_resolver.h), for
// tests that start a worker process directly, as the coordinator starts it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "base/sha256.h"
#include "coordinator/spec_resolver.h"
#include "project/project.h"
#include "test_support.h"

namespace trainlock::testing {

// Writes the spec of `project`'s lock for `steps` steps to `file`; returns its SHA-256, the
// worker's --spec-sha256.
inline std::string WriteEngineSpec(const std::filesystem::path& project, int64_t steps,
                                   const std::filesystem::path& file) {
  const Project p = LoadProject(project, ManifestRequirement::kOptional);
  const std::string text =
      EngineSpecJson(validate::ResolveEngineSpec(p, steps, "native")).dump(2) + "\n";
  WriteFile(file, text);
  return Sha256Hex(text);
}

}  // namespace trainlock::testing
