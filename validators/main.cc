// `trainlock-validate`: the in-container validator's command line. The default command
// validates a project; `record-python-files` is a step of the image build (image_python.h);
// the hidden `worker` subcommand is how the validator runs the processes of its own resume
// test.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/stop_signals.h"
#include "base/usage_error.h"
#include "base/version_info.h"
#include "coordinator/image_python.h"
#include "coordinator/validate.h"
#include "image/in_image_paths.h"
#include "project/artifact_paths.h"
#include "project/check_ids.h"
#include "project/project.h"
#include "project/validate_defaults.h"
#include "project/validator_options.h"
#include "support/engine_events.h"
#include "support/torch_build.h"
#include "worker/worker.h"

namespace {

using namespace trainlock;
using namespace trainlock::validate;

// The table's options with a default, as the parser shows and starts from.
std::map<std::string, std::string> DefaultValues(const ValidateOptions& v) {
  return {{"--device", v.device},
          {"--timeout", std::to_string(v.timeout_s)},
          {"--progress", v.progress},
          {"--join-timeout", std::to_string(v.join_timeout_s)},
          {"--collective-timeout", std::to_string(v.collective_timeout_s)},
          {"--negative-control", "none"}};
}

std::vector<std::string> Choices(const std::string& choices) {
  std::vector<std::string> out;
  std::stringstream in(choices);
  for (std::string choice; std::getline(in, choice, '|');) out.push_back(choice);
  return out;
}

// "a, b or c", as the messages name the choices.
std::string ChoiceList(const std::vector<std::string>& choices) {
  std::string list;
  for (size_t i = 0; i < choices.size(); ++i)
    list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  return list;
}

// The parsed options into `v`; a message when one is out of its range.
std::optional<std::string> FillOptions(const std::map<std::string, std::string>& values,
                                       const std::map<std::string, bool>& flags,
                                       const std::map<std::string, std::vector<std::string>>& lists,
                                       int argc, char** argv, ValidateOptions& v) {
  auto value = [&](const char* name) {
    auto it = values.find(name);
    return it == values.end() ? std::string() : it->second;
  };
  auto number = [&](const char* name, auto fallback) {
    const std::string text = value(name);
    return text.empty() ? fallback : static_cast<decltype(fallback)>(std::stoll(text));
  };
  v.out = value("--out");
  v.checkpoint_dir = value("--checkpoint-dir");
  v.work_dir = value("--work-dir");
  v.keep_work = flags.at("--keep-work");
  v.state_dir = value("--state-dir");
  v.device = value("--device");
  v.threads = number("--threads", v.threads);
  v.timeout_s = number("--timeout", v.timeout_s);
  v.json = flags.at("--json");
  v.progress = flags.at("--quiet") ? "none" : value("--progress");
  v.verbose = flags.at("--verbose");
  v.allow_drift = flags.at("--allow-drift");
  v.join_timeout_s = number("--join-timeout", v.join_timeout_s);
  v.collective_timeout_s = number("--collective-timeout", v.collective_timeout_s);
  v.comm_max_mib = number("--comm-max-mib", v.comm_max_mib);
  v.only = lists.at("--only");
  v.sign_key = value("--sign");
  v.argv.assign(argv, argv + argc);
  const std::string nproc = value("--nproc");
  if (nproc == "auto") {
    v.nproc = -1;
  } else if (!nproc.empty()) {
    char* end = nullptr;
    long n = std::strtol(nproc.c_str(), &end, 10);
    if (*end != '\0' || n < 1 || n > 1024)
      return "--nproc: '" + nproc + "' is not auto or a count in [1, 1024]";
    v.nproc = static_cast<int>(n);
  }
  v.engine_nproc = number("--engine-nproc", v.engine_nproc);
  v.reshard_to = number("--reshard-to", v.reshard_to);
  v.steady_saves = number("--steady-saves", v.steady_saves);
  v.kill_point = value("--kill-point");
  v.kill_during_save = flags.at("--kill-during-save") || !v.kill_point.empty();
  if (v.kill_during_save && v.kill_point.empty()) v.kill_point = kMidFile;
  v.python = value("--python");
  const std::string control = value("--negative-control");
  v.negative_control = control == "rng"             ? NegativeControl::kSkipRngRestore
                       : control == "data"          ? NegativeControl::kSkipDataRestore
                       : control == "corrupt"       ? NegativeControl::kCorruptCheckpoint
                       : control == "torn-snapshot" ? NegativeControl::kTornSnapshot
                       : control == "bitflip"       ? NegativeControl::kFlipBit
                                                    : NegativeControl::kNone;
  return std::nullopt;
}

// The worker's saves (docs/validate.md, "Kill during a save"): --save-at once or twice, the hold
// of the last one's save, the torn-snapshot check's states and its planted fault.
void AddSaveOptions(CLI::App* worker, WorkerOptions& w, std::vector<int64_t>& save_at,
                    std::vector<std::string>& state_at) {
  worker->add_option("--save-at", save_at);
  worker->add_flag("--async-save");  // the native worker's saves are all asynchronous
  worker->add_option("--hold-save-at", w.hold_save_at)
      ->check(
          CLI::IsMember(std::vector<std::string>(std::begin(kSavePoints), std::end(kSavePoints))));
  worker->add_option("--state-at", state_at);
  worker->add_option("--restored-state", w.restored_state);
  worker->add_flag("--leak-step-into-save", w.leak_step_into_save);
  worker->add_option("--steady-saves", w.steady_saves)->check(CLI::Range(0, kMaxSteadySaves));
  worker->add_option("--steady-root", w.steady_root);
}

// The repeated save options into `w`; false when there are more than two --save-at or
// --state-at is not STEP FILE.
bool TakeSaveOptions(const std::vector<int64_t>& save_at, const std::vector<std::string>& state_at,
                     WorkerOptions& w) {
  if (save_at.size() > 2 || (!state_at.empty() && state_at.size() != 2)) return false;
  if (!save_at.empty()) w.save_at = save_at.front();
  if (save_at.size() == 2) w.save_again_at = save_at.back();
  if (state_at.size() == 2) {
    char* end = nullptr;
    w.state_at = std::strtoll(state_at.front().c_str(), &end, 10);
    if (*end != '\0' || w.state_at < 1) return false;
    w.state_at_file = state_at.back();
  }
  return true;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "trainlock-validate: prove this node and image can run the locked training job.\n"
      "Reads DIR/trainlock.lock and its training config, runs every check (node probes,\n"
      "pinned data, custom ops, one measured training step, a train -> checkpoint -> SIGKILL\n"
      "-> restore -> resume round trip that must be bitwise equal to an uninterrupted run,\n"
      "eval agreement, checkpoint portability) and writes report.json\n"
      "(trainlock.report/v2).\n" +
      ValidateExitCodesHelp()};
  app.name("trainlock-validate");
  app.set_version_flag("--version", std::string(kTrainlockVersion) + " (torch " +
                                        BuiltTorchVersion() + ", " + BuiltTorchFlavour() + ")");
  ValidateOptions v;
  std::string project = ".";
  app.add_option("DIR", project,
                 "Project directory (holding trainlock.lock), or its trainlock.lock")
      ->transform(CLI::Validator(ProjectDirFromArgument, "DIR", "project directory"))
      ->capture_default_str();
  // Every option from the one table (project/validator_options.h), its value kept as given.
  std::map<std::string, std::string> values = DefaultValues(v);
  std::map<std::string, bool> flags;
  std::map<std::string, std::vector<std::string>> lists;
  for (const ValidatorOption& row : ValidatorOptions()) {
    const std::string name(row.long_name());
    if (row.is_flag()) {
      app.add_flag(row.names, flags[name], row.help);
    } else if (row.list) {
      app.add_option(row.names, lists[name], row.help)
          ->delimiter(',')
          ->check(CLI::IsMember(std::vector<std::string>(kCheckIds.begin(), kCheckIds.end())));
    } else {
      CLI::Option* option = app.add_option(row.names, values[name], row.help);
      if (*row.choices) {
        const std::vector<std::string> choices = Choices(row.choices);
        option->check([choices](const std::string& value) {
          return std::find(choices.begin(), choices.end(), value) != choices.end()
                     ? std::string()
                     : Quoted(value) + " is not one of " + ChoiceList(choices);
        });
      }
      if (row.is_count()) option->check(CLI::Range(row.min, row.max));
      if (values[name] != "") option->capture_default_str();
    }
  }

