// The gate's rules, one function per refusal topic; see gate.h.
#include "report/gate.h"

#include <sstream>

#include <algorithm>

#include "base/diagnostic.h"
#include "base/json_file.h"
#include "base/strings.h"
#include "base/text_format.h"
#include "base/time_text.h"
#include "image/in_image_paths.h"
#include "project/check_ids.h"
#include "report/check_metrics.h"
#include "report/golden_compare.h"
#include "report/golden_pin.h"
#include "report/pass_rules.h"
#include "report/report.h"
#include "report/report_attestation.h"
#include "report/report_signing.h"
#include "report/report_view.h"

namespace trainlock {
namespace {

using Json = nlohmann::json;

class GateRules {
 public:
  GateRules(const GateRequest& request, const Json& report, const Catalog& catalog)
      : request_(request), report_(report), view_(ViewOfReport(report)), catalog_(catalog) {}

  GateDecision Decide() {
    Schema();
    if (view_.verdict == "error") {
      // Not a failing node: nothing was judged, so nothing else of the report means anything.
      NotJudged();
      return decision_;
    }
    Partial();
    Lock();
    Files();
    Config();
    const Target* target = TargetOfReport();
    if (target) {
      Image(*target);
      Devices(*target);
    }
    if (request_.image_digest) RequestedImage(*request_.image_digest);
    NegativeControl();
    if (request_.require_lock_checkpoint_dir) LockCheckpointDir();
    Engine();
    EngineInterpreter();
    Checks();
    Evidence();
    Golden();
    Age();
    if (request_.node) Node(*request_.node);
    if (request_.revocation) Revoked(*request_.revocation);
    return decision_;
  }

  void Refuse(const std::string& reason) { decision_.reasons.push_back(reason); }

 private:
  // The lock's golden pins (`lock --golden`): a report under a pinned key must have computed the
  // pinned digest, by the rule fleet summarize applies too (golden_compare.h). A report under a
  // key the lock pins nothing for is compared with nothing.
  void Golden() {
    if (!request_.lock || request_.lock->golden.empty()) return;
    if (std::optional<std::string> missing =
            MissingGoldenRefusal(*request_.lock, view_.golden.has_value())) {
      Refuse("golden: " + *missing);
      return;
    }
    const std::string node = view_.host.hostname.empty() ? "the node" : view_.host.hostname;
    const std::optional<GoldenVerdict> verdict =
        CompareWithLockPin(*request_.lock, view_.golden->key, {{node, view_.golden->digest}});
    if (!verdict) return;
    if (!verdict->differing.empty()) {
      Refuse("golden: " + verdict->reason);
      return;
    }
    decision_.facts.push_back("golden digest " + ShortSha(verdict->reference) +
                              " as the lock pins");
  }

  void Schema() {
    std::vector<std::string> violations = ReportSchemaViolations(report_);
    if (violations.empty()) return;
    std::string list;
    for (size_t i = 0; i < violations.size() && i < 5; ++i) list += (i ? "; " : "") + violations[i];
    if (violations.size() > 5) list += "; and " + std::to_string(violations.size() - 5) + " more";
    Refuse(std::string("schema: the report does not conform to ") + kReportSchema + ": " + list);
  }

  void NotJudged() {
    Refuse("not-judged: the node was not judged, the validation could not run here (" +
           (view_.environment_error.empty() ? std::string("no reason given")
                                            : view_.environment_error) +
           "): fix the environment and validate again");
  }

  // One rank's own report (report.rank-N.json) shows that rank's checks only: the run passed
  // only if the merged report, which rank 0 writes with every rank's entry, says so.
  void Partial() {
    if (!view_.partial) return;
    std::string which = view_.rank ? "rank " + std::to_string(*view_.rank) + "'s own report"
                                   : std::string("a rank's own report");
    if (view_.world_size) which += " of a " + std::to_string(*view_.world_size) + "-rank run";
    Refuse("partial: " + request_.report_path + " is " + which +
           ", a part of the run; gate the merged report rank 0 wrote (" +
           MergedReportPath(request_.report_path) + ")");
  }

  // report.rank-3.json -> report.json: where rank 0 wrote the merged report beside it.
  static std::string MergedReportPath(const std::string& path) {
    const size_t at = path.rfind(".rank-");
    if (at == std::string::npos) return "report.json";
    const size_t dot = path.find('.', at + 6);
    return path.substr(0, at) + (dot == std::string::npos ? "" : path.substr(dot));
  }

