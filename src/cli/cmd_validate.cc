// `trainlock validate DIR [--image REF] [OPTIONS]`: run the validator, trainlock-validate, on a
// project. The validator is a separate binary (it links LibTorch; trainlock does not). Without
// --image this command finds it beside `trainlock` or on PATH and hands over the process. With
// --image it runs the image's own validator through the engine (image_run.h) on the project
// mounted read-only, then binds the report it wrote to the image by the digest the engine
// resolved ("engine"), and only then signs it: the binding is measured on the host, not
// declared by the environment.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/failure.h"
#include "base/file_io.h"
#include "base/file_stream.h"
#include "base/json_file.h"
#include "base/program_path.h"
#include "base/refs.h"
#include "base/suggest.h"
#include "base/terminal_text.h"
#include "cli/commands.h"
#include "image/image_run.h"
#include "image/in_image_paths.h"
#include "project/artifact_paths.h"
#include "project/project.h"
#include "project/validator_options.h"
#include "report/report.h"
#include "report/report_signing.h"
#include "report/report_view.h"

namespace trainlock::cli {
namespace fs = std::filesystem;
namespace {

struct ValidateOptions {
  std::string dir = ".";
  std::string image;  // --image REF
  ImageRunOptions run;
  bool no_tls_verify = false;
  std::vector<std::string> passthrough;
  // Taken from the validator's options when the report is finished on the host; empty: the
  // project's default report path.
  std::string out;
  std::string sign_key;
  bool json = false;
  bool quiet = false;  // trainlock -q: no `wrote` line after --image
};

int ExecLocalValidator(const ValidateOptions& options) {
  std::vector<std::string> args = {"trainlock-validate", options.dir};
  args.insert(args.end(), options.passthrough.begin(), options.passthrough.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const fs::path validator = CompanionProgram("trainlock-validate");
  if (!validator.empty()) ::execv(validator.c_str(), argv.data());
  const std::string why = validator.empty() ? "not found beside trainlock or on PATH"
                                            : validator.string() + ": " + std::strerror(errno);
  std::cerr
      << "trainlock: error: cannot run trainlock-validate (" << why
      << "); it is built beside trainlock when LibTorch is found, or run it inside the image\n";
  return kExitEnvironment;
}

// This command's own options, which the validator does not take.
const std::vector<std::string_view> kHostOnlyOptions = {
    "--image", "--container-engine", "--storage-root", "--storage-driver", "--no-tls-verify"};

// Refuses an option that is neither this command's nor the validator's, before anything runs.
void RequireKnownOption(const std::string& arg) {
  std::vector<std::string_view> names = kHostOnlyOptions;
  for (const ValidatorOption& row : ValidatorOptions()) names.push_back(row.long_name());
  const std::string name = arg.substr(0, arg.find('='));
  const std::string closest = ClosestMatch(name, names);
  // The usage error's format (base/usage_error.h), as for every other command's options.
  throw InputError(Diagnostic{"trainlock validate",
                              {},
                              "unknown option " + TerminalLine(name),
                              closest.empty() ? "" : "did you mean " + closest + "?"});
}

// Refuses a value outside the choices of a validator option that has them (--progress,
// --device), in this command's name, before anything runs.
void RequireChoice(const ValidatorOption& row, const std::string& arg) {
  if (*row.choices == '\0') return;
  const size_t eq = arg.find('=');
  const std::string value =
      arg.starts_with("-") && eq != std::string::npos ? arg.substr(eq + 1) : arg;
  std::vector<std::string> choices;
  std::string list;
  for (std::string_view rest = row.choices; !rest.empty();) {
    const size_t bar = rest.find('|');
    choices.emplace_back(rest.substr(0, bar));
    rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
  }
  if (std::find(choices.begin(), choices.end(), value) != choices.end()) return;
  for (size_t i = 0; i < choices.size(); ++i)
    list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  throw InputError(
      Diagnostic{"trainlock validate",
                 {},
                 std::string(row.long_name()) + ": " + Quoted(value) + " is not one of " + list,
                 ""});
}

// Moves this command's own options out of the validator's (CLI11 stops at the first option it
// does not know, so they may come after validator options); --out, --sign and --json are kept
// for the host, which finishes the report. The validator's option table
// (project/validator_options.h) says which arguments are options and which take a value, so a
// value is never mistaken for an option.
void TakeHostOptions(ValidateOptions& o) {
  std::vector<std::string> rest;
  const std::vector<std::string>& in = o.passthrough;
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string& a = in[i];
    auto value = [&](std::string& into) {
      if (i + 1 >= in.size())
        throw InputError(Diagnostic{"trainlock validate", {}, a + " needs a value", ""});
      into = in[++i];
    };
    if (a == "--image")
      value(o.image);
    else if (a == "--container-engine")
      value(o.run.engine);
    else if (a == "--storage-root") {
      std::string root;
      value(root);
      o.run.storage.root = root;
    } else if (a == "--storage-driver")
      value(o.run.storage.driver);
    else if (a == "--no-tls-verify")
      o.no_tls_verify = true;
    else if (a == "--out" || a == "-o")
      value(o.out);
    else if (a == "--sign")
      value(o.sign_key);
    else if (a == "--json")
      o.json = true;
    else if (const ValidatorOption* row = FindValidatorOption(a)) {
      rest.push_back(a);
      if (!row->is_flag() && a.find('=') == std::string::npos && i + 1 < in.size())
        rest.push_back(in[++i]);
      if (!row->is_flag() && (rest.back() != a || a.find('=') != std::string::npos))
        RequireChoice(*row, rest.back());
    } else if (a.starts_with("-") && a != "-") {
      RequireKnownOption(a);
    } else {
      rest.push_back(a);
    }
  }
  o.passthrough = rest;
}

// The report the validator wrote in the image, bound to the image the engine resolved.
nlohmann::json BindReport(const fs::path& file, const Project& project, const EngineImage& image) {
  nlohmann::json report = ReadJsonFile(file, file.string());
  if (ViewOfReport(report).lock_sha256 != project.lock->lock_build_sha256) {
    throw Failure(file.string() + ": the report's lock_sha256 is not " + project.lock_path + "'s",
                  kExitVerdict);
  }
  std::string error;
  ImageRef name = *ParseImageRef(image.ref, &error);
  name.digest.clear();
  report["image"] = {
      {"ref", name.ToString()}, {"digest", image.digest}, {"digest_source", "container-tool"}};
  report.erase("signature");
  std::vector<std::string> problems = ReportSchemaViolations(report);
  if (!problems.empty()) {
    throw Failure(file.string() + ": the validator's report does not conform: " + problems.front(),
                  kExitEnvironment);
  }
  return report;
}

// A fresh directory for the report, mounted into the container; removed afterwards.
class OutDir {
 public:
  OutDir() {
    std::string templ = (fs::temp_directory_path() / "trainlock-report-XXXXXX").string();
    if (!::mkdtemp(templ.data()))
      throw Failure("cannot create a directory in " + fs::temp_directory_path().string(),
                    kExitEnvironment);
    path_ = templ;
  }
  ~OutDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The last kShownOutputBytes of what the validator in the image printed: a container may print
// without bound, and its summary is only shown (the report is the result), so more is left out
// with a note instead of failing the run as bad input and losing its report.
std::string ContainerOutputTail(const fs::path& file) {
  constexpr size_t kShownOutputBytes = size_t{1} << 20;
  std::string tail;
  uint64_t total = 0;
  try {
    total = StreamRegularFile(file, [&](std::string_view chunk) {
      tail.append(chunk);
      if (tail.size() > 2 * kShownOutputBytes) tail.erase(0, tail.size() - kShownOutputBytes);
    });
  } catch (const StreamError& e) {
    return std::string("[the validator's output could not be read: ") + e.what() + "]\n";
  }
  if (tail.size() > kShownOutputBytes) tail.erase(0, tail.size() - kShownOutputBytes);
  if (total == tail.size()) return tail;
  const size_t line = tail.find('\n');
  tail.erase(0, line == std::string::npos ? 0 : line + 1);
  return "[... the first " + std::to_string(total - tail.size()) +
         " bytes of the validator's output left out ...]\n" + tail;
}

int ValidateInImage(ValidateOptions& o) {
  o.run.tls_verify = !o.no_tls_verify;
  if (o.run.storage.root.empty()) o.run.storage.root = DefaultStorageRoot(fs::absolute(o.dir));
  CheckStorageDriver(o.run.storage.driver);
  // Before any engine work (a pull can take an hour): the project is mounted by its path.
  CheckMountableHostPath(fs::absolute(o.dir), "the project directory");
  Project project = LoadProject(o.dir);
  RequireLock(project, "missing; run `trainlock lock` first");
  IgnoreTrainlockDir(o.run.storage.root);
  std::string pem;
  if (!o.sign_key.empty()) {
    pem = ReadInputFile(o.sign_key, o.sign_key);
    try {
      PrivateKeyId(pem);
    } catch (const KeyError& e) {
      throw InputError(
          Diagnostic{o.sign_key, {}, e.what(), "give the .key file written by `trainlock keygen`"});
    }
  }
  if (o.out.empty()) o.out = DefaultReportPath(o.dir).string();
  const EngineImage image = ResolveEngineImage(o.image, o.run);
  // The digest is the container tool's answer: shown through the terminal-safe printer.
  std::cerr << "trainlock: validating in " << TerminalLine(image.ref) << " ("
            << TerminalLine(image.digest) << ", resolved by " << image.engine << ")\n";
  OutDir out, summary;
  std::vector<std::string> argv = {kValidatorInImage, kProjectMountInContainer, "--out",
                                   std::string(kReportMountInContainer) + "/report.json"};
  argv.insert(argv.end(), o.passthrough.begin(), o.passthrough.end());
  const int code = RunInImage(image, o.run,
                              {{fs::absolute(o.dir), kProjectMountInContainer, true},
                               {out.path(), kReportMountInContainer, false}},
                              {}, argv, summary.path() / "stdout");
  // The summary names the report where the container wrote it; the reader wants the host's.
  // What the image printed is text from outside this process: escaped and masked.
  if (fs::exists(summary.path() / "stdout"))
    std::cout << TerminalText(
                     WithHostReportPaths(ContainerOutputTail(summary.path() / "stdout"), o.out))
              << std::flush;
  if (!fs::exists(out.path() / "report.json")) {
    std::cerr << "trainlock: error: the validator in " << TerminalLine(image.ref)
              << " wrote no report (exit " << code << ")\n";
    return code == kExitOk || code == kExitVerdict ? kExitEnvironment : code;
  }
  // The merged report and, for a run of several ranks, each rank's beside it.
  for (const auto& entry : fs::directory_iterator(out.path())) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("report") || entry.path().extension() != ".json") continue;
    nlohmann::json report = BindReport(entry.path(), project, image);
    if (!pem.empty()) SignReport(report, pem);
    const fs::path dest =
        name == "report.json"
            ? fs::path(o.out)
            : fs::path(o.out).parent_path() / (fs::path(o.out).stem().string() + name.substr(6));
    IgnoreTrainlockDir(dest);
    if (dest.has_parent_path()) fs::create_directories(dest.parent_path());
    WriteFileAtomically(dest, SignedReportText(report));
    if (name == "report.json" && o.json) std::cout << DumpJsonOutput(report) << "\n";
  }
  if (!o.quiet)
    std::cerr << "trainlock: wrote " << TerminalLine(o.out) << ", bound to "
              << TerminalLine(image.digest) << (pem.empty() ? "" : ", signed") << "\n";
  return code;
}

int RunValidate(ValidateOptions& options) {
  TakeHostOptions(options);
  if (options.image.empty()) {
    if (!options.run.engine.empty() || !options.run.storage.root.empty() || options.no_tls_verify)
      throw InputError(Diagnostic{"--container-engine",
                                  {},
                                  "--container-engine, --storage-root/-driver and --no-tls-verify "
                                  "go with --image",
                                  ""});
    // Without an image the validator finishes its own report.
    if (!options.out.empty())
      options.passthrough.insert(options.passthrough.end(), {"--out", options.out});
    if (!options.sign_key.empty())
      options.passthrough.insert(options.passthrough.end(), {"--sign", options.sign_key});
    if (options.json) options.passthrough.push_back("--json");
    return ExecLocalValidator(options);
  }
  return ValidateInImage(options);
}

}  // namespace

