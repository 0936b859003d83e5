// Report building and schema checking; see report.h.
#include "report/report.h"

#include <algorithm>
#include <ctime>
#include <set>

#include "base/refs.h"
#include "base/sha256.h"
#include "base/terminal_text.h"
#include "base/time_text.h"
#include "project/check_ids.h"
#include "report/check_metrics.h"
#include "report/report_view.h"

namespace trainlock {
namespace {

// Every string value of a report (at any depth) as it may be shared: credentials redacted
// (a check's argv or output may hold a URL with a password) and valid UTF-8 without control
// characters (JSON cannot carry other bytes, and a report that cannot be written is a run
// without a verdict). Done before anything signs or writes it.
void ShareableStrings(nlohmann::json& value) {
  if (value.is_string()) {
    value = CleanText(value.get_ref<const std::string&>());  // redacts too
  } else if (value.is_structured()) {
    for (nlohmann::json& element : value) ShareableStrings(element);
  }
}

}  // namespace

const char* CheckStatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kSkip:
      return "skip";
    case CheckStatus::kError:
      return "error";
  }
  return "error";
}

bool IsFailingCheck(std::string_view status, bool required) {
  return status == "fail" || status == "error" || (required && status != "pass");
}

// Like the gate, judges every check as optional and then each required id by its first check,
// so a required id without a check fails too.
std::string Report::Verdict() const {
  if (!environment_error.empty()) return "error";
  if (!negative_control.empty()) return "fail";
  for (const CheckResult& c : checks) {
    if (IsFailingCheck(CheckStatusName(c.status), false)) return "fail";
  }
  for (const std::string& id : required) {
    auto it = std::find_if(checks.begin(), checks.end(),
                           [&](const CheckResult& c) { return c.id == id; });
    if (IsFailingCheck(it == checks.end() ? "" : CheckStatusName(it->status), true)) return "fail";
  }
  return "pass";
}

nlohmann::json Report::ToJson() const {
  nlohmann::json j;
  j["schema"] = kReportSchema;
  j["verdict"] = Verdict();
  j["lock_sha256"] = lock_sha256;
  if (!negative_control.empty()) j["negative_control"] = negative_control;
  if (!config_sha256.empty()) j["config_sha256"] = config_sha256;
  if (!manifest_sha256.empty()) j["manifest_sha256"] = manifest_sha256;
  if (!drift.empty()) {
    j["drift"] = nlohmann::json::array();
    for (const ReportDrift& d : drift) j["drift"].push_back({{"id", d.id}, {"message", d.message}});
  }
  j["image"] = image ? nlohmann::json{{"ref", image->first}, {"digest", image->second}}
                     : nlohmann::json(nullptr);
  if (image && !image_digest_source.empty()) j["image"]["digest_source"] = image_digest_source;
  j["validator"] = {{"version", validator_version}, {"torch", torch_version}, {"build", build}};
  j["target"] = target;
  j["host"] = host;
  j["devices"] = devices;
  j["started_at"] = started_at;
  j["duration_s"] = duration_s;
  j["required"] = required;
  j["checks"] = nlohmann::json::array();
  for (const CheckResult& c : checks) {
    j["checks"].push_back({{"id", c.id},
                           {"status", CheckStatusName(c.status)},
                           {"duration_s", c.duration_s},
                           {"summary", c.summary},
                           {"remedy", c.remedy},
                           {"metrics", c.metrics}});
  }
  j["project"] = project;
  j["work_dir"] = work_dir ? nlohmann::json(*work_dir) : nlohmann::json(nullptr);
  if (!only.empty()) j["only"] = only;
  if (checkpoint_dir)
    j["checkpoint_dir"] = {{"path", checkpoint_dir->path}, {"source", checkpoint_dir->source}};
  if (rank) {
    j["rank"] = {{"rank", rank->rank},
                 {"world_size", rank->world_size},
                 {"local_rank", rank->local_rank},
                 {"launcher", rank->launcher}};
  }
  if (ranks) j["ranks"] = *ranks;
  if (partial) j["partial"] = true;
  if (engine) {
    j["engine"] = {{"name", engine->name},
                   {"python", engine->python},
                   {"torch", engine->torch},
                   {"versions", engine->versions},
                   {"python_verified", engine->python_verified}};
  }
  j["golden"] = golden ? trainlock::ToJson(*golden) : nlohmann::json(nullptr);
  if (!environment_error.empty()) j["environment_error"] = environment_error;
  ShareableStrings(j);
  return j;
}

