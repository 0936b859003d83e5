// Atomic, verified checkpoints; see checkpoint.h.
#include "checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>

#include "file_io.h"
#include "sha256.h"

namespace trainlock::validate {
namespace fs = std::filesystem;
namespace {

constexpr const char* kManifest = "manifest.json";
// The SHA-256 of manifest.json's bytes, so that a damaged manifest is refused too.
constexpr const char* kManifestHash = "manifest.json.sha256";
constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string StepName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return buf;
}

void FsyncDir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error(dir.string() + ": cannot fsync directory");
  }
  ::close(fd);
}

bool IsStepDir(const fs::directory_entry& e) {
  std::string name = e.path().filename().string();
  return e.is_directory() && name.rfind("step-", 0) == 0 && fs::exists(e.path() / kManifestHash);
}

void Prune(const fs::path& root, int64_t keep_last, const fs::path& keep) {
  std::vector<fs::path> complete;
  for (const auto& e : fs::directory_iterator(root)) {
    std::string name = e.path().filename().string();
    if (name.rfind(".step-", 0) == 0 && e.path() != keep) {
      fs::remove_all(e.path());  // a temporary left by a writer that died mid-save
    } else if (IsStepDir(e)) {
      complete.push_back(e.path());
    }
  }
  std::sort(complete.begin(), complete.end());
  for (size_t i = 0; i + static_cast<size_t>(keep_last) < complete.size(); ++i) {
    fs::remove_all(complete[i]);
  }
}

}  // namespace

CheckpointIo SaveCheckpoint(const fs::path& root, const CheckpointContents& contents,
                            int64_t keep_last) {
  auto start = std::chrono::steady_clock::now();
  fs::create_directories(root);
  const std::string name = StepName(contents.step);
  const fs::path tmp = root / ("." + name + ".tmp-" + std::to_string(::getpid()));
  const fs::path final_dir = root / name;
  fs::remove_all(tmp);
  fs::create_directories(tmp);

  nlohmann::json manifest = {{"format", kCheckpointFormat},
                             {"step", contents.step},
                             {"files", nlohmann::json::array()},
                             {"state", contents.state}};
  CheckpointIo io;
  for (auto [file, tensors] :
       {std::pair{kModelFile, &contents.model}, std::pair{kOptimizerFile, &contents.optimizer}}) {
    WrittenFile written = WriteSafetensors(tmp / file, *tensors);
    manifest["files"].push_back(
        {{"path", file}, {"sha256", written.sha256}, {"size", written.bytes}});
    io.bytes += written.bytes;
  }
  std::string text = manifest.dump(2) + "\n";
  WriteFileAtomically(tmp / kManifest, text);  // fsyncs the file and tmp/
  WriteFileAtomically(tmp / kManifestHash, Sha256Hex(text) + "\n");
  io.bytes += text.size() + 65;
  if (fs::exists(final_dir)) fs::remove_all(final_dir);  // a re-save of the same step
  fs::rename(tmp, final_dir);
  FsyncDir(root);
  Prune(root, keep_last, final_dir);
  io.dir = final_dir;
  io.seconds = SecondsSince(start);
  return io;
}

CheckpointContents LoadCheckpoint(const fs::path& dir, CheckpointIo* io) {
  auto start = std::chrono::steady_clock::now();
  const fs::path manifest_path = dir / kManifest;
  std::string text;
  {
    std::ifstream in(manifest_path, std::ios::binary);
    if (!in) throw CheckpointError(manifest_path.string() + ": missing");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  {
    std::ifstream in(dir / kManifestHash);
    std::string want;
    if (!(in >> want)) throw CheckpointError((dir / kManifestHash).string() + ": missing");
    if (Sha256Hex(text) != want) {
      throw CheckpointError(manifest_path.string() + ": sha256 " + Sha256Hex(text).substr(0, 16) +
                            "... does not match " + kManifestHash + " (" + want.substr(0, 16) +
                            "...)");
    }
  }
  nlohmann::json manifest = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object() || manifest.value("format", "") != kCheckpointFormat ||
      !manifest["files"].is_array() || !manifest["step"].is_number_integer()) {
    throw CheckpointError(manifest_path.string() + ": not a " + kCheckpointFormat + " manifest");
  }
  // Verify everything before loading anything: a restore never starts from a bad file.
  uint64_t bytes = 0;
  std::set<std::string> listed;
  for (const auto& f : manifest["files"]) {
    std::string file = f.value("path", "");
    std::string want_sha = f.value("sha256", "");
    uint64_t want_size = f.value("size", uint64_t{0});
    if (file.empty() || file.find('/') != std::string::npos) {
      throw CheckpointError(manifest_path.string() + ": invalid file entry " + f.dump());
    }
    fs::path path = dir / file;
    std::error_code ec;
    uint64_t size = fs::file_size(path, ec);
    if (ec) throw CheckpointError(path.string() + ": missing (listed in manifest.json)");
    if (size != want_size) {
      throw CheckpointError(path.string() + ": size " + std::to_string(size) +
                            " bytes but manifest.json says " + std::to_string(want_size));
    }
    std::string sha = Sha256FileHex(path);
    if (sha != want_sha) {
      throw CheckpointError(path.string() + ": sha256 " + sha.substr(0, 16) +
                            "... does not match manifest.json's " + want_sha.substr(0, 16) + "...");
    }
    bytes += size;
    listed.insert(file);
  }
  for (const char* required : {kModelFile, kOptimizerFile}) {
    if (!listed.count(required)) {
      throw CheckpointError(manifest_path.string() + ": does not list " + required);
    }
  }
  CheckpointContents contents;
  contents.step = manifest["step"].get<int64_t>();
  contents.state = manifest.value("state", nlohmann::json::object());
  try {
    for (auto& [n, t] : ReadSafetensors(dir / kModelFile)) contents.model.push_back({n, t});
    for (auto& [n, t] : ReadSafetensors(dir / kOptimizerFile)) contents.optimizer.push_back({n, t});
  } catch (const SafetensorsError& e) {
    throw CheckpointError(e.what());
  }
  if (io) {
    io->dir = dir;
    io->bytes = bytes;
    io->seconds = SecondsSince(start);
  }
  return contents;
}

std::optional<fs::path> LatestCheckpoint(const fs::path& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return std::nullopt;
  std::optional<fs::path> latest;
  for (const auto& e : fs::directory_iterator(root)) {
    if (IsStepDir(e) && (!latest || e.path() > *latest)) latest = e.path();
  }
  return latest;
}

}  // namespace trainlock::validate

#include "roundtrip.h"

namespace trainlock::validate {

double MaxAbsStateDifference(const std::filesystem::path& a, const std::filesystem::path& b,
                             std::string* first_different) {
  auto ta = ReadSafetensors(a);
  auto tb = ReadSafetensors(b);
  double max_diff = 0;
  for (const auto& [name, tensor] : ta) {
    auto it = tb.find(name);
    if (it == tb.end() || it->second.sizes() != tensor.sizes()) {
      if (first_different && first_different->empty()) *first_different = name;
      max_diff = std::numeric_limits<double>::infinity();
      continue;
    }
    double d =
        (tensor.to(torch::kDouble) - it->second.to(torch::kDouble)).abs().max().item<double>();
    if (d != 0 && first_different && first_different->empty()) *first_different = name;
    max_diff = std::max(max_diff, d);
  }
  return max_diff;
}

}  // namespace trainlock::validate
