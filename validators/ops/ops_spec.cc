// The ops spec, resolved, written and read back member by member; see ops_spec.h.
#include "ops/ops_spec.h"

#include <algorithm>

#include "base/file_io.h"
#include "base/json_file.h"
#include "base/sha256.h"
#include "run/spec_members.h"
#include "support/pinned_files.h"

namespace trainlock::validate {
namespace {

using nlohmann::json;

json SmokeJson(const SmokeSpec& s) {
  json inputs = json::array();
  for (const TensorSpec& t : s.inputs) inputs.push_back({{"shape", t.shape}, {"dtype", t.dtype}});
  return {
      {"op", s.op},     {"inputs", inputs},         {"reference", s.reference}, {"rtol", s.rtol},
      {"atol", s.atol}, {"grad_rtol", s.grad_rtol}, {"grad_atol", s.grad_atol}};
}

std::string Indexed(const std::string& name, size_t i) {
  return name + "[" + std::to_string(i) + "]";
}

TensorSpec ReadTensor(const SpecMembers& m) {
  TensorSpec t;
  t.dtype = m.String("dtype");
  if (std::find(std::begin(kSmokeDtypes), std::end(kSmokeDtypes), t.dtype) ==
      std::end(kSmokeDtypes))
    m.Fail(m.Name("dtype"), Quoted(t.dtype) + " is not a smoke test's dtype");
  const json& shape = m.Array("shape");
  if (shape.empty() || shape.size() > kMaxSmokeRank)
    m.Fail(m.Name("shape"), "has " + std::to_string(shape.size()) + " dimensions, not 1 to " +
                                std::to_string(kMaxSmokeRank));
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i].is_number_integer() || shape[i].get<int64_t>() < 1 ||
        shape[i].get<int64_t>() > kMaxSmokeDim)
      m.Fail(Indexed(m.Name("shape"), i), "is not an integer from 1 to 2^31");
    t.shape.push_back(shape[i].get<int64_t>());
  }
  return t;
}

SmokeSpec ReadSmoke(const SpecMembers& m) {
  SmokeSpec s;
  s.op = m.String("op");
  s.reference = m.String("reference");
  const json& inputs = m.Array("inputs");
  for (size_t i = 0; i < inputs.size(); ++i)
    s.inputs.push_back(
        ReadTensor(SpecMembers(inputs[i], Indexed(m.Name("inputs"), i), m.display())));
  const NumberRange tolerance{0.0, kMaxSmokeTolerance};
  s.rtol = m.Number("rtol", tolerance);
  s.atol = m.Number("atol", tolerance);
  s.grad_rtol = m.Number("grad_rtol", tolerance);
  s.grad_atol = m.Number("grad_atol", tolerance);
  return s;
}

OpsLibrary ReadLibrary(const SpecMembers& m) {
  OpsLibrary lib;
  lib.library = m.String("library");
  lib.path = m.String("path");
  if (!std::filesystem::path(lib.path).is_absolute())
    m.Fail(m.Name("path"), Quoted(lib.path) + " is not an absolute path");
  lib.sha256 = m.String("sha256");
  if (!lib.sha256.empty() && !IsSha256Hex(lib.sha256))
    m.Fail(m.Name("sha256"), "is not a lowercase hex SHA-256");
  const json& ops = m.Array("ops");
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].is_string()) m.Fail(Indexed(m.Name("ops"), i), "is not a string");
    lib.ops.push_back(ops[i].get<std::string>());
  }
  const json& smoke = m.Array("smoke");
  for (size_t i = 0; i < smoke.size(); ++i) {
    SmokeSpec s = ReadSmoke(SpecMembers(smoke[i], Indexed(m.Name("smoke"), i), m.display()));
    if (std::find(lib.ops.begin(), lib.ops.end(), s.op) == lib.ops.end())
      m.Fail(Indexed(m.Name("smoke"), i) + ".op", Quoted(s.op) + " is not one of its ops");
    lib.smoke.push_back(std::move(s));
  }
  return lib;
}

}  // namespace

json OpsSpecJson(const std::vector<OpsLibrary>& libraries) {
  json out = json::array();
  for (const OpsLibrary& lib : libraries) {
    json smoke = json::array();
    for (const SmokeSpec& s : lib.smoke) smoke.push_back(SmokeJson(s));
    out.push_back({{"library", lib.library},
                   {"path", lib.path},
                   {"sha256", lib.sha256},
                   {"ops", lib.ops},
                   {"smoke", smoke}});
  }
  return {{"schema", kOpsSpecSchema}, {"libraries", out}};
}

std::vector<OpsLibrary> ParseOpsSpec(std::string_view text, const std::string& display) {
  const json doc = ParseJsonText(text, display);
  const SpecMembers root(doc, "ops", display);
  if (root.String("schema") != kOpsSpecSchema)
    root.Fail(root.Name("schema"), "is not " + Quoted(kOpsSpecSchema));
  const json& list = root.Array("libraries");
  if (list.size() > kMaxOpsLibraries)
    root.Fail(root.Name("libraries"), "lists more than " + std::to_string(kMaxOpsLibraries));
  std::vector<OpsLibrary> out;
  for (size_t i = 0; i < list.size(); ++i)
    out.push_back(ReadLibrary(SpecMembers(list[i], Indexed(root.Name("libraries"), i), display)));
  return out;
}

std::string WriteOpsSpec(const std::filesystem::path& file,
                         const std::vector<OpsLibrary>& libraries) {
  const std::string text = OpsSpecJson(libraries).dump(2) + "\n";
  WriteFileAtomically(file, text);
  return Sha256Hex(text);
}

std::vector<OpsLibrary> ReadOpsSpecFile(const std::filesystem::path& file,
                                        const std::string& want_sha256) {
  return ParseOpsSpec(ReadCoordinatorSpec(file, want_sha256, "ops spec").text, file.string());
}

}  // namespace trainlock::validate