std::optional<int64_t> CollectiveWorldSize(const nlohmann::json& report) {
  if (!report.is_object()) return std::nullopt;
  auto checks = report.find("checks");
  if (checks == report.end() || !checks->is_array()) return std::nullopt;
  std::optional<int64_t> world;
  for (const nlohmann::json& c : *checks) {
    // An untrusted document: any member may have any type.
    if (!c.is_object() || !c.contains("metrics") || !c.contains("id") || !c["id"].is_string())
      continue;
    const nlohmann::json& metrics = c["metrics"];
    const std::string& id = c["id"].get_ref<const std::string&>();
    Integer size;
    if (id == "comm.ddp") size = ReadMetrics<DdpMetrics>(metrics).world_size;
    if (id == "comm.allreduce") size = ReadMetrics<AllreduceMetrics>(metrics).world_size;
    if (size && (!world || *size > *world)) world = size;
  }
  return world;
}

bool IsPartialReport(const nlohmann::json& report) {
  if (!report.is_object()) return false;
  auto partial = report.find("partial");
  if (partial != report.end() && partial->is_boolean() && partial->get<bool>()) return true;
  auto ranks = report.find("ranks");
  const bool merged = ranks != report.end() && ranks->is_array();
  // A rank's report that drops `rank` and `partial` still says its world in its collectives.
  const std::optional<int64_t> collective = CollectiveWorldSize(report);
  if (collective && *collective > 1 && !merged) return true;
  auto rank = report.find("rank");
  if (rank == report.end() || !rank->is_object()) return false;
  std::optional<double> world = FiniteNumber(*rank, "world_size");
  return world && *world > 1 && !merged;
}

namespace {

class SchemaChecker {
 public:
  std::vector<std::string> problems;

  void Check(const nlohmann::json& r) {
    if (!r.is_object()) return Problem("$", "must be an object");
    if (StringMember(r, "schema") != kReportSchema) {
      Problem("schema", std::string("must be \"") + kReportSchema + "\"");
    }
    Enum(r, "verdict", "$", {"pass", "fail", "error"});
    EnvironmentError(r);
    if (r.contains("negative_control") && StringMember(r, "verdict") == "pass")
      Problem("verdict", "a negative control never passes");
    if (auto* sha = Field(r, "lock_sha256", "$", nlohmann::json::value_t::string)) {
      if (!IsSha256Hex(sha->get<std::string>()))
        Problem("lock_sha256", "must be 64 hex characters");
    }
    if (!r.contains("image")) {
      Problem("image", "missing (null when there is no image)");
    } else if (!r["image"].is_null()) {
      const auto& image = r["image"];
      Field(image, "ref", "image", nlohmann::json::value_t::string);
      if (auto* d = Field(image, "digest", "image", nlohmann::json::value_t::string)) {
        if (!IsDigest(d->get<std::string>())) Problem("image.digest", "must be sha256:<64 hex>");
      }
      if (image.is_object() && image.contains("digest_source"))
        Enum(image, "digest_source", "image", {"container-tool", "environment"});
    }
    if (auto* v = Field(r, "validator", "$", nlohmann::json::value_t::object)) {
      Field(*v, "version", "validator", nlohmann::json::value_t::string);
      Field(*v, "torch", "validator", nlohmann::json::value_t::string);
      Enum(*v, "build", "validator", {"cpu", "cuda", "rocm"});
    }
    // Optional for the readers of older reports (report, plan); the gate refuses its absence.
    if (r.contains("target")) Enum(r, "target", "$", {"cpu", "cuda", "rocm"});
    if (r.contains("target") && r.contains("validator") && r["validator"].is_object() &&
        StringMember(r, "target") != StringMember(r["validator"], "build"))
      Problem("target", "must be the validator's build (the target whose image carries it)");
    Field(r, "host", "$", nlohmann::json::value_t::object);
    if (auto* devices = Field(r, "devices", "$", nlohmann::json::value_t::array)) {
      for (size_t i = 0; i < devices->size(); ++i)
        Device((*devices)[i], "devices[" + std::to_string(i) + "]");
    }
    if (auto* t = Field(r, "started_at", "$", nlohmann::json::value_t::string)) {
      // The gate's own parser: a shape-only check passed "+25:00", which the gate could not
      // read and so never aged.
      if (!ParseRfc3339(t->get_ref<const std::string&>()))
        Problem("started_at", "must be RFC 3339");
    }
    Number(r, "duration_s", "$");
    if (auto* checks = Field(r, "checks", "$", nlohmann::json::value_t::array)) {
      std::set<std::string> seen;
      for (size_t i = 0; i < checks->size(); ++i) {
        Check((*checks)[i], "checks[" + std::to_string(i) + "]", seen);
      }
      // The validator writes every check, a skipped one as skip: a missing id was removed.
      for (std::string_view id : kCheckIds) {
        if (!seen.contains(std::string(id)))
          Problem("checks",
                  "missing check \"" + std::string(id) + "\" (a check that did not run is a skip)");
      }
    }
    RunFacts(r);
    if (r.contains("signature") && !r["signature"].is_object() && !r["signature"].is_string()) {
      Problem("signature", "must be an object or string when present");
    }
  }

