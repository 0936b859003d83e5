// Which checks a validation runs and in what order: `--only`, the skip that stands in for a
// check that is not run, and the report order of docs/DESIGN.md's check ids.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"

namespace trainlock::validate {

// A check that did not run, with the reason (and what to do about it, if anything).
CheckResult Skip(const std::string& id, std::string why, std::string remedy = {});

// False when `only` names checks and none of `ids` is among them: that work is not run.
bool Selected(const std::vector<std::string>& only, std::initializer_list<std::string_view> ids);

// --only: the checks not selected are skipped, and only selected ones stay required.
void ApplyOnly(Report& report, const std::vector<std::string>& only);

// The report's checks in the order of kCheckIds (stable for equal ids).
void SortChecks(Report& report);

}  // namespace trainlock::validate
