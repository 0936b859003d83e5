// Whether each passing check's own metrics support its pass. A report can be edited, and a
// validator can have a bug: a train.roundtrip "pass" whose metrics say the resumed state
// differed, or a perf.* "pass" below its own threshold, is a contradiction the gate refuses in
// every mode (signed or not).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/report_view.h"

namespace trainlock {

// One line per contradiction, "<check id>: pass, but <what its metrics say>"; empty when every
// passing check's metrics support it. Checks that did not pass are not judged.
std::vector<std::string> EvidenceContradictions(const ReportView& report);

// Whether check `id` has an evidence rule; every id of check_ids.h has one.
bool HasEvidenceRule(std::string_view id);

}  // namespace trainlock