  WorkerOptions w;
  w.keep_last = kDefaultKeepLast;
  std::string w_spec, w_ops_spec, w_ckpt, w_result, w_final;
  CLI::App* worker = app.add_subcommand("worker", "internal: one process of the resume test");
  worker->group("");  // hidden from --help
  worker->add_option("--role", w.role)->check(CLI::IsMember({"train", "portable", "node", "ops"}));
  worker->add_option("--spec", w_spec);
  worker->add_option("--spec-sha256", w.spec_sha256);
  worker->add_option("--ops-spec", w_ops_spec);  // the ops role's
  worker->add_option("--ops-spec-sha256", w.ops_spec_sha256);
  worker->add_option("--checkpoint-root", w_ckpt);
  worker->add_option("--result", w_result);  // the node and ops roles' (WorkerWritesResult)
  worker->add_option("--final-state", w_final);
  worker->add_option("--steps", w.steps);
  std::vector<int64_t> w_save_at;
  std::vector<std::string> w_state_at;
  AddSaveOptions(worker, w, w_save_at, w_state_at);
  worker->add_option("--measure-step", w.measure_step);
  worker->add_option("--keep-last", w.keep_last);
  worker->add_flag("--restore", w.restore);
  worker->add_flag("!--no-restore-rng", w.restore_rng);
  worker->add_flag("!--no-restore-data", w.restore_data);
  worker->add_option("--flip-bit-at", w.flip_bit_at);
  worker->add_option("--device", w.device);
  worker->add_option("--threads", w.threads);
  worker->add_option("--start-after", w.start_after);