 private:
  void Problem(const std::string& where, const std::string& what) {
    problems.push_back(where + ": " + what);
  }

  const nlohmann::json* Field(const nlohmann::json& o, const char* key, const std::string& where,
                              nlohmann::json::value_t type) {
    std::string path = where == "$" ? key : where + "." + key;
    if (!o.is_object() || !o.contains(key)) {
      Problem(path, "missing");
      return nullptr;
    }
    const nlohmann::json& v = o[key];
    bool ok = v.type() == type ||
              (type == nlohmann::json::value_t::number_float && v.is_number()) ||
              (type == nlohmann::json::value_t::number_unsigned && v.is_number_integer() &&
               v.get<int64_t>() >= 0);
    if (!ok) {
      Problem(path, std::string("must be ") + nlohmann::json(type).type_name());
      return nullptr;
    }
    return &v;
  }

  // Field for a member that may be absent.
  const nlohmann::json* Optional(const nlohmann::json& o, const char* key, const std::string& where,
                                 nlohmann::json::value_t type) {
    return o.contains(key) ? Field(o, key, where, type) : nullptr;
  }

  void Number(const nlohmann::json& o, const char* key, const std::string& where) {
    if (auto* v = Field(o, key, where, nlohmann::json::value_t::number_float)) {
      if (v->get<double>() < 0) Problem(where == "$" ? key : where + "." + key, "must be >= 0");
    }
  }

