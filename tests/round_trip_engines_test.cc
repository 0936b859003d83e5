// The round trip's engine list is written once, in src/project/round_trip_engines.cc: the
// Python package names no engine of its own, it loads the module an engine's name maps to
// (engines/__init__.py). These tests hold the table and the package's modules to each other.
#include "project/round_trip_engines.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace trainlock {
namespace {

constexpr std::string_view kEnginesDir = "trainlock_engine/engines/";

// The engine names the package's modules stand for: engines/hf_trainer.py is "hf-trainer";
// a module whose name starts with "_" is a shared piece, no engine.
std::set<std::string> PackageEngineModules() {
  std::set<std::string> names;
  for (const EmbeddedFile& f : EmbeddedPythonEngineFiles()) {
    if (f.name.substr(0, kEnginesDir.size()) != kEnginesDir) continue;
    std::string module(f.name.substr(kEnginesDir.size()));
    if (module.find('/') != std::string::npos || module.size() < 4 ||
        module.substr(module.size() - 3) != ".py" || module[0] == '_')
      continue;
    module.resize(module.size() - 3);
    for (char& c : module)
      if (c == '_') c = '-';
    names.insert(module);
  }
  return names;
}

TEST(RoundTripEngines, EveryPythonEngineIsAModuleOfThePackage) {
  const std::set<std::string> modules = PackageEngineModules();
  ASSERT_FALSE(modules.empty()) << "this build embeds no Python engine files";
  for (const RoundTripEngine& e : RoundTripEngines()) {
    if (!e.python) continue;
    EXPECT_TRUE(modules.count(std::string(e.name)))
        << e.name << " is in the table but the package has no module for it";
  }
}

TEST(RoundTripEngines, EveryModuleOfThePackageIsAnEngineOfTheTable) {
  for (const std::string& module : PackageEngineModules()) {
    const RoundTripEngine* engine = FindRoundTripEngine(module);
    ASSERT_NE(engine, nullptr) << "engines/" << module << " is in the package but not the table";
    EXPECT_TRUE(engine->python) << module;
  }
}

TEST(RoundTripEngines, NativeComesFirstAndIsNoModule) {
  ASSERT_FALSE(RoundTripEngines().empty());
  EXPECT_EQ(RoundTripEngines().front().name, "native");
  EXPECT_FALSE(RoundTripEngines().front().python);
  EXPECT_FALSE(PackageEngineModules().count("native"));
}

}  // namespace
}  // namespace trainlock
