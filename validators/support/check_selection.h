// Which checks a validation runs and in what order: `--only`, the skip that stands in for a
// check that is not run, and the report order of docs/DESIGN.md's check ids.
#pragma once

#include <functional>
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

// `check()` when `only` is empty or names `id`; otherwise the skip "not selected (--only)",
// and `check` is never called: a check outside --only does not run at all.
CheckResult RunSelected(const std::vector<std::string>& only, const std::string& id,
                        const std::function<CheckResult()>& check);

// --only: only selected checks stay required. It never changes a check's status: a check that
// ran keeps what it found (the phases never run an unselected one; RunSelected).
void ApplyOnly(Report& report, const std::vector<std::string>& only);

// The report's checks in the order of kCheckIds (stable for equal ids).
void SortChecks(Report& report);

}  // namespace trainlock::validate
