// The fuzz targets' bodies; see fuzz_inputs.h.
#include "fuzz_inputs.h"

#include <zlib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
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
#include "engines/native/checkpoint_state.h"
#include "engines/native/safetensors_header.h"
#include "engines/native/token_data.h"
#include "fleet/fleet.h"
#include "image/layer_listing.h"
#include "lock/debian_index.h"
#include "lock/hub_json.h"
#include "lock/python_index.h"
#include "lock/registry_json.h"
#include "project/debian_names.h"
#include "project/lockfile_loader.h"
#include "project/project_path.h"
#include "project/train_config.h"
#include "report/report.h"
#include "report/report_render.h"
#include "run/engine_spec.h"
#include "run/run_config.h"

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
        LoadLockfile(text, "fuzz.toml", LockfileKind::kManifest);
        break;
      case 1:
        LoadLockfile(text, "fuzz.lock", LockfileKind::kLock);
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

namespace {

// The trainer's data-loader over a synthetic state, restored from the state's own loader
// position, as the worker builds it; only for loaders small enough to build quickly (larger
// ones are bounded by kMaxDataWindows, which CheckpointRunState promises below).
void RestoreSyntheticLoader(const validate::CheckpointRunState& run, const nlohmann::json& state) {
  const EngineSpec& spec = run.spec;
  const TrainingConfig& t = spec.config.training;
  if ((spec.data.length - 1) / static_cast<uint64_t>(t.seq_len) > (uint64_t{1} << 16) ||
      t.micro_batch * t.seq_len > (int64_t{1} << 20))
    return;
  const auto source =
      validate::SyntheticTokens(spec.data.seed, spec.config.model.vocab_size, spec.data.length);
  try {
    validate::WindowLoader loader(*source, t.seq_len, t.micro_batch, spec.seed, t.shuffle,
                                  spec.eval_batches * t.micro_batch);
    loader.Restore(state.value("data_loader", nlohmann::json()));
    const validate::Batch batch = loader.Next();
    Require(batch.rows == t.micro_batch && batch.cols == t.seq_len, "a batch of another shape");
  } catch (const Failure&) {
  }
}

}  // namespace