  // The project's files (config, manifest, local model and dataset files) against the lock.
  void Files() {
    for (const std::string& drift : request_.file_drift) Refuse("files: " + drift);
    if (request_.file_drift.empty() && !request_.files_fact.empty())
      decision_.facts.push_back(request_.files_fact);
  }

  void Lock() {
    const std::string& reported = view_.lock_sha256;
    if (reported == request_.lock_sha256) {
      decision_.facts.push_back("lock " + ShortSha(reported));
      return;
    }
    Refuse("lock: the report validated lock " + (reported.empty() ? "(none)" : ShortSha(reported)) +
           ", not " + request_.lock_path + " (" + ShortSha(request_.lock_sha256) +
           "); validate again with this lock");
  }

  // The report trained from the config the lock pins, and from no drifted project.
  void Config() {
    const std::string& want = request_.lock->config_sha256;
    const std::string& got = view_.config_sha256;
    if (got.empty()) {
      Refuse(
          "config: the report does not say which training config it ran (no config_sha256); "
          "validate again with this trainlock");
    } else if (got != want) {
      Refuse("config: the report trained config " + ShortSha(got) + ", not the lock's " +
             request_.lock->config + " (" + ShortSha(want) + "); validate again");
    }
    for (const std::string& drift : view_.drift) {
      Refuse("config: the report was validated with --allow-drift (" + drift +
             "); re-lock and validate again");
    }
  }

  // --image: the digest the launcher will run.
  void RequestedImage(const std::string& digest) {
    if (view_.image_digest == digest) {
      decision_.facts.push_back("--image " + digest.substr(0, 19) + " " + DigestSource());
      return;
    }
    Refuse("image: the report ran in " +
           (view_.image_digest.empty() ? std::string("no image") : view_.image_digest) +
           ", not --image " + digest);
  }

  void NegativeControl() {
    if (view_.negative_control.empty()) return;
    Refuse("checks: the report is a negative control (" + view_.negative_control +
           "): it broke the resume on purpose and never clears a gate");
  }

  // --require-lock-checkpoint-dir: a resume proven on other storage than the long run's proves
  // nothing about the long run's storage.
  void LockCheckpointDir() {
    const std::string& source = view_.checkpoint_dir_source;
    if (source == "lock") return;
    std::string where = "storage the report does not name";
    if (source == "option") where = "a --checkpoint-dir override";
    if (source == "work-dir") where = "the work directory (the lock names no checkpoint-dir)";
    Refuse("checkpoint: the report's checkpoints went to " + where +
           ", not the lock's validate.checkpoint-dir; validate again without --checkpoint-dir");
  }

  // The engine that trained, as the training process said (train.step's measured_shape, or
  // train.roundtrip's engine); "" when the report does not say.
  std::string EngineThatRan() const {
    if (const CheckView* step = view_.FindCheck("train.step")) {
      const auto m = ReadMetrics<TrainStepMetrics>(step->metrics);
      const auto shape = ReadMetrics<MeasuredShapeMetrics>(m.measured_shape.value_or(Json()));
      if (shape.engine) return *shape.engine;
    }
    if (const CheckView* roundtrip = view_.FindCheck("train.roundtrip"))
      return ReadMetrics<RoundtripMetrics>(roundtrip->metrics).engine.value_or("");
    return "";
  }

  // A round trip proves the engine that ran it: the lock's, and --require-engine's.
  void Engine() {
    bool trained = false;
    for (const char* id : {"train.step", "train.roundtrip"}) {
      const CheckView* c = view_.FindCheck(id);
      trained = trained || (c && c->status == "pass");
    }
    if (!trained && !request_.require_engine) return;
    const std::string ran = EngineThatRan();
    const std::string& locked = request_.lock->validate.engine;
    if (ran.empty() && locked == "native" &&
        (!request_.require_engine || *request_.require_engine == "native")) {
      // Validators before engine names had the native engine only, and the report is bound to
      // this lock (lock_sha256), whose engine is what the validator runs.
      decision_.facts.push_back(
          "engine native (the report names none: its validator had no other)");
      return;
    }
    if (ran.empty()) {
      Refuse(
          "engine: the report does not say which engine trained; validate again with this "
          "trainlock");
      return;
    }
    if (ran != locked) {
      Refuse("engine: the round trip ran engine " + ran + ", the lock's validate.engine is " +
             locked + "; validate again with this lock");
    }
    if (request_.require_engine && ran != *request_.require_engine) {
      Refuse("engine: the round trip ran engine " + ran + ", not --require-engine " +
             *request_.require_engine);
    }
    if (ran == locked) decision_.facts.push_back("engine " + ran);
  }

