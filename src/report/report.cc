// Report building and schema checking; see report.h.
#include "report/report.h"

#include <algorithm>
#include <ctime>
#include <regex>
#include <set>

#include "base/refs.h"
#include "base/sha256.h"
#include "project/check_ids.h"

namespace trainlock {

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

std::string StringMember(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string Report::Verdict() const {
  for (const CheckResult& c : checks) {
    if (c.status == CheckStatus::kFail || c.status == CheckStatus::kError) return "fail";
  }
  for (const std::string& id : required) {
    auto it = std::find_if(checks.begin(), checks.end(),
                           [&](const CheckResult& c) { return c.id == id; });
    if (it == checks.end() || it->status != CheckStatus::kPass) return "fail";
  }
  return "pass";
}

nlohmann::json Report::ToJson() const {
  nlohmann::json j;
  j["schema"] = kReportSchema;
  j["verdict"] = Verdict();
  j["lock_sha256"] = lock_sha256;
  j["image"] = image ? nlohmann::json{{"ref", image->first}, {"digest", image->second}}
                     : nlohmann::json(nullptr);
  if (image && !image_digest_source.empty()) j["image"]["digest_source"] = image_digest_source;
  j["validator"] = {{"version", validator_version}, {"torch", torch_version}, {"build", build}};
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
  return j;
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
    Enum(r, "verdict", "$", {"pass", "fail"});
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
        Enum(image, "digest_source", "image", {"engine", "job"});
    }
    if (auto* v = Field(r, "validator", "$", nlohmann::json::value_t::object)) {
      Field(*v, "version", "validator", nlohmann::json::value_t::string);
      Field(*v, "torch", "validator", nlohmann::json::value_t::string);
      Enum(*v, "build", "validator", {"cpu", "cuda", "rocm"});
    }
    Field(r, "host", "$", nlohmann::json::value_t::object);
    if (auto* devices = Field(r, "devices", "$", nlohmann::json::value_t::array)) {
      for (size_t i = 0; i < devices->size(); ++i)
        Device((*devices)[i], "devices[" + std::to_string(i) + "]");
    }
    if (auto* t = Field(r, "started_at", "$", nlohmann::json::value_t::string)) {
      static const std::regex kRfc3339(
          R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$)");
      // std::regex recurses per character: bound the length before matching.
      const std::string& text = t->get_ref<const std::string&>();
      if (text.size() > 64 || !std::regex_match(text, kRfc3339))
        Problem("started_at", "must be RFC 3339");
    }
    Number(r, "duration_s", "$");
    if (auto* checks = Field(r, "checks", "$", nlohmann::json::value_t::array)) {
      std::set<std::string> seen;
      for (size_t i = 0; i < checks->size(); ++i) {
        Check((*checks)[i], "checks[" + std::to_string(i) + "]", seen);
      }
    }
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

std::string NowRfc3339() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

}  // namespace trainlock
