// The engines that can run the round trip (`[validate] engine`): trainlock's own LibTorch
// trainer ("native") and the Python engines trainlock ships in validators/engines/python,
// compiled into this library so that `lock` pins, `image generate` installs and the validator
// runs the same bytes. What each engine can do is stated here once, so a request it cannot
// honour is refused before any work.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/catalog_embedded.h"

namespace trainlock {

// The points of a save at which an engine told --hold-save-at POINT stops, says `checkpoint`
// phase "held" and waits to be killed (docs/validate.md, "Kill during save"): before any file of
// the step is written, with part of one file's bytes written, after every tensor file and
// before the metadata, after the metadata and before the commit record, after the commit record.
#define TRAINLOCK_SAVE_POINTS(X)      \
  X(kBeforeFiles, "before-files")     \
  X(kMidFile, "mid-file")             \
  X(kAfterFiles, "after-files")       \
  X(kAfterMetadata, "after-metadata") \
  X(kAfterCommit, "after-commit")
#define TRAINLOCK_SAVE_POINT_CONSTANT(name, text) inline constexpr const char* name = text;
TRAINLOCK_SAVE_POINTS(TRAINLOCK_SAVE_POINT_CONSTANT)
#undef TRAINLOCK_SAVE_POINT_CONSTANT
#define TRAINLOCK_SAVE_POINT_TEXT(name, text) text,
inline constexpr const char* kSavePoints[] = {TRAINLOCK_SAVE_POINTS(TRAINLOCK_SAVE_POINT_TEXT)};
#undef TRAINLOCK_SAVE_POINT_TEXT

struct RoundTripEngine {
  std::string_view name;
  bool python;      // a program of the shipped package, not this binary's worker
  bool async_save;  // --kill-during-save: it saves twice and holds at --hold-save-at
  bool reshard;     // can restore a checkpoint at another world size
  // --steady-saves: saves again after the round trip's checkpoint in the run's mode and says
  // each as `checkpoint` phase "steady" (the engines whose loop trainlock's driver owns)
  bool steady_saves;
  // Its resumed process gives the device back (gradients, the allocator's cached blocks) before
  // it says its last step, so the portable process may start beside its end
  bool frees_device_after_training;
  std::string_view needs;  // what the image must hold, for messages
};

// Every engine, "native" first (the default).
std::span<const RoundTripEngine> RoundTripEngines();
// nullptr when `name` is no engine.
const RoundTripEngine* FindRoundTripEngine(std::string_view name);
std::vector<std::string> RoundTripEngineNames();

// The pin `lock` records as validate.engine-sha256: the SHA-256 of the package's listing,
// one "<sha256 of the file>  <relative path>\n" line per file in path order (what
// `sha256sum` prints for them). "" when this build ships no engine files.
std::string PythonEngineSha256(std::span<const EmbeddedFile> files);
inline std::string PythonEngineSha256() {
  return PythonEngineSha256(EmbeddedPythonEngineFiles());
}

}  // namespace trainlock
