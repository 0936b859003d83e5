// `trainlock inspect LIB...`: the GPU code embedded in shared libraries (SASS architectures
// and PTX versions of CUDA fat binaries, gfx targets of HIP offload bundles).
#include <iostream>

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/failure.h"
#include "base/json_file.h"
#include "base/terminal_text.h"
#include "cli/commands.h"
#include "compat/gpu_binary.h"

namespace trainlock::cli {
namespace {

struct InspectOptions {
  std::vector<std::string> libraries;
  bool json = false;
  std::vector<std::string> sm;   // --sm: also say whether devices of these capabilities run it
  std::vector<std::string> gfx;  // --gfx: the same for AMD devices
  std::string driver_cuda;       // --driver-cuda: the driver's CUDA version for PTX JIT
};

// --sm as people write a compute capability: 9.0, sm_90 or 90 -> 90.
int ParseSm(const std::string& text) {
  std::string digits = text.starts_with("sm_") ? text.substr(3) : text;
  if (size_t dot = digits.find('.'); dot != std::string::npos && dot + 2 == digits.size()) {
    digits.erase(dot, 1);
  }
  if (digits.empty() || digits.size() > 3 ||
      digits.find_first_not_of("0123456789") != std::string::npos || std::stoi(digits) < 10) {
    throw InputError(Diagnostic{
        "--sm", {}, "not a compute capability: " + Quoted(text), "write 9.0, sm_90 or 90"});
  }
  return std::stoi(digits);
}

// --gfx as gfx942 or 942 -> "gfx942".
std::string ParseGfx(const std::string& text) {
  std::string name = text.starts_with("gfx") ? text : "gfx" + text;
  if (name.size() < 6 || name.size() > 8 ||
      name.find_first_not_of("0123456789abcdef", 3) != std::string::npos) {
    throw InputError(
        Diagnostic{"--gfx", {}, "not an AMD GPU target: " + Quoted(text), "write gfx942 or 942"});
  }
  return name;
}

// Whether HIP code in `info` runs on `gfx`: a code object for exactly that target (feature
// suffixes such as ":xnack-" still match the processor); HIP has no JIT fallback like PTX.
bool HipCodeRunsOn(const GpuBinaryInfo& info, const std::string& gfx, std::string* why) {
  for (const std::string& target : info.gfx) {
    if (target.substr(0, target.find(':')) == gfx) {
      *why = "a code object for " + target;
      return true;
    }
  }
  *why = info.gfx.empty() ? "no HIP code objects" : "no code object for " + gfx;
  return false;
}

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
  std::vector<int> sms;
  for (const std::string& text : o.sm) sms.push_back(ParseSm(text));
  std::vector<std::string> gfxs;
  for (const std::string& text : o.gfx) gfxs.push_back(ParseGfx(text));
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
    } catch (const Failure& e) {
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
    for (int sm : sms) {
      std::string why;
      bool runs = CudaCodeRunsOn(info, sm, driver, &why);
      all_run = all_run && runs;
      j["runs_on_sm"].push_back({{"sm", sm}, {"runs", runs}, {"why", why}});
      line += std::string(runs ? "; runs on " : "; does NOT run on ") + "sm_" + std::to_string(sm) +
              ": " + why;
    }
    for (const std::string& gfx : gfxs) {
      std::string why;
      bool runs = HipCodeRunsOn(info, gfx, &why);
      all_run = all_run && runs;
      j["runs_on_gfx"].push_back({{"gfx", gfx}, {"runs", runs}, {"why", why}});
      line += std::string(runs ? "; runs on " : "; does NOT run on ") + gfx + ": " + why;
    }
    out["libraries"].push_back(j);
    if (!o.json) std::cout << TerminalLine(line) << "\n";  // the name and bundle ids are not ours
  }
  if (o.json) std::cout << DumpJsonOutput(out) << "\n";
  return all_run ? kExitOk : kExitVerdict;
}

}  // namespace

Command RegisterInspect(CLI::App& app, const GlobalOptions&) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "List the GPU code embedded in ELF shared libraries or objects: SASS architectures and\n"
      "PTX versions of CUDA fat binaries (.nv_fatbin), gfx targets of HIP offload bundles\n"
      "(.hip_fatbin), read from the sections directly (no cuobjdump). With --sm (or --gfx), also\n"
      "whether a device of that compute capability (or gfx target) can run it (exit 1 when one\n"
      "cannot).");
  cmd->add_option("LIB", options->libraries, "Libraries to inspect")->required();
  cmd->add_flag("--json", options->json, "Print as JSON");
  cmd->add_option("--sm", options->sm,
                  "Device compute capabilities: 9.0, sm_90 or 90 (a,b or repeated: each is judged)")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--gfx", options->gfx, "AMD device targets: gfx942 or 942 (a,b or repeated)")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--driver-cuda", options->driver_cuda,
                  "The driver's CUDA version, for whether PTX can be JIT-compiled (e.g. 13.0)");
  return [options] { return RunInspect(*options); };
}

}  // namespace trainlock::cli
