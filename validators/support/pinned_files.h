// Verification at the point of use: a worker that reads a file the lock pins (model weights,
// dataset shards, custom-op libraries, the training config) hashes the bytes it reads while it
// reads them, compares the digest with the lock's, and records what it measured. A mismatch is
// an ArtifactMismatch, which fails the check that used the file (train.step, train.roundtrip,
// ops.custom) naming the file and both hashes. Nothing turns this off: --only selects checks,
// never whether the bytes used are the bytes pinned.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/failure.h"
#include "report/check_metrics.h"

namespace trainlock::validate {

// A pinned file whose bytes, as read by the worker, are not the ones the lock pins (or, for
// the engine spec, the ones the coordinator wrote: `pinned_by` and `why` say so).
class ArtifactMismatch : public Failure {
 public:
  ArtifactMismatch(const std::string& path, const std::string& measured, const std::string& pinned,
                   const std::string& pinned_by = "the lock's",
                   const std::string& why = "the file changed after `trainlock lock`");
};

// Compares `measured` (the SHA-256 of the `bytes` bytes just read from `path`) with `pinned`
// (the lock's; "" = the lock pins no hash for it, nothing to compare), records the measurement
// for the report and throws ArtifactMismatch when they differ.
void VerifyPinned(const std::string& path, const std::string& measured, uint64_t bytes,
                  const std::string& pinned);

// A spec file the coordinator wrote for this process and hashed (`what`: "engine spec", "ops
// spec"): its text, read bounded (run/engine_spec.h's ReadSpecFile), and the sha256 of those
// bytes, which must be `want_sha256`, the hash the coordinator passed on the command line; else
// ArtifactMismatch ("the `what` changed after the coordinator wrote it"). The process then
// trusts nothing but this text.
struct CoordinatorSpec {
  std::string text;
  std::string sha256;
};
CoordinatorSpec ReadCoordinatorSpec(const std::filesystem::path& file,
                                    const std::string& want_sha256, const std::string& what);

// Everything this process verified so far, in order, as train.step's / ops.custom's
// `artifacts` rows (verified_by "worker"). A process-wide log: each worker is one process, and
// its loaders (model_loader.cc, token_data.cc, custom_ops.cc) need no collector passed down.
std::vector<ArtifactRow> VerifiedArtifacts();

}  // namespace trainlock::validate
