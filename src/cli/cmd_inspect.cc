// `trainlock inspect LIB...`: the GPU code embedded in shared libraries (SASS architectures
// and PTX versions of CUDA fat binaries, gfx targets of HIP offload bundles).
#include <iostream>

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "cli/commands.h"
#include "compat/gpu_binary.h"

namespace trainlock::cli {
namespace {

struct InspectOptions {
  std::vector<std::string> libraries;
  bool json = false;
  int sm = 0;               // --sm: also say whether a device of this capability can run it
  std::string driver_cuda;  // --driver-cuda: the driver's CUDA version for PTX JIT
};

std::string Describe(const GpuBinaryInfo& info) {
  if (!info.has_gpu_code()) return "no GPU code";
  std::string out;
  auto list = [&](const std::string& label, const std::vector<std::string>& items) {
    if (items.empty()) return;
    out += (out.empty() ? "" : "; ") + label + " ";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  };
  std::vector<std::string> sass, ptx;
  for (int s : info.sass) sass.push_back("sm_" + std::to_string(s));
  for (const PtxEntry& p : info.ptx) {
    ptx.push_back("compute_" + std::to_string(p.arch) + " (ISA " + std::to_string(p.isa_major) +
                  "." + std::to_string(p.isa_minor) + ")");
  }
  list("SASS", sass);
  list("PTX", ptx);
  list("HIP", info.gfx);
  return out;
}

int RunInspect(const InspectOptions& o) {
  int driver = 0;
  if (!o.driver_cuda.empty()) {
    int major = 0, minor = 0;
    if (std::sscanf(o.driver_cuda.c_str(), "%d.%d", &major, &minor) < 1) {
      throw InputError(Diagnostic{"--driver-cuda", {}, "expected a CUDA version such as 13.0", {}});
    }
    driver = major * 1000 + minor * 10;
  }
  nlohmann::json out = {{"libraries", nlohmann::json::array()}};
  bool all_run = true;
  for (const std::string& lib : o.libraries) {
    GpuBinaryInfo info;
    try {
      info = InspectGpuBinary(lib);
    } catch (const std::runtime_error& e) {
      throw InputError(Diagnostic{lib, {}, std::string(e.what()).substr(lib.size() + 2), {}});
    }
    nlohmann::json j = {{"path", lib},
                        {"sass", info.sass},
                        {"gfx", info.gfx},
                        {"fatbin_containers", info.fatbin_containers},
                        {"ptx", nlohmann::json::array()}};
    for (const PtxEntry& p : info.ptx) {
      j["ptx"].push_back(
          {{"arch", p.arch},
           {"isa", std::to_string(p.isa_major) + "." + std::to_string(p.isa_minor)}});
    }
    std::string line = lib + ": " + Describe(info);
    if (o.sm) {
      std::string why;
      bool runs = CudaCodeRunsOn(info, o.sm, driver, &why);
      all_run = all_run && runs;
      j["runs_on_sm"] = {{"sm", o.sm}, {"runs", runs}, {"why", why}};
      line += std::string(runs ? "; runs on " : "; does NOT run on ") + "sm_" +
              std::to_string(o.sm) + ": " + why;
    }
    out["libraries"].push_back(j);
    if (!o.json) std::cout << line << "\n";
  }
  if (o.json) std::cout << out.dump(2) << "\n";
  return all_run ? kExitOk : kExitVerdict;
}

}  // namespace

Command RegisterInspect(CLI::App& app, const GlobalOptions&) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "List the GPU code embedded in ELF shared libraries or objects: SASS architectures and\n"
      "PTX versions of CUDA fat binaries (.nv_fatbin), gfx targets of HIP offload bundles\n"
      "(.hip_fatbin), read from the sections directly (no cuobjdump). With --sm, also whether\n"
      "a device of that compute capability can run it (exit 1 when one cannot).");
  cmd->add_option("LIB", options->libraries, "Libraries to inspect")->required();
  cmd->add_flag("--json", options->json, "Print as JSON");
  cmd->add_option("--sm", options->sm, "Device compute capability as a number (90 for 9.0)")
      ->check(CLI::Range(10, 200));
  cmd->add_option("--driver-cuda", options->driver_cuda,
                  "The driver's CUDA version, for whether PTX can be JIT-compiled (e.g. 13.0)");
  return [options] { return RunInspect(*options); };
}

}  // namespace trainlock::cli
