// [[custom-ops]] of a manifest or lock: each library, where it is built from (with the hash of
// its sources or of the library in a lock), its ops and their smoke tests ([[custom-ops.smoke]]).
#include "project/lockfile_reader.h"

#include <algorithm>
#include <regex>
#include <set>

#include "base/strings.h"
#include "base/suggest.h"

namespace trainlock {

void LockfileReader::ReadCustomOps(const toml::array& a) {
  std::set<std::string> libraries;
  size_t index = 0;
  for (const toml::node& element : a) {
    std::string name = "custom-ops[" + std::to_string(index++) + "]";
    const auto* t = element.as_table();
    if (!t) {
      diags_.Error(path_, PosOf(element), "'" + name + "' must be a table",
                   "declare each library as [[custom-ops]]");
      continue;
    }
    TomlFields f = Fields(*t, name);
    CustomOpLibrary lib;
    if (auto library = f.String("library", Need::kRequired)) {
      CheckRelativePath(f, "library", *library, f.Pos("library"));
      CheckImagePath(f, "library", *library);
      if (!libraries.insert(*library).second) {
        f.Error(f.Pos("library"), "duplicate custom-op library " + Quoted(*library));
      }
      lib.library = *library;
    }
    if (auto source = f.String("source", Need::kOptional)) {
      // The sources may live beside the project (examples/ops for examples/h200-pilot): '..'
      // is allowed, an absolute path is not (the lock must mean the same on every machine).
      if (source->empty() || source->front() == '/' || source->find('\\') != std::string::npos) {
        f.Error(
            f.Pos("source"),
            "'" + f.Qualified("source") + "' = " + Quoted(*source) + " is not a relative directory",
            "name the CMake project that builds the library, relative to the project");
      }
      CheckImagePath(f, "source", *source);
      lib.source = *source;
    }
    if (lock()) {
      auto source_sha =
          f.String("source-sha256", lib.source.empty() ? Need::kOptional : Need::kRequired);
      CheckSha256(f, "source-sha256", source_sha);
      lib.source_sha256 = source_sha.value_or("");
      auto sha = f.String("sha256", Need::kOptional);
      CheckSha256(f, "sha256", sha);
      lib.sha256 = sha.value_or("");
    }
    if (auto ops = f.StringArray("ops", Need::kRequired)) {
      static const std::regex kOp(R"(^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_.]*$)");
      for (const std::string& op : *ops) {
        if (!std::regex_match(op, kOp)) {
          f.Error(f.Pos("ops"), "op " + Quoted(op) + " is not a qualified op name",
                  "expected 'namespace::name' as registered with TORCH_LIBRARY");
        }
      }
      lib.ops = *ops;
    }
    if (const toml::array* smoke = f.Array("smoke", Need::kOptional)) ReadSmoke(*smoke, name, lib);
    f.Finish();
    spec_.custom_ops.push_back(std::move(lib));
  }
}

void LockfileReader::ReadSmoke(const toml::array& a, const std::string& name,
                               CustomOpLibrary& lib) {
  size_t index = 0;
  for (const toml::node& element : a) {
    std::string smoke_name = name + ".smoke[" + std::to_string(index++) + "]";
    const auto* t = element.as_table();
    if (!t) {
      diags_.Error(path_, PosOf(element), "'" + smoke_name + "' must be a table");
      continue;
    }
    TomlFields f = Fields(*t, smoke_name);
    SmokeSpec smoke;
    if (auto op = f.String("op", Need::kRequired)) {
      if (std::find(lib.ops.begin(), lib.ops.end(), *op) == lib.ops.end()) {
        f.Error(f.Pos("op"),
                "smoke test names op " + Quoted(*op) + " which is not in '" + name + ".ops'");
      }
      smoke.op = *op;
    }
    if (auto reference = f.String("reference", Need::kRequired)) smoke.reference = *reference;
    if (const toml::array* inputs = f.Array("inputs", Need::kRequired)) {
      for (const toml::node& input : *inputs) {
        const toml::table* it =
            EntryTable(f, input, "inputs", "e.g. { shape = [4, 2048], dtype = \"bf16\" }");
        if (!it) continue;
        TomlFields fi = Fields(*it, f.Qualified("inputs"));
        TensorSpec tensor;
        if (auto dtype = fi.String("dtype", Need::kRequired)) {
          if (std::find(std::begin(kSmokeDtypes), std::end(kSmokeDtypes), *dtype) ==
              std::end(kSmokeDtypes)) {
            fi.Error(fi.Pos("dtype"),
                     "'" + fi.Qualified("dtype") + "' = " + Quoted(*dtype) +
                         " is not one of fp32, bf16, fp16, fp64, int64, int32",
                     DidYouMean(*dtype, kSmokeDtypes));
          }
          tensor.dtype = *dtype;
        }
        if (const toml::array* shape = fi.Array("shape", Need::kRequired)) {
          for (const toml::node& dim : *shape) {
            const auto* d = dim.as_integer();
            if (!d || d->get() < 1 || d->get() > kMaxSmokeDim) {
              fi.Error(PosOf(dim), "'" + fi.Qualified("shape") +
                                       "' dimensions must be integers from 1 to 2^31");
              continue;
            }
            tensor.shape.push_back(d->get());
          }
          if (shape->empty() || shape->size() > kMaxSmokeRank) {
            fi.Error(fi.Pos("shape"), "a shape has 1 to 8 dimensions");
          }
        }
        fi.Finish();
        smoke.inputs.push_back(std::move(tensor));
      }
    }
    smoke.rtol = f.Number("rtol", Need::kOptional, 0, kMaxSmokeTolerance).value_or(smoke.rtol);
    smoke.atol = f.Number("atol", Need::kOptional, 0, kMaxSmokeTolerance).value_or(smoke.atol);
    smoke.grad_rtol =
        f.Number("grad-rtol", Need::kOptional, 0, kMaxSmokeTolerance).value_or(smoke.grad_rtol);
    smoke.grad_atol =
        f.Number("grad-atol", Need::kOptional, 0, kMaxSmokeTolerance).value_or(smoke.grad_atol);
    f.Finish();
    lib.smoke.push_back(std::move(smoke));
  }
}

}  // namespace trainlock