  std::string record_python = kPythonInImage, record_out = kPythonFilesInImage;
  CLI::App* record = app.add_subcommand(
      "record-python-files",
      "at image build: record every file the image's Python can load (its interpreter, standard "
      "library and site-packages), which validate then verifies before any Python runs");
  record->add_option("--python", record_python, "the image's Python")->capture_default_str();
  record->add_option("--out", record_out, "the record to write")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // prints the help or the version
    std::cerr << UsageErrorText(app, e, std::vector<std::string>(argv + 1, argv + argc));
    return kExitBadInput;
  }
  if (worker->parsed()) {
    if (WorkerWritesResult(w.role) == w_result.empty()) {
      std::cerr << "trainlock-validate worker: error: --result is "
                << (w_result.empty() ? "required by" : "not an option of") << " the " << w.role
                << " role (train and portable speak the engine protocol on stdout)\n";
      return kExitBadInput;
    }
    w.spec = w_spec;
    w.ops_spec = w_ops_spec;
    w.checkpoint_root = w_ckpt;
    w.result = w_result;
    w.final_state = w_final;
    if (!TakeSaveOptions(w_save_at, w_state_at, w)) {
      std::cerr << "trainlock-validate worker: error: --save-at is given at most twice, "
                   "--state-at as STEP FILE\n";
      return kExitBadInput;
    }
    return RunWorker(w);
  }
  if (record->parsed()) return RecordImagePython(record_python, record_out);
  v.project = project;
  const std::optional<std::string> problem = FillOptions(values, flags, lists, argc, argv, v);
  if (problem) {
    std::cerr << "trainlock-validate: error: " << *problem << "\n";
    return kExitBadInput;
  }
  if (v.out.empty()) v.out = DefaultReportPath(project);
  return RunValidate(v);
}

}  // namespace

int main(int argc, char** argv) {
  trainlock::StopOnSignalsWhenProcessOne("trainlock-validate");
  return trainlock::RunWithExitCodes("trainlock-validate", [&] { return Main(argc, argv); });
}
