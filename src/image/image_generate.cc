// Containerfile generation; see image_generate.h.
#include "image/image_generate.h"

#include <unistd.h>

#include <ctime>
#include <stdexcept>

#include "base/catalog_embedded.h"
#include "base/diagnostic.h"
#include "base/failure.h"
#include "base/program_path.h"
#include "base/refs.h"
#include "base/sha256.h"
#include "base/strings.h"
#include "compat/target_archs.h"
#include "image/custom_op_steps.h"
#include "image/debian_install.h"
#include "image/image_record.h"
#include "image/in_image_paths.h"
#include "image/requirements_file.h"
#include "project/round_trip_engines.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

std::string UtcTime(int64_t epoch, const char* format) {
  std::time_t t = static_cast<std::time_t>(epoch);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

// Containerfile.in serves cuda and rocm (they differ in the base, the torch build and its
// index); cpu.Containerfile.in the cpu target, whose validator is not compiled in the image.
std::string Template(const std::string& target) {
  const std::string name = target == "cpu" ? "cpu.Containerfile.in" : "Containerfile.in";
  for (const EmbeddedFile& f : EmbeddedImageTemplates()) {
    if (f.name == name) return std::string(f.contents);
  }
  throw Failure("this trainlock was built without its image template " + name, kExitEnvironment);
}

// The cpu image's builder stage (Debian's compilers and LibTorch headers), when it compiles
// the validator or a custom op.
std::string CpuBuilder(const std::string& snapshot, bool validator, const std::string& ops) {
  if (!validator && ops.empty()) return "";
  std::string out =
      "\n# Compilers and Debian's LibTorch headers, for what the image compiles.\n"
      "FROM @BASE@ AS builder\n"
      "ARG SOURCE_DATE_EPOCH\n"
      "RUN rm -f /etc/apt/sources.list.d/* && \\\n"
      "    echo \"deb [check-valid-until=no] http://snapshot.debian.org/archive/debian/" +
      snapshot +
      " bookworm main\" \\\n"
      "      > /etc/apt/sources.list && \\\n"
      "    apt-get update && \\\n"
      "    apt-get install -y --no-install-recommends cmake ninja-build g++ pkg-config "
      "libtorch-dev \\\n"
      "      libgloo-dev libyaml-cpp-dev libcurl4-openssl-dev libssl-dev nlohmann-json3-dev "
      "libcli11-dev \\\n"
      "      libtomlplusplus-dev zlib1g-dev && \\\n"
      "    rm -rf /var/lib/apt/lists/*\n";
  if (validator) {
    out +=
        "COPY trainlock-src/ /src/trainlock/\n"
        "RUN cmake -S /src/trainlock -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release "
        "-DTRAINLOCK_TESTS=OFF && \\\n"
        "    cmake --build /build --target trainlock-validate\n";
  }
  return out + ops;
}

// --source and --revision go into a LABEL line between double quotes, where the Containerfile
// expands "$" and reads "\\": printable ASCII without those, quotes or backticks.
void CheckLabelValue(const std::string& option, const std::string& value) {
  for (unsigned char c : value) {
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\'' || c == '\\' || c == '$' || c == '`') {
      throw InputError(Diagnostic{
          option,
          {},
          Quoted(value) + " holds a quote, backslash, '$', backtick or control character",
          "it becomes an image label: give the repository URL or the commit as they are"});
    }
  }
}

void CheckLabelValues(const ImageOptions& o) {
  CheckLabelValue("--source", o.source);
  CheckLabelValue("--revision", o.revision);
}

std::string ArchsNote(const std::string& target, const std::vector<std::string>& archs) {
  const std::string list = JoinStrings(archs, ", ");
  return target == "cuda" ? "compute capability " + list : list;
}

}  // namespace

fs::path DefaultValidatorBinary() {
  return CompanionProgram("trainlock-validate");
}

std::string FillTemplate(const std::string& text,
                         const std::map<std::string, std::string>& values) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t open = text.find('@', pos);
    if (open == std::string::npos) break;
    size_t close = text.find('@', open + 1);
    const std::string key =
        close == std::string::npos ? "" : text.substr(open + 1, close - open - 1);
    const bool placeholder =
        !key.empty() &&
        key.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") == std::string::npos;
    if (!placeholder) {
      out += text.substr(pos, open + 1 - pos);
      pos = open + 1;
      continue;
    }
    auto it = values.find(key);
    if (it == values.end())
      throw Failure("template placeholder @" + key + "@ has no value", kExitEnvironment);
    out += text.substr(pos, open - pos) + it->second;
    pos = close + 1;
  }
  return out + text.substr(pos);
}

