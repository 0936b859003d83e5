// The lock against the project's files; see lock_drift.h.
#include "compat/lock_drift.h"

namespace trainlock {

std::vector<Finding> LockDrift(const Project& project) {
  std::vector<Finding> findings;
  if (!project.lock) return findings;
  const Lockfile& lock = *project.lock;
  if (project.manifest && lock.manifest_sha256 != project.manifest_sha256) {
    findings.push_back({"lock.stale", project.lock_path, lock.Pos("manifest-sha256"),
                        "the lock was made from a different manifest (manifest-sha256 " +
                            lock.manifest_sha256.substr(0, 12) +
                            "... != " + project.manifest_sha256.substr(0, 12) + "...)",
                        "run `trainlock lock` to re-resolve"});
  }
  const bool same_config = !project.manifest || lock.config == project.manifest->config;
  if (same_config && project.config_read && lock.config_sha256 != project.config_sha256) {
    findings.push_back(
        {"lock.config", project.lock_path, lock.Pos("project.config-sha256"),
         "the training config " + project.config_path + " changed since the lock was made",
         "run `trainlock lock` to record the new config hash"});
  }
  return findings;
}

}  // namespace trainlock
