// Loading the compatibility knowledge base; see catalog.h and lockfiles/README.md.
#include "compat/catalog.h"
#include "base/strings.h"

#include <algorithm>

#include "base/catalog_embedded.h"
#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/toml_document.h"
#include "base/toml_fields.h"

namespace trainlock {
namespace {

constexpr std::string_view kFiles[] = {
    "cuda-drivers.toml", "cuda-architectures.toml", "rocm-architectures.toml", "torch-builds.toml",
    "gpus.toml",         "gpu-events.toml"};

Version RequireVersion(TomlFields& f, std::string_view key) {
  auto text = f.String(key, Need::kRequired);
  if (!text) return {};
  auto v = ParseVersion(*text);
  if (!v) f.Error(f.Pos(key), "'" + f.Qualified(key) + "' is not a version");
  return v.value_or(Version{});
}

// Calls `read` for every table of the array `key` at the root of a catalog file.
template <typename Read>
void ForEachEntry(const toml::table& root, std::string_view key, const std::string& display,
                  Diagnostics& diags, Read read) {
  TomlFields f(root, "", display, diags);
  f.Allow("meta");
  if (const toml::array* entries = f.Array(key, Need::kRequired)) {
    for (const toml::node& node : *entries) {
      if (const auto* t = node.as_table()) {
        TomlFields entry(*t, std::string(key), display, diags);
        read(entry);
        entry.Finish();
      } else {
        diags.Error(display, PosOf(node), "'" + std::string(key) + "' entries must be tables");
      }
    }
  }
  f.Finish();
}

}  // namespace

void Catalog::AddFile(const std::string& filename, const std::string& text,
                      const std::string& display) {
  if (filename == "gpu-events.toml") {  // its own reader, as it is its own concept
    gpu_events_ = GpuEventTable::Parse(text, display);
    return;
  }
  toml::table root = ParseTomlDocument(text, display);
  Diagnostics diags;
  if (filename == "cuda-drivers.toml") {
    ForEachEntry(root, "cuda", display, diags, [&](TomlFields& f) {
      cuda_drivers_.push_back({RequireVersion(f, "version"), RequireVersion(f, "linux-driver-min"),
                               RequireVersion(f, "minor-compat-driver-min")});
    });
  } else if (filename == "cuda-architectures.toml") {
    ForEachEntry(root, "cuda", display, diags, [&](TomlFields& f) {
      Version from = RequireVersion(f, "from");
      std::vector<int> sms;
      if (const toml::array* list = f.Array("sm", Need::kRequired)) {
        for (const toml::node& n : *list) {
          if (auto v = n.value<int64_t>()) sms.push_back(static_cast<int>(*v));
        }
      }
      cuda_archs_.emplace_back(from, sms);
    });
  } else if (filename == "rocm-architectures.toml") {
    ForEachEntry(root, "rocm", display, diags, [&](TomlFields& f) {
      Version from = RequireVersion(f, "from");
      rocm_archs_.emplace_back(
          from, f.StringArray("gfx", Need::kRequired).value_or(std::vector<std::string>{}));
    });
  } else if (filename == "torch-builds.toml") {
    ForEachEntry(root, "tag", display, diags, [&](TomlFields& f) {
      TorchBuildTag tag;
      tag.tag = f.String("tag", Need::kRequired).value_or("");
      tag.platform = f.String("platform", Need::kRequired).value_or("");
      tag.version = f.String("version", Need::kOptional).value_or("");
      torch_tags_.push_back(tag);
    });
  } else if (filename == "gpus.toml") {
    ForEachEntry(root, "gpu", display, diags, [&](TomlFields& f) {
      GpuModel gpu;
      gpu.name = f.String("name", Need::kRequired).value_or("");
      gpu.aliases = f.StringArray("aliases", Need::kOptional).value_or(std::vector<std::string>{});
      gpu.vendor = f.String("vendor", Need::kRequired).value_or("");
      Need nvidia = gpu.vendor == "nvidia" ? Need::kRequired : Need::kOptional;
      Need amd = gpu.vendor == "amd" ? Need::kRequired : Need::kOptional;
      gpu.compute_capability =
          static_cast<int>(f.Integer("compute-capability", nvidia, 10, 200).value_or(0));
      gpu.gfx = f.String("gfx", amd).value_or("");
      gpu.memory_gb = f.Number("memory-gb", Need::kRequired, 1, 1e5).value_or(0);
      gpu.bf16_dense_tflops = f.Number("bf16-dense-tflops", Need::kRequired, 0, 1e6).value_or(0);
      gpu.fp16_dense_tflops = f.Number("fp16-dense-tflops", Need::kRequired, 0, 1e6).value_or(0);
      gpu.hbm_tbps = f.Number("hbm-tbps", Need::kRequired, 0, 1e3).value_or(0);
      gpu.relative_cost = f.Number("relative-cost", Need::kOptional, 0, 1e3).value_or(0);
      gpu.interconnect_gbps = f.Number("interconnect-gbps", Need::kOptional, 0, 1e5).value_or(0);
      gpu.k8s_gpu_product = f.String("k8s-gpu-product", Need::kOptional).value_or("");
      gpu.matmul_tflops_at_power_limit =
          f.Number("matmul-tflops-at-power-limit", Need::kOptional, 1, 1e6).value_or(0);
      gpus_.push_back(gpu);
    });
  } else {
    diags.Error(display, {}, "not a catalog file; expected one of the files in lockfiles/compat");
  }
  if (!diags.empty()) throw InputError(diags);
  std::sort(cuda_archs_.begin(), cuda_archs_.end());
  std::sort(rocm_archs_.begin(), rocm_archs_.end());
}

Catalog Catalog::Embedded() {
  Catalog catalog;
  for (const EmbeddedFile& file : EmbeddedCatalogFiles()) {
    catalog.AddFile(std::string(file.name), std::string(file.contents),
                    "<embedded>/lockfiles/compat/" + std::string(file.name));
  }
  return catalog;
}

Catalog Catalog::FromDirectory(const std::filesystem::path& dir) {
  Catalog catalog;
  for (std::string_view name : kFiles) {
    std::filesystem::path file = dir / name;
    catalog.AddFile(std::string(name), ReadInputFile(file, file.string()), file.string());
  }
  return catalog;
}

namespace {

const GpuModel* FindByName(const std::vector<GpuModel>& gpus, const std::string& wanted) {
  for (const GpuModel& gpu : gpus) {
    if (AsciiLower(gpu.name) == wanted) return &gpu;
    for (const std::string& alias : gpu.aliases) {
      if (AsciiLower(alias) == wanted) return &gpu;
    }
  }
  return nullptr;
}

}  // namespace

const GpuModel* Catalog::FindGpu(std::string_view name) const {
  const std::string wanted = AsciiLower(name);
  if (const GpuModel* gpu = FindByName(gpus_, wanted)) return gpu;
  // NVML names most data-center GPUs "NVIDIA <model>"; the catalog's aliases are the models.
  constexpr std::string_view kNvidia = "nvidia ";
  if (wanted.starts_with(kNvidia)) return FindByName(gpus_, wanted.substr(kNvidia.size()));
  return nullptr;
}

std::vector<std::string> Catalog::GpuNames() const {
  std::vector<std::string> names;
  for (const GpuModel& gpu : gpus_) names.push_back(gpu.name);
  return names;
}

const CudaDriverRequirement* Catalog::FindCudaDriver(const Version& cuda) const {
  for (const CudaDriverRequirement& r : cuda_drivers_) {
    if (r.cuda == cuda) return &r;
  }
  Version release;
  release.parts = {cuda.major(), cuda.minor()};
  for (const CudaDriverRequirement& r : cuda_drivers_) {
    if (r.cuda == release) return &r;
  }
  return nullptr;
}

std::vector<int> Catalog::CudaArchitectures(const Version& cuda) const {
  if (!FindCudaDriver(cuda)) return {};  // not a release we know
  const std::vector<int>* found = nullptr;
  for (const auto& [from, sms] : cuda_archs_) {
    if (cuda >= from) found = &sms;
  }
  return found ? *found : std::vector<int>{};
}

std::vector<std::string> Catalog::RocmArchitectures(const Version& rocm) const {
  const std::vector<std::string>* found = nullptr;
  for (const auto& [from, gfx] : rocm_archs_) {
    if (rocm >= from) found = &gfx;
  }
  return found ? *found : std::vector<std::string>{};
}

const TorchBuildTag* Catalog::FindTorchTag(std::string_view tag) const {
  for (const TorchBuildTag& t : torch_tags_) {
    if (t.tag == tag) return &t;
  }
  return nullptr;
}

double AllReduceBusbwThreshold(const GpuModel& gpu, int world_size) {
  if (gpu.interconnect_gbps <= 0 || world_size < 2 || world_size > 8) return 0;
  return gpu.interconnect_gbps * (world_size == 8 ? 0.8 : 0.5);
}

}  // namespace trainlock
