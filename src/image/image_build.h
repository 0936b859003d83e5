// `trainlock image build`: stage a build context (the generated or a given Containerfile,
// the lock, manifest and config, trainlock's sources when the Containerfile needs them),
// build it with whichever engine exists under reproducibility settings (timestamps from
// SOURCE_DATE_EPOCH, no cache, OCI format, no provenance attestations), optionally twice to
// prove the digest reproducible, push, and record the pushed digest in the lock's [images].
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "base/failure.h"
#include "base/progress.h"
#include "image/container_tool.h"
#include "image/image_generate.h"

namespace trainlock {

struct ImageBuildOptions {
  ImageOptions image;  // target, SOURCE_DATE_EPOCH, labels
  std::string engine;  // buildah | podman | docker; "" = the first found
  std::string push;    // registry reference to push to; "" = none
  bool verify_reproducible = false;
  // Rebuild and compare the digest with the one the lock's [images.<target>] records
  // (`image build --check`): exit 1 when they differ, 2 when the lock records none.
  bool check = false;
  std::filesystem::path containerfile;  // "" = the generated one
  std::filesystem::path source_dir;     // trainlock's sources, for the generated Containerfile
  bool tls_verify = true;        // false: plain HTTP to every registry (loopback ones always are)
  ContainerToolStorage storage;  // buildah/podman storage; no root = the engine's default
  bool verbose = false;          // -v: a failing engine command is shown whole, with all its output
  Progress* progress = nullptr;  // told of each step (stage, build, push); may be null
};

struct BuiltImageResult {
  std::string engine;
  std::string digest;              // of the pushed (or locally written) manifest
  std::string second_digest;       // --verify-reproducible: the second build's
  std::string ref;                 // pushed reference, "" when not pushed
  int64_t source_date_epoch = -1;  // the one the build used (--check: the lock's by default)
  std::string validator_sha256;    // the cpu image's staged validator; "" when compiled in it
};

// Throws a Failure (failure.h): exit 3 when no engine exists or a build or push fails, 1 when
// --verify-reproducible saw two different digests or --check a digest other than the lock's,
// 2 for a request that cannot be built (no lock, no SOURCE_DATE_EPOCH, an unknown engine,
// --check with --push or without a digest recorded for the target).
BuiltImageResult BuildImage(const std::filesystem::path& project_dir,
                            const ImageBuildOptions& options);

// The lock as an image carries it: DIR/trainlock.lock without [images] (the build results
// `image build --push` writes back), in the bytes trainlock writes locks in. The same before
// and after a push, so a rebuild from the committed lock can give the digest it records.
// Throws InputError naming `display` for a lock that is not TOML.
std::string LockTextForImage(const std::string& lock_text, const std::string& display);

// Sets [images.<target>] in DIR/trainlock.lock to the pushed ref and digest, with what a
// rebuild needs besides the lock (source-date-epoch, validator-sha256): lock-sha256 changes; its
// build identity, which the image carries, does not.
void RecordBuiltImage(const std::filesystem::path& project_dir, const std::string& target,
                      const BuiltImageResult& built);

}  // namespace trainlock
