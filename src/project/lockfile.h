// The typed model of a trainlock manifest (trainlock.toml) and lock (trainlock.lock).
//
// Both files share one tree (docs/DESIGN.md, "Formats"); the lock is the manifest fully pinned plus
// hashes and digests. One struct holds either, `kind` says which, and the loader enforces the
// stricter lock rules (digests, commit ids, file hashes) only for kind == kLock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostic.h"
#include "base/toml_fields.h"
#include "project/validate_defaults.h"

namespace trainlock {

enum class LockfileKind { kManifest, kLock };

// One pinned file of a model or dataset. The manifest names paths only; the lock adds the
// SHA-256 and size.
struct PinnedFile {
  std::string path;
  std::string sha256;  // "" in a manifest
  uint64_t size = 0;
};

// [model] or [dataset]: where the artifacts come from.
struct ArtifactSource {
  std::string source;       // "hf" | "local" | "url"
  std::string repo;         // hf: "org/name"; local: a project-relative directory; url: base URL
  std::string revision;     // hf: branch/tag (manifest) or 40-hex commit (lock)
  std::string token_dtype;  // dataset token shards: "uint16" | "uint32" ("" = not tokens)
  std::vector<PinnedFile> files;
};

// One wheel of a target's resolved Python closure (lock only): what the image installs with
// `pip install --require-hashes --no-deps`.
struct PythonWheel {
  std::string name;     // normalised package name
  std::string version;  // as the file name spells it
  std::string file;     // the wheel's file name
  std::string sha256;
  std::string index;  // the simple API root it came from
};

// One Debian package of a target, pinned by the lock (project/debian_names.h checks each
// value): what the image installs as `apt-get install name=version`.
struct DebianPackage {
  std::string name;
  std::string version;  // exact, as the archive's Packages index spells it
  std::string file;     // the index's Filename (pool/...), for the record
  std::string sha256;   // the index's SHA256 of the .deb
};

// Where a target's Debian packages come from: `deb <archive>[/<snapshot>] <suite> main`.
inline constexpr const char* kDefaultAptSnapshotArchive =
    "http://snapshot.debian.org/archive/debian";
inline constexpr const char* kDefaultAptArchive = "http://deb.debian.org/debian";
inline constexpr const char* kDefaultAptSuite = "bookworm";

// [targets.cuda], [targets.rocm] or [targets.cpu].
struct Target {
  std::string name;  // "cuda" | "rocm" | "cpu"
  std::string base;  // image reference; a digest-pinned one in the lock
  std::map<std::string, std::string> base_platforms;  // lock: "linux/amd64" -> manifest digest
  std::vector<std::string> accelerators;              // catalog names
  std::string torch;                                  // e.g. "2.11.0+cu130"
  std::string cuda;                                   // cuda target: toolkit version, e.g. "13.0"
  std::string rocm;                                   // rocm target: e.g. "6.3"
  std::string nccl;                                   // cuda: NCCL version (optional)
  std::string rccl;                                   // rocm: RCCL version (optional)
  std::string cudnn;                                  // cuda: cuDNN version (optional)
  std::string driver_min;                             // minimum kernel driver on the node
  std::string python;  // the image's Python ("3.12"); "" = the target's default (the lock has it)
  std::vector<std::string> python_index;  // simple API roots, in order; empty = the default
  // Lock: the Python closure (torch for cuda/rocm, and [python], with every dependency);
  // nullopt when `trainlock lock --skip-python` left it unresolved.
  std::optional<std::vector<PythonWheel>> wheels;
  // Debian packages the image installs (debian-packages), pinned by the lock to exact versions
  // from the archive: apt-archive (default: snapshot.debian.org's with apt-snapshot, else
  // deb.debian.org), apt-snapshot (YYYYMMDDTHHMMSSZ, appended to the archive), apt-suite
  // (default bookworm); the lock writes the effective archive and suite.
  std::vector<std::string> debian_packages;
  std::string apt_archive;
  std::string apt_snapshot;
  std::string apt_suite;
  std::vector<DebianPackage> debs;  // lock: one per debian-packages name
  // The apt source line's URL: apt-archive (or its default), then /apt-snapshot when set.
  // The Python the image runs and the closure's wheels are resolved for: `python`, else the
  // default of the target's base (Debian 12's 3.11 for cpu, Ubuntu 24.04's 3.12 for cuda/rocm).
  std::string ImagePython() const {
    return !python.empty() ? python : name != "cpu" ? "3.12" : "3.11";
  }
  std::string AptSourceUrl() const {
    std::string archive = !apt_archive.empty()    ? apt_archive
                          : !apt_snapshot.empty() ? kDefaultAptSnapshotArchive
                                                  : kDefaultAptArchive;
    while (archive.ends_with('/')) archive.pop_back();
    return apt_snapshot.empty() ? archive : archive + "/" + apt_snapshot;
  }
};

// What a smoke test's inputs may be, for every reader of them (the lock, the ops spec).
inline constexpr std::string_view kSmokeDtypes[] = {"fp32", "bf16",  "fp16",
                                                    "fp64", "int64", "int32"};
inline constexpr int64_t kMaxSmokeDim = int64_t{1} << 31;
inline constexpr size_t kMaxSmokeRank = 8;
inline constexpr double kMaxSmokeTolerance = 1e3;

struct TensorSpec {
  std::vector<int64_t> shape;
  std::string dtype;  // "fp32" | "bf16" | "fp16" | "fp64" | "int64" | "int32"
};

// How one custom op is smoke-tested against a reference made of plain torch ops.
struct SmokeSpec {
  std::string op;  // "namespace::name"
  std::vector<TensorSpec> inputs;
  std::string reference;  // name of the reference implementation
  double rtol = 1e-5;
  double atol = 1e-5;
  double grad_rtol = 1e-4;
  double grad_atol = 1e-4;
};

struct CustomOpLibrary {
  std::string library;  // project-relative path (or absolute path inside the image)
  // A CMake project (project-relative, may lead out of the project with '..') that builds the
  // library: the image builds it for the target's architectures. "" = the library is a
  // prebuilt file the image copies.
  std::string source;
  std::string source_sha256;  // lock: the source tree's hash (SourceTreeSha256)
  std::string sha256;         // lock: the prebuilt library's hash, when it existed at lock time
  std::vector<std::string> ops;
  std::vector<SmokeSpec> smoke;
};

// [validate]: what `trainlock-validate` runs and how strictly.
struct ValidateSection {
  int64_t steps = kDefaultValidateSteps;
  int64_t checkpoint_at = kDefaultCheckpointAt;
  int64_t eval_batches = kDefaultEvalBatches;
  int64_t keep_last = kDefaultKeepLast;
  double loss_tolerance = kDefaultLossTolerance;  // 0 = bitwise
  double eval_tolerance = kDefaultEvalTolerance;
  std::string checkpoint_dir;         // "" = a directory under the report's directory
  std::vector<std::string> required;  // check ids that must pass
  // Which trainer runs the round trip (project/round_trip_engines.h); a lock also pins a
  // Python engine's shipped files (PythonEngineSha256).
  std::string engine = "native";
  std::string engine_sha256;
  // valid-for: how long a passing report stands (gate's default --max-age, the scheduler
  // gates' window); 0 = the manifest names none.
  int64_t valid_for_s = 0;
};

// [ext.command]: the project's own smoke command (e.g. its training script for two steps),
// run by the validator as the ext.command check.
struct ExtCommand {
  std::vector<std::string> argv;  // no shell: argv[0] is looked up on PATH
  double timeout_s = 600;
  std::string cwd;                         // project-relative; "" = the project directory
  std::map<std::string, std::string> env;  // added to the validator's environment
  int64_t tail_lines = 40;                 // how much of the output the report keeps
};

// [images.<target>] in the lock: the image built from it (an output: part of lock-sha256, not of
// the build identity the image itself carries).
struct BuiltImage {
  std::string ref;
  std::string digest;
  // What a rebuild (`image build --check`) needs besides the lock, recorded by the build that
  // pushed: its SOURCE_DATE_EPOCH, and the SHA-256 of the cpu image's prebuilt validator ("" when
  // the image compiled it from sources). Absent in locks written before 2026-12-02.
  std::optional<int64_t> source_date_epoch;
  std::string validator_sha256;
};

// [golden.<key-sha256>] in the lock: the golden digest pinned for one key (`trainlock lock
// --golden REPORT`, report/golden_pin.h). An output like [images]: part of lock-sha256, not of the
// build identity (the key names the build identity, and the image carries the lock without it).
struct GoldenPin {
  std::string digest;                      // 64 hex
  std::map<std::string, std::string> key;  // the key's members as the report names them
};

// A [golden] table's name: the SHA-256 of its key's members as one compact JSON object, members
// sorted. The loader refuses a table not named by it; report/golden_digest.h's GoldenKeyId is
// this of a report's key, so the two cannot drift apart.
std::string GoldenKeyIdOfMembers(const std::map<std::string, std::string>& members);

struct Lockfile {
  LockfileKind kind = LockfileKind::kManifest;
  std::string path;  // the file it was read from, for messages

  std::string name;
  std::string config;         // project-relative path of the training YAML
  std::string config_sha256;  // lock only
  int64_t seed = 0;

  std::optional<ArtifactSource> model;
  std::optional<ArtifactSource> dataset;
  std::map<std::string, Target> targets;
  std::map<std::string, std::string> python;  // package -> exact version
  std::vector<CustomOpLibrary> custom_ops;
  ValidateSection validate;
  std::optional<ExtCommand> ext_command;

  // Lock only.
  int64_t lock_version = 0;
  std::string manifest_sha256;
  std::map<std::string, BuiltImage> images;
  std::map<std::string, GoldenPin> golden;  // key-sha256 -> the digest pinned for that key
  // lock-sha256 without [images] and [golden] (base/canonical.h): what images and reports are
  // bound to.
  std::string lock_build_sha256;

  // Where each field was read ("targets.cuda.driver-min" -> 12:15), for findings.
  PositionMap positions;
  SourcePos Pos(const std::string& dotted) const;
};

}  // namespace trainlock