namespace {

// A Python engine's package as the lock pins it ("engine/trainlock_engine/..." -> bytes), for
// the image to install; none for the native engine. This trainlock's copy must be the pinned
// one: an image never carries engine files its lock does not name.
std::map<std::string, std::string> PinnedEngineFiles(const Lockfile& lock) {
  const RoundTripEngine* engine = FindRoundTripEngine(lock.validate.engine);
  if (!engine || !engine->python) return {};
  if (PythonEngineSha256() != lock.validate.engine_sha256) {
    throw InputError(Diagnostic{
        lock.path,
        {},
        "validate.engine-sha256 pins Python engine files this trainlock does not ship (it "
        "ships " +
            PythonEngineSha256().substr(0, 12) + "...)",
        "re-lock with this trainlock (`trainlock lock`)"});
  }
  std::map<std::string, std::string> files;
  for (const EmbeddedFile& f : EmbeddedPythonEngineFiles())
    files["engine/" + std::string(f.name)] = std::string(f.contents);
  return files;
}

// The torch the image installs: a GPU target's must name its +cuXYZ / +rocmX.Y build, and the
// cpu image's is Debian's LibTorch 1.13 (libtorch1.13 from the dated snapshot,
// cpu.Containerfile.in): a lock asking for another cannot be honoured, so nothing is generated.
void CheckImageTorch(const Project& project, const std::string& target, const Target& t) {
  auto fail = [&](const std::string& message, const std::string& hint) {
    throw InputError(Diagnostic{project.lock_path, {}, message, hint});
  };
  const size_t plus = t.torch.find('+');
  const std::string build_tag = plus == std::string::npos ? "" : t.torch.substr(plus + 1);
  if (target != "cpu" && build_tag.rfind(target == "cuda" ? "cu" : "rocm", 0) != 0) {
    fail("[targets." + target + "] torch = \"" + t.torch + "\" names no " +
             (target == "cuda" ? "+cuXYZ" : "+rocmX.Y") + " build",
         "pin the build, e.g. \"2.11.0+cu130\"");
  }
  if (target == "cpu" && !t.torch.empty() && !t.torch.starts_with("1.13.")) {
    fail("[targets.cpu] torch = \"" + t.torch +
             "\" but the cpu image's torch is Debian's LibTorch 1.13 (libtorch1.13)",
         "set torch = \"1.13.0\" (what its headers report), or use a cuda target for another "
         "torch");
  }
}

}  // namespace

