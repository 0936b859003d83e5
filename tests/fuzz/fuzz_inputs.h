// What each fuzz target does with one input, shared by the libFuzzer driver (fuzz_target.cc,
// built with clang in build/fuzz) and the replay of recorded inputs in the ordinary test
// build (tests/fuzz_regression_test.cc), so that every crash once found stays a test.
//
// Each function feeds the bytes to one parser of untrusted input. The parser may accept them
// or refuse them with its documented exception; anything else (another exception, a broken
// promise about what was accepted, a sanitizer report) is a bug. Broken promises throw
// FuzzInvariantBroken, which no parser catches, so libFuzzer sees it as a crash.
#pragma once

#include <stdexcept>
#include <string_view>
#include <vector>

namespace trainlock::fuzz {

class FuzzInvariantBroken : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// Manifest, lock and training config loaders (the first byte picks one): accepted or
// InputError with one-line diagnostics.
void Loaders(std::string_view input);
// report.json: the bounded parse, ReportSchemaViolations, every renderer and ViewOfReport.
void Report(std::string_view input);
// ELF files with CUDA fat binaries and HIP offload bundles: InspectGpuBinaryBytes.
void GpuBinary(std::string_view input);
// Whole safetensors files: ParseSafetensorsHeader.
void Safetensors(std::string_view input);
// A checkpoint's manifest.json: ParseCheckpointManifest.
void Checkpoint(std::string_view input);
// The state in a checkpoint's manifest.json, as the worker reads it: ReadCheckpointRunState,
// then the data-loader built from it restored to the state's position.
void CheckpointState(std::string_view input);
// A registry's manifest or index, token answer and docker config (the first byte picks one).
void Registry(std::string_view input);
// The Hub's revision answer: ReadHubRevisionAnswer.
void Hub(std::string_view input);

// A simple API page as PEP 503 HTML (text/html): ParseIndexPage.
void Pep503(std::string_view input);
// A simple API page as PEP 691 JSON (application/vnd.pypi.simple.v1+json): ParseIndexPage.
void Pep691(std::string_view input);
// A wheel's core metadata: ParseCoreMetadata.
void Metadata(std::string_view input);

// A container layer's blob, gzip or plain tar: LayerReader (layer_listing.h).
void Layer(std::string_view input);
// A tar stream gzip-compressed here (one or two members) and read back through LayerReader:
// the pax, ustar and GNU headers behind gunzip.
void LayerGzip(std::string_view input);
// ShellQuote (fleet.h), the quoting of every value in a generated script: bash reads the
// result back as one word holding exactly the input (ReadShellWord, a parser of the shell's
// word rules written in the target).
void ShellQuoteTarget(std::string_view input);

struct FuzzTarget {
  const char* name;  // the target's folder under tests/fuzz/seeds and tests/fuzz/regressions
  void (*run)(std::string_view input);
};

// Every target, in the order the campaign runs them.
const std::vector<FuzzTarget>& FuzzTargets();

}  // namespace trainlock::fuzz