  void Enum(const nlohmann::json& o, const char* key, const std::string& where,
            std::initializer_list<const char*> allowed) {
    if (auto* v = Field(o, key, where, nlohmann::json::value_t::string)) {
      std::string s = v->get<std::string>();
      bool ok = std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return s == a; });
      if (!ok) Problem(where == "$" ? key : where + "." + key, "unexpected value \"" + s + "\"");
    }
  }

  void Device(const nlohmann::json& d, const std::string& where) {
    if (!d.is_object()) return Problem(where, "must be an object");
    Field(d, "index", where, nlohmann::json::value_t::number_unsigned);
    Field(d, "name", where, nlohmann::json::value_t::string);
    Field(d, "uuid", where, nlohmann::json::value_t::string);
    Field(d, "memory_bytes", where, nlohmann::json::value_t::number_unsigned);
    if (!d.contains("compute_capability") && !d.contains("gfx")) {
      Problem(where, "needs compute_capability or gfx");
    }
  }

  // verdict "error" if and only if an environment_error says why the node was not judged; the
  // engine's interpreter, when named, as an object of strings.
  void EnvironmentError(const nlohmann::json& r) {
    using Type = nlohmann::json::value_t;
    const bool error = StringMember(r, "verdict") == "error";
    const auto* why = Optional(r, "environment_error", "$", Type::string);
    if (error && (!why || why->get_ref<const std::string&>().empty()))
      Problem("environment_error", "a verdict \"error\" must say why the node was not judged");
    if (!error && r.is_object() && r.contains("environment_error"))
      Problem("verdict", "must be \"error\" when environment_error is set");
    if (auto* engine = Optional(r, "engine", "$", Type::object)) {
      for (const char* key : {"name", "python", "torch"})
        Field(*engine, key, "engine", Type::string);
      Optional(*engine, "versions", "engine", Type::object);
      Optional(*engine, "python_verified", "engine", Type::boolean);
    }
  }

  // How the validator ran (Report's project, work_dir, checkpoint_dir, only, rank and ranks): each
  // optional.
  void RunFacts(const nlohmann::json& r) {
    using Type = nlohmann::json::value_t;
    Optional(r, "project", "$", Type::string);
    for (const char* key : {"config_sha256", "manifest_sha256"}) {
      if (auto* sha = Optional(r, key, "$", Type::string);
          sha && !IsSha256Hex(sha->get<std::string>()))
        Problem(key, "must be 64 lower-case hex characters");
    }
    if (r.contains("negative_control"))
      Enum(r, "negative_control", "$", {"rng", "data", "corrupt", "torn-snapshot", "bitflip"});
    if (auto* drift = Optional(r, "drift", "$", Type::array)) {
      for (size_t i = 0; i < drift->size(); ++i) {
        const std::string where = "drift[" + std::to_string(i) + "]";
        if (!(*drift)[i].is_object()) {
          Problem(where, "must be an object");
          continue;
        }
        Field((*drift)[i], "id", where, Type::string);
        Field((*drift)[i], "message", where, Type::string);
      }
    }
    if (r.contains("work_dir") && !r["work_dir"].is_null()) Field(r, "work_dir", "$", Type::string);
    if (r.contains("golden")) {
      if (const std::string problem = GoldenSchemaProblem(r["golden"]); !problem.empty())
        Problem("golden", problem);
    }
    if (auto* dir = Optional(r, "checkpoint_dir", "$", Type::object)) {
      Field(*dir, "path", "checkpoint_dir", Type::string);
      Enum(*dir, "source", "checkpoint_dir", {"lock", "option", "work-dir"});
    }
    if (auto* only = Optional(r, "only", "$", Type::array)) {
      for (size_t i = 0; i < only->size(); ++i) {
        const nlohmann::json& id = (*only)[i];
        if (!id.is_string() || !IsCheckId(id.get<std::string>()))
          Problem("only[" + std::to_string(i) + "]", "must be a check id");
      }
    }
    if (auto* rank = Optional(r, "rank", "$", Type::object)) {
      for (const char* key : {"rank", "world_size", "local_rank"})
        Field(*rank, key, "rank", Type::number_unsigned);
      Field(*rank, "launcher", "rank", Type::string);
    }
    if (auto* partial = Optional(r, "partial", "$", Type::boolean);
        partial && partial->get<bool>() && r.contains("ranks"))
      Problem("partial", "the merged report (with ranks) is not partial");
    // A rank's entry is what that rank sent (rank_merge.h); the view reads it tolerantly.
    if (auto* ranks = Optional(r, "ranks", "$", Type::array)) {
      for (size_t i = 0; i < ranks->size(); ++i) {
        if (!(*ranks)[i].is_object())
          Problem("ranks[" + std::to_string(i) + "]", "must be an object");
      }
    }
  }

  void Check(const nlohmann::json& c, const std::string& where, std::set<std::string>& seen) {
    if (!c.is_object()) return Problem(where, "must be an object");
    if (auto* id = Field(c, "id", where, nlohmann::json::value_t::string)) {
      std::string s = id->get<std::string>();
      if (!IsCheckId(s)) Problem(where + ".id", "unknown check id \"" + s + "\"");
      if (!seen.insert(s).second) Problem(where + ".id", "duplicate check \"" + s + "\"");
    }
    Enum(c, "status", where, {"pass", "fail", "skip", "error"});
    Number(c, "duration_s", where);
    Field(c, "summary", where, nlohmann::json::value_t::string);
    Field(c, "remedy", where, nlohmann::json::value_t::string);
    Field(c, "metrics", where, nlohmann::json::value_t::object);
    if (StringMember(c, "status") != "pass" && StringMember(c, "summary").empty()) {
      Problem(where + ".summary", "a check that did not pass must say why");
    }
  }
};

}  // namespace

std::vector<std::string> ReportSchemaViolations(const nlohmann::json& report) {
  SchemaChecker checker;
  checker.Check(report);
  return checker.problems;
}

std::string ReportSchemaVersionProblem(const nlohmann::json& report) {
  static constexpr std::string_view kFamily = "trainlock.report/";
  const std::string schema = report.is_object() ? StringMember(report, "schema") : "";
  if (!schema.starts_with(kFamily) || schema == kReportSchema) return "";
  // Quoted from an untrusted file: shown clean and short.
  const std::string shown = CleanText(schema.size() > 64 ? schema.substr(0, 64) + "..." : schema);
  return "a " + shown + " report, which this trainlock does not read (it reads " + kReportSchema +
         "): validate the node again with this trainlock";
}

}  // namespace trainlock
