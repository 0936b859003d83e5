// The golden digest: what a node computed in the round trip's deterministic steps, to the bit,
// and the key under which two nodes' digests must agree (docs/validate.md, "The golden digest").
//
// The digest is of the uninterrupted run's final state as the coordinator read it from the file
// it told the process to write (coordinator/state_file.h: each tensor's dtype, shape and bytes),
// never a value a process prints. Two nodes that run the same program on the same inputs with
// deterministic kernels, on the same GPU model with the same driver and libraries, must compute
// the same bits; one that does not computes wrongly (suspected silent data corruption). The key
// names everything that may legitimately change those bits; two reports under different keys are
// never compared. This header is the format's one home: the report's `golden` member, written by
// ToJson and read back by ReadGolden (the schema check and the view use both).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>

namespace trainlock {

struct Report;

// What the bits of a deterministic run may legitimately depend on. "" where not known (on the
// CPU there is no GPU, driver or CUDA; cuBLAS's version is not probed: inside an image the image
// digest fixes it).
struct GoldenKey {
  std::string gpu;                 // the model that trained, "NVIDIA H200"; "cpu" on the CPU
  std::string compute_capability;  // "9.0" (CUDA) or the gfx target (ROCm)
  std::string driver;              // the NVIDIA driver, "580.95.05"
  std::string cuda;                // the CUDA runtime the run loads, "13.0"
  std::string cublas, cudnn, nccl;
  std::string torch;         // the torch that trained: the Python engine's, else LibTorch's
  std::string engine;        // the round trip's engine ("native", "ddp", ...)
  std::string image_digest;  // "sha256:..."; "" when the report names no image
  std::string lock_sha256;   // the lock's build identity
  std::string config_sha256;

  bool operator==(const GoldenKey&) const = default;
};

struct GoldenDigest {
  std::string digest;  // 64 hex: GoldenStateDigest of the uninterrupted run's final state
  GoldenKey key;
};

// The digest of a final state from its per-tensor digests (tensor name -> SHA-256, as
// StateDigest holds them): SHA-256 of the canonical JSON object of them.
std::string GoldenStateDigest(const std::map<std::string, std::string>& tensor_digests);

// The key's name: SHA-256 of its canonical JSON. Two reports are comparable when theirs agree; a
// lock pins a digest per key under it (`trainlock lock --golden`).
std::string GoldenKeyId(const GoldenKey& key);

// The report's `golden` member: {"digest", "key": {...}, "key_sha256"}.
nlohmann::json ToJson(const GoldenDigest& golden);
// The member read back; nullopt when it is absent, null or not of that shape (the schema check
// names what is wrong with it).
std::optional<GoldenDigest> ReadGolden(const nlohmann::json& member);
// What is wrong with a `golden` member, "" when nothing (ReportSchemaViolations).
std::string GoldenSchemaProblem(const nlohmann::json& member);

// The golden digest of a finished report: the digest train.roundtrip measured (its
// golden_digest), only when that check passed, bitwise (a run that did not resume to the bit
// proves no determinism to compare), with the key read from the report's own facts (the device
// that trained, env.versions, the image, lock and config); nullopt otherwise.
std::optional<GoldenDigest> GoldenOfReport(const Report& report);

}  // namespace trainlock
