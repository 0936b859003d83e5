// libFuzzer target over the manifest, lock and training-config loaders: any input must either
// load or be refused with InputError; nothing else may escape, crash or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/diagnostic.h"
#include "project/spec_loader.h"
#include "project/train_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the loader, so one corpus exercises all three.
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0:
        trainlock::LoadSpec(text, "fuzz.toml", trainlock::SpecKind::kManifest);
        break;
      case 1:
        trainlock::LoadSpec(text, "fuzz.lock", trainlock::SpecKind::kLock);
        break;
      default:
        trainlock::LoadTrainConfig(text, "fuzz.yaml");
        break;
    }
  } catch (const trainlock::InputError& e) {
    for (const auto& d : e.diagnostics().items()) {
      if (d.Format().find('\n') != std::string::npos) __builtin_trap();  // one line each
    }
  }
  return 0;
}
