// The safetensors format (an 8-byte little-endian header length, a JSON header of
// name -> {dtype, shape, data_offsets}, then the raw bytes), read and written with LibTorch
// tensors so that Python's `safetensors` reads what the validator writes and vice versa.
#pragma once

#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "engines/native/safetensors_header.h"

namespace trainlock::validate {

struct NamedTensor {
  std::string name;
  torch::Tensor tensor;
};

struct WrittenFile {
  uint64_t bytes = 0;
  std::string sha256;  // of the whole file, computed while writing
};

// Writes `tensors` (any device; copied to CPU) in name order, with optional string metadata
// (always with "format": "pt", which older Hugging Face loaders require; a given "format"
// wins). A `durable` write is hashed and fsynced (a checkpoint); otherwise the bytes are only
// handed to the page cache (a state the coordinator reads at once) and `sha256` stays empty.
// Throws std::runtime_error naming the file on I/O failure.
// `part_written`, when set, is called once part of the file's bytes are in it: the header and
// the first tensor of several (the header alone for one tensor); a save held there
// (--hold-save-at mid-file) leaves a file cut short.
WrittenFile WriteSafetensors(const std::filesystem::path& file,
                             const std::vector<NamedTensor>& tensors,
                             const std::map<std::string, std::string>& metadata = {},
                             bool durable = true,
                             const std::function<void()>& part_written = nullptr);

// Where a safetensors file's parts go: its first bytes (the 8-byte little-endian header length
// and the JSON header, padded to 8 bytes) and, for each tensor in the order given, the file
// offset its data starts at; `file_bytes` is the whole file's size. The one home of the layout,
// for WriteSafetensors and state_writer.h alike.
struct SafetensorsLayout {
  std::string prefix;
  std::vector<uint64_t> data_at;
  uint64_t file_bytes = 0;
};
SafetensorsLayout LayOutSafetensors(const std::vector<const NamedTensor*>& sorted,
                                    const std::map<std::string, std::string>& metadata);

// `tensors` in the order a file holds them: by name.
std::vector<const NamedTensor*> SortedByName(const std::vector<NamedTensor>& tensors);

// Reads every tensor of a file onto the CPU. Validates the header with
// ParseSafetensorsHeader (safetensors_header.h) and throws SafetensorsError on any problem,
// and on a path that is not a regular file.
// The file is read whole into one CPU buffer that the returned tensors share.
std::map<std::string, torch::Tensor> ReadSafetensors(const std::filesystem::path& file);

// ReadSafetensors in one pass that also hashes the bytes: throws SafetensorsError
// ("FILE: sha256 ... does not match LISTED_IN's ...") before parsing anything when the file's
// SHA-256 is not `want_sha256`.
std::map<std::string, torch::Tensor> ReadVerifiedSafetensors(const std::filesystem::path& file,
                                                             const std::string& want_sha256,
                                                             const std::string& listed_in);

// ReadSafetensors in one pass that also hashes the bytes: `verify(sha256, bytes)` is called
// with the file's digest after the read and before anything is parsed (it throws to refuse
// them), so a pinned file is checked on the very bytes that become the tensors.
std::map<std::string, torch::Tensor> ReadHashedSafetensors(
    const std::filesystem::path& file,
    const std::function<void(const std::string& sha256, uint64_t bytes)>& verify);

// "F32", "BF16", ... for a scalar type; throws for types safetensors cannot hold.
std::string SafetensorsDtype(at::ScalarType type);

}  // namespace trainlock::validate
