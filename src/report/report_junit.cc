// The JUnit XML rendering of a report, for CI systems that show test results (Jenkins, GitLab,
// GitHub test reporters): one <testsuite name="trainlock"> whose <testcase>s are the checks.
// fail -> <failure>, error -> <error>, skip -> <skipped>, each with the summary as its message
// and the remedy as its body. Valid against tests/junit/junit.xsd and the Jenkins xUnit
// plugin's junit-10.xsd (tests/report_browser_test.cc runs xmllint with both); every string is
// XML-escaped (and cleaned of the characters XML 1.0 cannot carry at all).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>

#include "report/report_render.h"

namespace trainlock {
namespace {

// Text content: the characters that would start markup escaped (quotes may stay as they are).
std::string XmlText(std::string_view text) {
  std::string out;
  for (char c : CleanText(text)) {
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// An attribute value: as text, plus tab, newline and carriage return as character references,
// which attribute-value normalization would otherwise turn into spaces.
std::string XmlAttr(std::string_view text) {
  std::string out;
  for (char c : EscapeMarkup(text)) {
    if (c == '\n') {
      out += "&#10;";
    } else if (c == '\r') {
      out += "&#13;";
    } else if (c == '\t') {
      out += "&#9;";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Seconds as an xs:decimal the schema accepts: three decimals, never negative or NaN.
std::string XmlSeconds(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", seconds);
  return buf;
}

// The report's started_at when it is a valid xs:dateTime (RFC 3339 as the report schema allows
// it, with a real date and time); "" otherwise, and the attribute is left out.
std::string XmlTimestamp(const std::string& started_at) {
  static const std::regex kDateTime(
      R"(^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-](\d{2}):(\d{2}))?$)");
  std::smatch m;
  // std::regex recurses per character: a huge value must not reach it.
  if (started_at.size() > 64 || !std::regex_match(started_at, m, kDateTime)) return "";
  auto at = [&](int i) { return m[i].matched ? std::stoi(m[i].str()) : 0; };
  int year = at(1), month = at(2), day = at(3);
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool valid = year >= 1 && month >= 1 && month <= 12 && day >= 1 &&
               day <= kDays[month - 1] + (month == 2 && leap ? 1 : 0) && at(4) <= 23 &&
               at(5) <= 59 && at(6) <= 59 && at(9) <= 14 && at(10) <= 59;
  return valid ? started_at : "";
}

std::string Property(const char* name, const std::string& value) {
  return std::string("      <property name=\"") + name + "\" value=\"" + XmlAttr(value) + "\"/>\n";
}

std::string Properties(const ReportView& v) {
  std::string out = "    <properties>\n";
  out += Property("project", v.project);
  out += Property("verdict", v.verdict);
  if (!v.environment_error.empty()) out += Property("environment_error", v.environment_error);
  if (!v.engine_python.empty()) {
    out += Property("engine_interpreter", v.engine_python);
    out += Property("engine_torch_version", v.engine_torch);
  }
  out += Property("lock_sha256", v.lock_sha256);
  out += Property("image_ref", v.image_ref.empty() ? "none" : v.image_ref);
  out += Property("image_digest", v.image_digest.empty() ? "none" : v.image_digest);
  out += Property("validator_version", v.validator_version);
  out += Property("torch", v.torch);
  out += Property("build", v.build);
  return out + "    </properties>\n";
}

// What a test case printed: the summary of a passing check (the others carry it as their
// outcome's message), and the check's metrics as pretty JSON.
std::string SystemOut(const CheckView& c) {
  std::string text = c.status == "pass" ? c.summary : "";
  if (!c.metrics.empty()) {
    text += (text.empty() ? "" : "\n\n") + std::string("metrics: ") +
            c.metrics.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return text.empty() ? "" : "      <system-out>" + XmlText(text) + "</system-out>\n";
}

std::string TestCase(const CheckView& c) {
  std::string classname = "trainlock." + (c.id.empty() ? std::string("unknown") : CheckGroup(c.id));
  std::string out = "    <testcase classname=\"" + XmlAttr(classname) + "\" name=\"" +
                    XmlAttr(c.id) + "\" time=\"" + XmlSeconds(c.duration_s) + "\">\n";
  std::string body = c.remedy.empty() ? "" : "remedy: " + c.remedy;
  auto outcome = [&](const char* element, bool with_type) {
    out += std::string("      <") + element + " message=\"" + XmlAttr(c.summary) + "\"" +
           (with_type ? std::string(" type=\"") + element + "\"" : "");
    out += body.empty() ? "/>\n" : ">" + XmlText(body) + "</" + element + ">\n";
  };
  if (c.status == "fail") {
    outcome("failure", true);
  } else if (c.status == "error") {
    outcome("error", true);
  } else if (c.status == "skip") {
    outcome("skipped", false);
  } else if (c.status != "pass") {
    // A status the schema does not know: not a pass, so CI must not count it as one.
    body = "unknown status '" + c.status + "'" + (body.empty() ? "" : "; " + body);
    outcome("error", true);
  }
  return out + SystemOut(c) + "    </testcase>\n";
}

}  // namespace

std::string RenderReportJunit(const nlohmann::json& report) {
  ReportView v = ViewOfReport(report);
  int failures = v.Count("fail"), skipped = v.Count("skip");
  // A node not judged (verdict "error") is one more test case, errored: CI must not read the
  // skipped checks as a quiet run.
  const bool not_judged = v.verdict == "error";
  int errors = static_cast<int>(v.checks.size()) - v.Count("pass") - failures - skipped +
               (not_judged ? 1 : 0);
  const size_t tests = v.checks.size() + (not_judged ? 1 : 0);
  std::string counts = " tests=\"" + std::to_string(tests) + "\" failures=\"" +
                       std::to_string(failures) + "\" errors=\"" + std::to_string(errors) + "\"";
  std::string time = " time=\"" + XmlSeconds(v.duration_s) + "\"";
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  // `skipped` only on <testsuite>: the Jenkins schema (junit-10.xsd, which pytest's output
  // also follows) has no such attribute on <testsuites>, and strict readers refuse it there.
  out += "<testsuites name=\"trainlock\"" + counts + time + ">\n";
  out += "  <testsuite name=\"trainlock\"" + counts + " skipped=\"" + std::to_string(skipped) +
         "\"" + time;
  if (std::string timestamp = XmlTimestamp(v.started_at); !timestamp.empty()) {
    out += " timestamp=\"" + timestamp + "\"";
  }
  if (!v.host.hostname.empty()) out += " hostname=\"" + XmlAttr(v.host.hostname) + "\"";
  out += ">\n" + Properties(v);
  if (not_judged) {
    out +=
        "    <testcase classname=\"trainlock.environment\" name=\"environment\" time=\"0\">\n"
        "      <error message=\"" +
        XmlAttr("not judged: " + (v.environment_error.empty() ? std::string("no reason given")
                                                              : v.environment_error)) +
        "\" type=\"error\"/>\n    </testcase>\n";
  }
  for (const CheckView& c : v.checks) out += TestCase(c);
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace trainlock
