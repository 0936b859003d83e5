// The fuzz targets' bodies; see fuzz_inputs.h.
#include "fuzz_inputs.h"

#include <nlohmann/json.hpp>

#include <string>
#include <utility>

#include "base/diagnostic.h"
#include "base/failure.h"
#include "base/json_file.h"
#include "base/json_limits.h"
#include "base/refs.h"
#include "base/sha256.h"
#include "compat/gpu_binary.h"
#include "engines/native/checkpoint_manifest.h"
#include "engines/native/safetensors_header.h"
#include "lock/hub_json.h"
#include "lock/python_index.h"
#include "lock/registry_json.h"
#include "project/project_path.h"
#include "project/spec_loader.h"
#include "project/train_config.h"
#include "report/report.h"
#include "report/report_render.h"

namespace trainlock::fuzz {
namespace {

void Require(bool promise, const char* what) {
  if (!promise) throw FuzzInvariantBroken(what);
}

// Every diagnostic of a refusal is one line, as diagnostic.h promises.
void RequireOneLineDiagnostics(const InputError& e) {
  for (const Diagnostic& d : e.diagnostics().items())
    Require(d.Format().find('\n') == std::string::npos, "a diagnostic spans several lines");
}

// The nesting depth of a parsed value, walked without recursion.
int DepthOf(const nlohmann::json& root) {
  int deepest = 0;
  std::vector<std::pair<const nlohmann::json*, int>> pending = {{&root, 1}};
  while (!pending.empty()) {
    auto [value, depth] = pending.back();
    pending.pop_back();
    if (!value->is_structured()) continue;
    deepest = std::max(deepest, depth);
    for (const nlohmann::json& child : *value) pending.push_back({&child, depth + 1});
  }
  return deepest;
}

bool IsPrintableAscii(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

}  // namespace

void Loaders(std::string_view input) {
  if (input.empty()) return;
  const std::string_view text = input.substr(1);
  try {
    switch (static_cast<unsigned char>(input[0]) % 3) {
      case 0:
        LoadSpec(text, "fuzz.toml", SpecKind::kManifest);
        break;
      case 1:
        LoadSpec(text, "fuzz.lock", SpecKind::kLock);
        break;
      default:
        LoadTrainConfig(text, "fuzz.yaml");
        break;
    }
  } catch (const InputError& e) {
    RequireOneLineDiagnostics(e);
  }
}

void Report(std::string_view input) {
  nlohmann::json report;
  try {
    report = ParseJsonText(input, "report.json");
  } catch (const InputError& e) {
    RequireOneLineDiagnostics(e);
    return;
  }
  Require(DepthOf(report) <= kMaxJsonDepth, "JSON deeper than the limit was accepted");
  ReportSchemaViolations(report);
  for (ReportFormat format :
       {ReportFormat::kText, ReportFormat::kMarkdown, ReportFormat::kHtml, ReportFormat::kJunit})
    RenderReport(report, format, /*color=*/true);
  RenderReportText(report, /*color=*/false);
  ViewOfReport(report);
}

void GpuBinary(std::string_view input) {
  GpuBinaryInfo info;
  try {
    info = InspectGpuBinaryBytes(input, "fuzz.so");
  } catch (const std::runtime_error&) {
    return;
  }
  for (const std::string& gfx : info.gfx)
    Require(!gfx.empty() && IsPrintableAscii(gfx), "a gfx target with unprintable bytes");
  // `trainlock inspect --json` writes what was found; dumping must not throw.
  (void)nlohmann::json{{"gfx", info.gfx}, {"sass", info.sass}}.dump();
  std::string why;
  CudaCodeRunsOn(info, 90, 13000, &why);
}

void Safetensors(std::string_view input) {
  validate::SafetensorsHeader header;
  try {
    header = validate::ParseSafetensorsHeader(input, "fuzz.safetensors");
  } catch (const validate::SafetensorsError&) {
    return;
  }
  Require(header.data_start <= input.size(), "the data section starts past the file");
  const uint64_t data_size = input.size() - header.data_start;
  for (const validate::SafetensorsEntry& t : header.tensors) {
    Require(t.begin <= t.end && t.end <= data_size, "a tensor's bytes lie outside the data");
    uint64_t bytes = validate::SafetensorsElementSize(t.dtype);
    for (int64_t dim : t.shape) {
      Require(dim >= 0, "a negative dimension was accepted");
      bytes *= static_cast<uint64_t>(dim);  // the parser bounded the product, so no wrap
    }
    Require(bytes == t.end - t.begin, "a tensor's size does not match its bytes");
  }
}

void Checkpoint(std::string_view input) {
  validate::CheckpointManifest manifest;
  try {
    manifest = validate::ParseCheckpointManifest(input, "manifest.json");
  } catch (const validate::CheckpointError&) {
    return;
  }
  Require(manifest.step >= 0, "a negative step was accepted");
  Require(manifest.state.is_object(), "a state that is not an object was accepted");
  for (const validate::CheckpointFile& f : manifest.files) {
    Require(!f.path.empty() && f.path != ".." && f.path.find('/') == std::string::npos,
            "a file path outside the checkpoint was accepted");
    Require(IsSha256Hex(f.sha256), "a malformed sha256 was accepted");
  }
}

void Registry(std::string_view input) {
  if (input.empty()) return;
  const std::string_view body = input.substr(1);
  switch (static_cast<unsigned char>(input[0]) % 3) {
    case 0: {
      std::string problem;
      std::optional<ManifestAnswer> answer = ReadManifestAnswer(body, "text/plain", &problem);
      if (!answer) return;
      for (const auto& [platform, digest] : answer->platforms) {
        Require(IsDigest(digest), "a malformed platform digest was accepted");
        Require(IsPrintableAscii(platform), "a platform with unprintable bytes was accepted");
      }
      break;
    }
    case 1:
      Require(IsPrintableAscii(BearerTokenOf(body)), "a token a header cannot carry");
      break;
    default:
      DockerConfigCredentials(body, "registry.example:5000");
      DockerConfigCredentials(body, "registry-1.docker.io");
      break;
  }
}

void Hub(std::string_view input) {
  std::string problem;
  std::optional<HubRevisionAnswer> answer = ReadHubRevisionAnswer(input, &problem);
  if (!answer) {
    Require(!problem.empty(), "a refusal without a reason");
    return;
  }
  Require(IsCommitId(answer->commit), "a commit that is not 40 hex was accepted");
  for (const auto& [path, sibling] : answer->siblings) {
    Require(RelativePathProblem(path).empty(), "a path outside the repository was accepted");
    Require(sibling.lfs_sha256.empty() || IsSha256Hex(sibling.lfs_sha256),
            "a malformed LFS sha256 was accepted");
  }
}

void Index(std::string_view input) {
  if (input.empty()) return;
  const std::string page(input.substr(1));
  const bool json = static_cast<unsigned char>(input[0]) % 2 == 1;
  std::vector<IndexFile> files;
  try {
    files = ParseIndexPage(page, json ? "application/vnd.pypi.simple.v1+json" : "text/html",
                           "https://index.example/simple/pkg/", "pkg on the fuzz index");
  } catch (const Failure& e) {
    Require(json && e.exit_code() == kExitEnvironment, "an HTML page or another exit refused");
    return;
  }
  for (const IndexFile& f : files) {
    Require(f.sha256.empty() || IsSha256Hex(f.sha256), "a malformed sha256 was accepted");
    Require(f.metadata_sha256.empty() || IsSha256Hex(f.metadata_sha256),
            "a malformed metadata sha256 was accepted");
    Require(f.url.find('#') == std::string::npos, "a URL kept its fragment");
  }
}

void Metadata(std::string_view input) {
  const CoreMetadata m = ParseCoreMetadata(std::string(input));
  Require(m.name.size() <= input.size() && m.version.size() <= input.size(),
          "a field longer than the text");
}

const std::vector<FuzzTarget>& FuzzTargets() {
  static const std::vector<FuzzTarget> targets = {
      {"loaders", Loaders},
      {"report", Report},
      {"gpu_binary", GpuBinary},
      {"safetensors", Safetensors},
      {"checkpoint", Checkpoint},
      {"registry", Registry},
      {"hub", Hub},
      {"index", Index},
      {"metadata", Metadata},
  };
  return targets;
}

}  // namespace trainlock::fuzz