Command RegisterValidate(CLI::App& app, const GlobalOptions& global) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Run trainlock-validate on DIR: node probes, pinned data, custom ops, a measured training\n"
      "step and the train -> checkpoint -> SIGKILL -> restore -> resume round trip, writing\n"
      "report.json. Options after DIR go to the validator (see trainlock-validate --help):\n" +
          ValidatorOptionsSummary() +
          ".\nWith --image REF the validator inside that image runs (through buildah, podman or\n"
          "docker, with the GPUs passed through) on DIR mounted read-only; the report is then\n"
          "bound to the image digest the engine resolved and signed on the host.\n" +
          ValidateExitCodesHelp());
  cmd->add_option("DIR", options->dir,
                  "Project directory (or its trainlock.lock or trainlock.toml)")
      ->transform(CLI::Validator(ProjectDirOrMissing, "DIR", "project directory"))
      ->capture_default_str();
  cmd->add_option("--image", options->image,
                  "Validate inside this image (REF or REF@sha256:...), pulled when not local");
  cmd->add_option("--container-engine", options->run.engine,
                  "With --image: buildah, podman or docker (default: the first found)");
  cmd->add_option("--storage-root", options->run.storage.root,
                  "With --image: buildah/podman storage directory (default: "
                  "DIR/.trainlock/containers)");
  cmd->add_option("--storage-driver", options->run.storage.driver,
                  "With --image: buildah/podman storage driver, vfs (default) or overlay");
  cmd->add_flag("--no-tls-verify", options->no_tls_verify,
                "With --image: pull over plain HTTP from any registry (loopback registries "
                "always are)");
  cmd->allow_extras();
  cmd->prefix_command();
  // Everything after DIR is the validator's, global options included: nothing falls through
  // to trainlock's own parser (main.cc turns fallthrough on for the other commands).
  cmd->fallthrough(false);
  return [options, cmd, &global] {
    options->passthrough = cmd->remaining();
    // CLI11 passes a validator option through but takes its value for DIR when no DIR came
    // before it (`validate --timeout 5`): the value goes back to its option.
    if (!options->passthrough.empty() && cmd->get_option("DIR")->count() > 0) {
      const std::string& last = options->passthrough.back();
      const ValidatorOption* row = FindValidatorOption(last);
      if (row && !row->is_flag() && last.find('=') == std::string::npos) {
        options->passthrough.push_back(options->dir);
        options->dir = ".";
      }
    }
    RequireProjectDirExists(options->dir);  // now that DIR is known to be DIR
    // `trainlock -q validate` and `-v`: the validator's own -q and -v, unless it was told
    // otherwise.
    std::vector<std::string>& p = options->passthrough;
    auto given = [&p](const char* option) {
      const ValidatorOption* row = FindValidatorOption(option);
      return std::any_of(p.begin(), p.end(),
                         [row](const std::string& a) { return FindValidatorOption(a) == row; });
    };
    options->quiet = global.quiet() || given("-q");
    if (global.quiet() && !given("--progress") && !given("-q")) p.push_back("-q");
    if (global.verbosity > 0 && !given("-v")) p.push_back("-v");
    if (global.progress != "auto" && !given("--progress"))
      p.insert(p.end(), {"--progress", global.progress});
    return RunValidate(*options);
  };
}

}  // namespace trainlock::cli