  // Every passing check's metrics support its pass (check_evidence.h), within tolerances no
  // looser than the lock's.
  void Evidence() {
    for (const std::string& c : EvidenceContradictions(view_)) Refuse("evidence: " + c);
    Tolerances();
  }

  // The validator compares with the lock's tolerances: a pass stating a looser one was judged
  // by another yardstick than this lock's (an edited report).
  void Tolerances() {
    const ValidateSection& v = request_.lock->validate;
    for (const CheckView& c : view_.checks) {
      if (c.status != "pass") continue;
      const bool loss = c.id == "train.roundtrip";
      std::optional<double> stated;
      if (loss) stated = ReadMetrics<RoundtripMetrics>(c.metrics).loss_tolerance;
      if (c.id == "train.eval") stated = ReadMetrics<EvalMetrics>(c.metrics).tolerance;
      if (c.id == "ckpt.portable") stated = ReadMetrics<PortableMetrics>(c.metrics).tolerance;
      const double locked = loss ? v.loss_tolerance : v.eval_tolerance;
      if (!stated || *stated <= locked) continue;
      std::ostringstream why;
      why << "evidence: " << c.id << ": pass within a tolerance of " << *stated
          << ", looser than the lock's validate." << (loss ? "loss" : "eval") << "-tolerance "
          << locked;
      Refuse(why.str());
    }
  }

  // The lock target the report validated: the one it names, which must be its validator's
  // build, a target of the lock, and --target when given.
  const Target* TargetOfReport() {
    const std::string& name = view_.target;
    if (name.empty()) {
      Refuse(
          "target: the report does not say which lock target it validated (no target); "
          "validate again with this trainlock");
      return nullptr;
    }
    if (!view_.build.empty() && name != view_.build) {
      Refuse("target: the report names target " + name + " but ran a " + view_.build +
             " validator");
      return nullptr;
    }
    if (request_.target && *request_.target != name) {
      Refuse("target: the report validated target " + name + ", not --target " + *request_.target +
             "; validate on a " + *request_.target + " node in its image");
      return nullptr;
    }
    auto it = request_.lock->targets.find(name);
    if (it != request_.lock->targets.end()) {
      decision_.facts.push_back("target " + name);
      return &it->second;
    }
    std::string names;
    for (const auto& [n, target] : request_.lock->targets) names += (names.empty() ? "" : ", ") + n;
    Refuse("target: the report validated target " + name +
           ", and the lock has no such target (targets: " + names + ")");
    return nullptr;
  }

  void Image(const Target& target) {
    const std::string& digest = view_.image_digest;
    auto built = request_.lock->images.find(target.name);
    if (built == request_.lock->images.end()) {
      if (digest.empty()) {
        decision_.facts.push_back("no image (the lock has no built " + target.name + " image)");
        return;
      }
      Refuse("image: the report ran in " + view_.image_ref + "@" + digest +
             ", but the lock records no built " + target.name +
             " image; run `trainlock image build` and validate in that image");
      return;
    }
    const BuiltImage& locked = built->second;
    if (digest.empty()) {
      Refuse("image: the report was not produced inside the locked " + target.name + " image (" +
             locked.ref + "@" + locked.digest + "); run the validator in that image");
    } else if (digest != locked.digest) {
      Refuse("image: the report ran in " + digest + ", not the lock's " + target.name + " image " +
             locked.digest);
    } else {
      decision_.facts.push_back("image " + digest.substr(0, 19) + " " + DigestSource());
    }
  }

  // Where the report's image digest came from, as the gate's facts say it.
  std::string DigestSource() const {
    if (view_.image_digest_source == "container-tool")
      return "(measured by the container tool that ran the validator)";
    if (view_.image_digest_source == "environment")
      return "(claimed by the environment, TRAINLOCK_IMAGE_DIGEST: the job that pulled the "
             "image by digest; the image's files were verified against its record)";
    return "(the report does not say how the digest was obtained)";
  }