std::map<std::string, std::string> GenerateImage(const Project& project, const ImageOptions& o) {
  auto fail = [&](const std::string& message, const std::string& hint = {}) {
    throw InputError(Diagnostic{project.lock_path, {}, message, hint});
  };
  const Lockfile& lock = RequireLock(project, "missing; run `trainlock lock` first");
  CheckLabelValues(o);
  if (o.target != "cuda" && o.target != "rocm" && o.target != "cpu")
    fail("image targets are cpu, cuda and rocm, not '" + o.target + "'");
  auto it = lock.targets.find(o.target);
  if (it == lock.targets.end()) fail("no [targets." + o.target + "]");
  const Target& t = it->second;
  const bool gpu = o.target != "cpu";
  std::string error;
  std::optional<ImageRef> base = ParseImageRef(t.base, &error);
  if (t.base.empty() || !base || !base->pinned())
    fail("[targets." + o.target + "] has no digest-pinned base", "run `trainlock lock`");
  CheckImageTorch(project, o.target, t);
  if (!t.wheels) {
    const std::string indexes = JoinStrings(t.python_index, ", ");
    fail("[targets." + o.target + "] has no resolved Python closure (" +
             (gpu ? "torch " + t.torch + ", " : std::string()) +
             "the [python] packages and every dependency, with hashes)",
         "run `trainlock lock` where " +
             (indexes.empty() ? std::string("its package index") : indexes) + " can be reached");
  }
  if (t.debs.size() != t.debian_packages.size()) {
    fail("[targets." + o.target + "] debian-packages are not pinned to versions",
         "run `trainlock lock` where " + t.AptSourceUrl() + " can be reached");
  }
  if (o.source_date_epoch < 0) {
    fail(
        "image generation needs SOURCE_DATE_EPOCH (or --source-date-epoch) for reproducible output",
        "e.g. SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)");
  }
  std::vector<std::string> archs;
  if (gpu) {
    const Catalog catalog = o.catalog ? *o.catalog : Catalog::Embedded();
    archs = TargetArchitectures(project, o.target, catalog);
  }
  const CustomOpSteps ops = CustomOpStepsFor(lock, project.lock_path, o.target, archs);

  ImageRecord record;
  record.target = o.target;
  record.lock_sha256 = lock.lock_build_sha256;
  record.config_sha256 = project.config_sha256;
  record.source_date_epoch = o.source_date_epoch;
  record.base = t.base;
  record.ref = o.image_ref;
  const bool copy_validator = !gpu && !o.build_validator;
  if (copy_validator) {
    const fs::path validator = o.validator.empty() ? DefaultValidatorBinary() : o.validator;
    if (validator.empty() || !fs::is_regular_file(validator)) {
      throw InputError(Diagnostic{
          validator.empty() ? "trainlock-validate" : validator.string(),
          {},
          "the cpu image copies a trainlock-validate binary, and there is none here",
          "build it (it is built beside trainlock when LibTorch is found), name one with "
          "--validator, or compile it in the image with --build-validator"});
    }
    record.validator_sha256 = Sha256FileHex(validator);
  }

  ImageRef base_name = *base;
  base_name.digest.clear();
  const std::string snapshot = UtcTime(o.source_date_epoch, "%Y%m%dT%H%M%SZ");
  std::map<std::string, std::string> values = {
      {"LOCK_SHA256", lock.lock_build_sha256},
      {"TARGET", o.target},
      {"PYTHON", t.ImagePython()},
      {"PROJECT_IN_IMAGE", kProjectInImage},
      {"VALIDATOR_IN_IMAGE", kValidatorInImage},
      {"SOURCE_DATE_EPOCH", std::to_string(o.source_date_epoch)},
      {"SNAPSHOT", snapshot},
      {"CREATED", UtcTime(o.source_date_epoch, "%Y-%m-%dT%H:%M:%SZ")},
      {"BASE", t.base},
      {"BASE_NAME", base_name.ToString()},
      {"BASE_DIGEST", base->digest},
      {"CONFIG", lock.config},
      {"SOURCE", o.source},
      {"REVISION", o.revision},
      {"OPS_BUILD", ops.build},
      {"OPS_COPY", ops.copy},
      {"DEBIAN_INSTALL", DebianInstallStep(t)},
      {"ARCHS_NOTE", ArchsNote(o.target, archs)},
      {"VALIDATOR_SHA256", record.validator_sha256},
      {"VALIDATOR_CONTEXT", copy_validator ? "trainlock-validate (sha256 " +
                                                 record.validator_sha256.substr(0, 12) + "...)"
                                           : "trainlock-src/ (trainlock's sources)"},
      {"VALIDATOR_COPY",
       copy_validator
           ? "# The validator binary from the build context (sha256 in the label and image.json).\n"
             "COPY trainlock-validate " +
                 std::string(kValidatorInImage)
           : "# The validator, compiled in the builder stage.\n"
             "COPY --from=builder /build/bin/trainlock-validate " +
                 std::string(kValidatorInImage)},
  };
  std::map<std::string, std::string> engine_files = PinnedEngineFiles(lock);
  // Appended to the custom ops' lines: nothing for the native engine.
  values["ENGINE_COPY"] = engine_files.empty()
                              ? ""
                              : "\n# The round trip's Python engine (" + lock.validate.engine +
                                    "), the files the lock pins (validate.engine-sha256 " +
                                    lock.validate.engine_sha256.substr(0, 12) +
                                    "...).\nCOPY engine/ " + std::string(kEnginesInImage) + "/";
  if (!gpu) {
    values["BUILDER"] = FillTemplate(CpuBuilder(snapshot, !copy_validator, ops.build), values);
  }
  std::map<std::string, std::string> files = {
      {"Containerfile", FillTemplate(Template(o.target), values)},
      {"requirements.txt", RequirementsFile(t, lock.lock_build_sha256)},
      {"image.json", record.ToJson().dump(2) + "\n"}};
  files.merge(engine_files);
  return files;
}

}  // namespace trainlock
