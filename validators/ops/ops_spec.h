// The custom-op libraries the ops worker checks (`trainlock.ops-spec/1`), as values and as the
// JSON file the coordinator writes for it. The coordinator resolves them once from the lock
// (each library's path as this node loads it, its pinned sha256, its ops and smoke tests), so
// the ops worker, like the round trip's roles with their engine spec, reads what the
// coordinator resolved and never the project.
//
// Read without trusting it: the worker verifies the file against the hash the coordinator gave
// on the command line, and every member is checked for type and range (the lock's own ranges,
// project/lockfile.h), a problem naming the member ("ops.libraries[0].smoke[1].inputs[0].dtype").
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "project/lockfile.h"  // SmokeSpec: the lock's smoke tests, as plain values

namespace trainlock::validate {

inline constexpr const char* kOpsSpecSchema = "trainlock.ops-spec/1";
inline constexpr size_t kMaxOpsLibraries = 1024;

// One custom-op library of the lock, as the ops worker checks it.
struct OpsLibrary {
  std::string library;  // the lock's name for it ([[custom-ops]].library)
  std::string path;     // absolute: where this node loads it (op_library_path.h)
  std::string sha256;   // the lock's pin; "" for a library the image builds from source
  std::vector<std::string> ops;
  std::vector<SmokeSpec> smoke;
};

// The ops spec file's form.
nlohmann::json OpsSpecJson(const std::vector<OpsLibrary>& libraries);

// The libraries an ops spec file's text states; throws InputError naming `display` and the
// first member that is missing, mistyped or out of range.
std::vector<OpsLibrary> ParseOpsSpec(std::string_view text, const std::string& display);

// Writes the spec of `libraries` to `file` and returns the sha256 of the bytes written.
std::string WriteOpsSpec(const std::filesystem::path& file,
                         const std::vector<OpsLibrary>& libraries);

// The spec file's libraries, read as the ops worker reads them: at most kMaxEngineSpecBytes,
// its sha256 equal to `want_sha256` (else ArtifactMismatch: it changed after the coordinator
// wrote it), then parsed.
std::vector<OpsLibrary> ReadOpsSpecFile(const std::filesystem::path& file,
                                        const std::string& want_sha256);

}  // namespace trainlock::validate
