// Check selection and order; see check_selection.h.
#include "support/check_selection.h"

#include <algorithm>

#include "project/check_ids.h"

namespace trainlock::validate {

CheckResult Skip(const std::string& id, std::string why, std::string remedy) {
  return {id, CheckStatus::kSkip, 0, std::move(why), std::move(remedy), nlohmann::json::object()};
}

bool Selected(const std::vector<std::string>& only, std::initializer_list<std::string_view> ids) {
  if (only.empty()) return true;
  for (std::string_view id : ids) {
    if (std::find(only.begin(), only.end(), id) != only.end()) return true;
  }
  return false;
}

CheckResult RunSelected(const std::vector<std::string>& only, const std::string& id,
                        const std::function<CheckResult()>& check) {
  if (!Selected(only, {id})) return Skip(id, "not selected (--only)");
  return check();
}

void ApplyOnly(Report& report, const std::vector<std::string>& only) {
  if (only.empty()) return;
  auto selected = [&](const std::string& id) {
    return std::find(only.begin(), only.end(), id) != only.end();
  };
  std::vector<std::string> required;
  for (const std::string& id : report.required) {
    if (selected(id)) required.push_back(id);
  }
  report.required = required;
}

namespace {

size_t CheckOrder(const std::string& id) {
  for (size_t i = 0; i < kCheckIds.size(); ++i) {
    if (kCheckIds[i] == id) return i;
  }
  return kCheckIds.size();
}

}  // namespace

void SortChecks(Report& report) {
  std::stable_sort(report.checks.begin(), report.checks.end(),
                   [](const CheckResult& x, const CheckResult& y) {
                     return CheckOrder(x.id) < CheckOrder(y.id);
                   });
}

}  // namespace trainlock::validate