  // A Python engine inside an image ran the image's interpreter, verified with every file on
  // its path before it started (checks/python_files.h); outside an image it is unverified.
  void EngineInterpreter() {
    if (view_.engine_python.empty()) return;
    if (view_.image_digest.empty()) {
      decision_.facts.push_back("engine interpreter " + view_.engine_python +
                                " unverified (outside an image)");
      return;
    }
    if (view_.engine_python != kPythonInImage) {
      Refuse("engine: the round trip ran " + view_.engine_python +
             ", not the image's interpreter " + kPythonInImage +
             "; validate without --python inside the image");
    } else if (!view_.engine_python_verified) {
      Refuse(
          "engine: the report does not say the image's Python files were verified before the "
          "engine ran (engine.python_verified); validate again with this trainlock");
    }
  }

  void Devices(const Target& target) {
    const std::vector<DeviceView>& devices = view_.devices;
    if (target.accelerators.empty()) {
      decision_.facts.push_back(std::to_string(devices.size()) + " device(s)");
      return;
    }
    const std::string wanted = JoinStrings(target.accelerators, ", ");
    if (devices.empty()) {
      Refuse("devices: the report saw no accelerator, but target " + target.name + " runs on " +
             wanted);
      return;
    }
    size_t matching = 0;
    for (size_t i = 0; i < devices.size(); ++i) {
      const std::string& name = devices[i].name;
      const GpuModel* model = catalog_.FindGpu(name);
      bool listed =
          model && std::any_of(target.accelerators.begin(), target.accelerators.end(),
                               [&](const std::string& a) { return catalog_.FindGpu(a) == model; });
      if (listed) {
        ++matching;
      } else {
        Refuse("devices: device " + std::to_string(i) + " (" + Quoted(name) +
               ") is not among target " + target.name + "'s accelerators (" + wanted + ")");
      }
    }
    if (matching == devices.size())
      decision_.facts.push_back(std::to_string(devices.size()) + " device(s) of " + wanted);
  }

  std::vector<std::string> RequiredChecks() const {
    std::vector<std::string> required = request_.lock->validate.required;
    for (const std::string& id : request_.require) {
      if (std::find(required.begin(), required.end(), id) == required.end()) required.push_back(id);
    }
    return required;
  }

  // A required check (the lock's or --require's, not the report's own list) that is failing.
  void RequiredCheck(const std::string& id) {
    const CheckView* c = view_.FindCheck(id);
    if (!IsFailingCheck(c ? c->status : "", true)) return;
    if (!c) {
      Refuse("checks: required check " + id + " is not in the report");
    } else if (c->status == "skip") {
      Refuse("checks: required check " + id + " was skipped, and a skip is not a pass (" +
             c->summary + ")");
    } else {
      Refuse("checks: required check " + id + " " + (c->status == "error" ? "errored" : "failed") +
             ": " + c->summary);
    }
  }

  void Checks() {
    const std::vector<std::string> required = RequiredChecks();
    for (const std::string& id : required) RequiredCheck(id);
    for (const CheckView& c : view_.checks) {
      bool is_required = std::find(required.begin(), required.end(), c.id) != required.end();
      if (!is_required && IsFailingCheck(c.status, false)) {
        Refuse("checks: " + c.id + " " + (c.status == "error" ? "errored" : "failed") +
               " (not required, but any failed check fails the verdict): " + c.summary);
      }
    }
    // A verdict that contradicts the checks (edited by hand) is refused even when every
    // check listed passes.
    const std::string& verdict = view_.verdict;
    if (verdict != "pass" && !HasTopic("checks"))
      Refuse("checks: the report's verdict is " + Quoted(verdict) + ", not \"pass\"");
    if (!HasTopic("checks"))
      decision_.facts.push_back(std::to_string(required.size()) + " required check(s) passed");
  }

  void Age() {
    const std::string& started = view_.started_at;
    std::optional<int64_t> at = ParseRfc3339(started);
    if (!at) return;  // the schema reason already says so
    const int64_t age = request_.now_s - *at;
    constexpr int64_t kClockSkew = 300;
    if (age < -kClockSkew) {
      Refuse("age: the report's started_at " + started + " is " + FormatDuration(-age) +
             " in the future; check the node's clock");
    } else if (request_.max_age_s && age > *request_.max_age_s) {
      Refuse("age: the report is " + FormatDuration(age) + " old (started " + started +
             "), older than " + request_.max_age_source + " " +
             FormatDuration(*request_.max_age_s) + "; validate the node again");
    } else {
      decision_.facts.push_back("age " + FormatDuration(std::max<int64_t>(age, 0)));
    }
  }

