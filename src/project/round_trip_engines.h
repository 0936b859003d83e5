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

struct RoundTripEngine {
  std::string_view name;
  bool python;             // a program of the shipped package, not this binary's worker
  bool async_save;         // --kill-during-save: the coordinator can kill it mid-save
  bool reshard;            // can restore a checkpoint at another world size
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
