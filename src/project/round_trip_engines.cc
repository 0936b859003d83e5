// The round trip's engines and the shipped Python package's pin; see round_trip_engines.h.
#include "project/round_trip_engines.h"

#include <algorithm>
#include <array>

#include "base/sha256.h"

namespace trainlock {
namespace {

constexpr std::array<RoundTripEngine, 6> kRoundTripEngines = {{
    {"native", false, true, false, true, true, "the validator alone"},
    {"ddp", true, false, true, true, false, "Python with torch >= 1.13"},
    {"fsdp2", true, true, true, true, true, "Python with torch >= 2.4 and transformers"},
    {"hf-trainer", true, false, false, false, false,
     "Python with torch, transformers and accelerate"},
    {"lightning", true, false, false, false, false,
     "Python with torch, transformers and lightning"},
    {"deepspeed", true, false, false, true, false, "Python with torch, transformers and deepspeed"},
}};

}  // namespace

std::span<const RoundTripEngine> RoundTripEngines() {
  return kRoundTripEngines;
}

const RoundTripEngine* FindRoundTripEngine(std::string_view name) {
  for (const RoundTripEngine& e : kRoundTripEngines)
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<std::string> RoundTripEngineNames() {
  std::vector<std::string> names;
  for (const RoundTripEngine& e : kRoundTripEngines) names.emplace_back(e.name);
  return names;
}

std::string PythonEngineSha256(std::span<const EmbeddedFile> files) {
  if (files.empty()) return "";
  std::vector<const EmbeddedFile*> sorted;
  for (const EmbeddedFile& f : files) sorted.push_back(&f);
  std::sort(sorted.begin(), sorted.end(),
            [](const EmbeddedFile* a, const EmbeddedFile* b) { return a->name < b->name; });
  std::string listing;
  for (const EmbeddedFile* f : sorted)
    listing += Sha256Hex(f->contents) + "  " + std::string(f->name) + "\n";
  return Sha256Hex(listing);
}

}  // namespace trainlock