  // A report vouches for the node it ran on only: a copy of another node's passing report
  // must not open this one.
  void Node(const std::string& node) {
    const std::string& host = view_.host.hostname;
    if (!host.empty() && host == node) {
      decision_.facts.push_back("node " + node);
      return;
    }
    Refuse("node: the report was made on " + (host.empty() ? "an unnamed host" : Quoted(host)) +
           ", not on this node " + Quoted(node) + "; validate this node");
  }

  // --watch-state: the node reported a fault after this report started.
  void Revoked(const GateRevocation& revocation) {
    const std::string why = RevocationRefusal(revocation, view_.started_at);
    if (!why.empty()) {
      Refuse(why);
      return;
    }
    decision_.facts.push_back("started after the node's last revoking event (" + revocation.event +
                              ")");
  }

  bool HasTopic(const std::string& topic) const {
    return std::any_of(decision_.reasons.begin(), decision_.reasons.end(),
                       [&](const std::string& r) { return r.starts_with(topic + ":"); });
  }

  const GateRequest& request_;
  const Json& report_;  // for its schema; every fact is read through view_
  const ReportView view_;
  const Catalog& catalog_;
  GateDecision decision_;
};

}  // namespace

std::string RevocationRefusal(const GateRevocation& revocation, const std::string& started_at) {
  const std::optional<int64_t> started = ParseRfc3339(started_at);
  if (started && *started > revocation.at_s) return "";
  const std::string when = started ? "started " + started_at + ", not after it"
                                   : "states no start time that says it came after it";
  return "revoked: the node reported " + revocation.event + " (kernel: " + revocation.kernel_line +
         "; " + revocation.record + "); the report " + when +
         ": only a new signed pass validated after the event restores the node";
}

Json GateDecision::ToJson() const {
  return {{"allowed", allowed()}, {"reasons", reasons}, {"facts", facts}};
}

GateDecision EvaluateGate(const GateRequest& given, const Catalog& catalog) {
  // An in-toto attestation (report_attestation.h) is opened with the key first; the report it
  // carries is then gated exactly as a report file would be, its own signature included.
  if (LooksLikeEnvelope(given.report_text)) {
    GateDecision refused;
    if (!given.public_key_pem) {
      refused.reasons.push_back(
          "signature: an attestation envelope is verified with --key PUB, and none was given");
      return refused;
    }
    GateRequest opened = given;
    std::string why =
        OpenReportAttestation(given.report_text, *given.public_key_pem, &opened.report_text);
    if (!why.empty()) {
      refused.reasons.push_back(why);
      return refused;
    }
    GateDecision decision = EvaluateGate(opened, catalog);
    if (decision.allowed()) decision.facts.insert(decision.facts.begin(), "attestation verified");
    return decision;
  }
  const GateRequest& request = given;
  std::string signature_problem;
  if (request.public_key_pem)
    signature_problem = VerifyReportSignature(request.report_text, *request.public_key_pem);
  // Within the JSON limits (depth, doubles, one name per member), like every report read.
  std::string problem;
  std::optional<Json> parsed = TryParseJsonText(request.report_text, &problem);
  if (!parsed) {
    if (!request.public_key_pem)
      ParseJsonText(request.report_text, request.report_path);  // throws, naming the position
    GateDecision refused;
    refused.reasons.push_back(signature_problem.empty() ? "report: " + problem : signature_problem);
    return refused;
  }
  Json report = std::move(*parsed);
  // A report of another version of the format is not refused rule by rule: it is input this
  // gate does not read (exit 2), unless its signature already says it is not the one signed.
  if (std::string other = ReportSchemaVersionProblem(report);
      !other.empty() && signature_problem.empty())
    throw InputError(Diagnostic{request.report_path, {}, other, ""});
  GateRules rules(request, report, catalog);
  if (!signature_problem.empty()) rules.Refuse(signature_problem);
  if (!request.public_key_pem && !request.allow_unsigned) {
    rules.Refuse(
        "signature: no --key to verify the report with; anyone can write an unsigned report: "
        "give --key PUB (the pair of the validator's --sign key), or --allow-unsigned");
  }
  GateDecision decision = rules.Decide();
  if (decision.allowed()) {
    decision.facts.insert(decision.facts.begin(), request.public_key_pem
                                                      ? "signature verified"
                                                      : "unsigned (--allow-unsigned)");
  }
  return decision;
}

}  // namespace trainlock