void CheckpointState(std::string_view input) {
  nlohmann::json state;
  try {
    state = ParseJsonText(input, "state.json");
  } catch (const InputError&) {
    return;
  }
  validate::CheckpointRunState run;
  try {
    run = validate::ReadCheckpointRunState(state, "manifest.json");
  } catch (const validate::CheckpointError&) {
    return;
  }
  const EngineSpec& spec = run.spec;
  Require(spec.eval_batches >= 1 && spec.eval_batches <= kMaxEvalBatches,
          "eval_batches out of range was accepted");
  const bool synthetic = spec.data.kind == "synthetic";
  Require(synthetic || spec.data.kind == "shards", "an unknown data kind was accepted");
  Require(ModelShapeProblems(spec.config.model).empty(),
          "a model shape with a problem was accepted");
  if (!synthetic) {
    Require(spec.data.bytes_per_token == 2 || spec.data.bytes_per_token == 4,
            "a token width other than 2 or 4 was accepted");
    Require(!spec.data.files.empty(), "shards without files were accepted");
    return;
  }
  Require((spec.data.length - 1) / static_cast<uint64_t>(spec.config.training.seq_len) <=
              kMaxDataWindows,
          "more windows than kMaxDataWindows were accepted");
  RestoreSyntheticLoader(run, state);
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

namespace {

// One simple API page of `content_type` through ParseIndexPage, and the promises about what it
// returns. Only a PEP 691 page may be refused (exit 3: not JSON, or not the schema).
void IndexPage(std::string_view input, const char* content_type, bool json) {
  std::vector<IndexFile> files;
  try {
    files = ParseIndexPage(std::string(input), content_type, "https://index.example/simple/pkg/",
                           "pkg on the fuzz index");
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

}  // namespace

void Pep503(std::string_view input) {
  IndexPage(input, "text/html", false);
}

void Pep691(std::string_view input) {
  IndexPage(input, "application/vnd.pypi.simple.v1+json", true);
}

void Metadata(std::string_view input) {
  const CoreMetadata m = ParseCoreMetadata(std::string(input));
  Require(m.name.size() <= input.size() && m.version.size() <= input.size(),
          "a field longer than the text");
}

// A Debian archive's Packages index: every pin kept satisfies Debian's grammar, and dpkg's
// order holds for it.
void DebianIndex(std::string_view input) {
  for (const DebianPackage& p : ParseDebianPackagesIndex(input)) {
    Require(IsDebianPackageName(p.name) && IsDebianVersion(p.version) && IsSha256Hex(p.sha256) &&
                IsDebianPoolFile(p.file),
            "a pin outside Debian's grammar");
    Require(CompareDebianVersions(p.version, p.version) == 0, "a version unequal to itself");
  }
}

// What every listing the layer reader accepts promises: every entry has a path, and a regular
// file, and only a file, has a digest.
void RequireListingPromises(const LayerListing& listing) {
  for (const auto& [path, entry] : listing) {
    Require(!path.empty(), "an entry without a path");
    Require((entry.type == '0' || entry.type == '7') == !entry.sha256.empty(),
            "a file without a digest");
  }
}

// A layer blob (gzip or plain tar, told apart by its first bytes), fed in two pieces through
// the layer reader: accepted or Failure, within its caps.
void Layer(std::string_view input) {
  LayerReader reader("fuzz.layer");
  try {
    const size_t half = input.size() / 2;
    reader.Feed(input.substr(0, half));
    reader.Feed(input.substr(half));
    RequireListingPromises(reader.Finish());
  } catch (const Failure&) {
  }
}

// gzip members of `data` cut at `cut` (one member when 0), as a registry's layer blob holds it.
std::string GzipMembers(std::string_view data, size_t cut) {
  std::string out;
  for (std::string_view part : {data.substr(0, cut), data.substr(cut)}) {
    if (part.empty() && !out.empty()) continue;
    z_stream z{};
    if (deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
      throw FuzzInvariantBroken("deflateInit2 failed");
    std::string member(deflateBound(&z, part.size()) + 32, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(part.data()));
    z.avail_in = static_cast<uInt>(part.size());
    z.next_out = reinterpret_cast<Bytef*>(member.data());
    z.avail_out = static_cast<uInt>(member.size());
    const int rc = deflate(&z, Z_FINISH);
    deflateEnd(&z);
    if (rc != Z_STREAM_END) throw FuzzInvariantBroken("deflate did not finish");
    member.resize(z.total_out);
    out += member;
  }
  return out;
}

// The rest of the input as a tar stream, gzip-compressed here into one or two members (the
// first byte says where the second starts), so that mutations of the tar, pax and GNU headers
// reach the reader through gunzip as a registry's layer does; fed in pieces of the first
// byte's size.
void LayerGzip(std::string_view input) {
  if (input.empty()) return;
  const auto selector = static_cast<unsigned char>(input[0]);
  const std::string_view tar = input.substr(1);
  const std::string blob = GzipMembers(tar, selector % 2 ? tar.size() * selector / 256 : 0);
  LayerReader reader("fuzz.layer.gz");
  try {
    const size_t piece = std::max<size_t>(1, selector);
    for (size_t at = 0; at < blob.size(); at += piece)
      reader.Feed(std::string_view(blob).substr(at, piece));
    const LayerListing listing = reader.Finish();
    RequireListingPromises(listing);
    Require(reader.bytes() == tar.size(), "gunzip lost or invented bytes of the stream");
  } catch (const Failure&) {
  }
}

// How bash reads one word made of bare characters, backslash escapes and single-quoted parts:
// the word's value, or nullopt when the text holds anything that is not one such word (an
// unquoted space, newline, $, `, ", ;, |, &, <, >, (, ), *, ?, [, ~, {, a leading #, an
// unterminated quote). A backslash-newline outside quotes is a line continuation, which bash
// removes. Written here, from the shell's rules, independently of the function under test.
std::optional<std::string> ReadShellWord(std::string_view text) {
  static const std::string_view kBare =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-#";
  std::string value;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '\'') {
      const size_t close = text.find('\'', i + 1);
      if (close == std::string_view::npos) return std::nullopt;
      value.append(text.substr(i + 1, close - i - 1));
      i = close + 1;
    } else if (c == '\\') {
      if (i + 1 == text.size()) return std::nullopt;
      if (text[i + 1] != '\n') value.push_back(text[i + 1]);
      i += 2;
    } else if (kBare.find(c) != std::string_view::npos && !(c == '#' && i == 0)) {
      value.push_back(c);
      ++i;
    } else {
      return std::nullopt;
    }
  }
  if (text.empty()) return std::nullopt;  // no word at all
  return value;
}

// ShellQuote, the one quoting function of every value the fleet's generated Slurm, Prolog and
// node-problem-detector scripts carry: whatever the value (bash holds no NUL byte), bash reads
// the quoted text back as exactly one word whose value is the input. So a newline in it is
// inside single quotes, where it cannot end a line of the script (ReadShellWord refuses a bare
// one, and a backslash-newline would read back as nothing).
void ShellQuoteTarget(std::string_view input) {
  if (input.find('\0') != std::string_view::npos) return;
  const std::string quoted = ShellQuote(input);
  const std::optional<std::string> read = ReadShellWord(quoted);
  Require(read.has_value(), "the quoted value is not one shell word");
  Require(*read == input, "the quoted value reads back as another value");
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
      {"checkpoint_state", CheckpointState},
      {"pep503", Pep503},
      {"pep691", Pep691},
      {"metadata", Metadata},
      {"debian_index", DebianIndex},
      {"layer", Layer},
      {"layer_gzip", LayerGzip},
      {"shell_quote", ShellQuoteTarget},
  };
  return targets;
}

}  // namespace trainlock::fuzz
