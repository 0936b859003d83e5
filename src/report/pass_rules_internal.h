// What the pass rules' files share (pass_rules.h is the interface): the rule's signature, the
// finding helpers and the rules of each group of checks, declared here so that pass_rules.cc's
// table names each once.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "report/check_metrics.h"
#include "report/pass_rules.h"

namespace trainlock::pass_rules {

using Json = nlohmann::json;
using Findings = std::vector<RuleFinding>;

// A metric's key, from its member of the metrics struct: the compiler checks that the member
// exists, and the key stays spelled once, in check_metrics.h.
#define TRAINLOCK_METRIC_KEY(Struct, member) (static_cast<void>(&Struct::member), #member)

// Appends a finding about `metric`.
inline void Add(Findings& out, std::string metric, std::string why, std::string remedy = {}) {
  out.push_back({std::move(metric), std::move(why), std::move(remedy)});
}

inline bool IsTrue(const Flag& flag) {
  return flag.value_or(false);
}
inline bool Said(const Text& text) {
  return text && !text->empty();
}
// A list member that is present and not an empty array (an ill-typed one counts as a list).
inline bool Lists(const Free& list) {
  return list && (!list->is_array() || !list->empty());
}
// A number as a report prints it ("0.5", "1e-07").
std::string NumberText(double value);

// The rules, one per check id (env.*: pass_rules_env.cc; train.* and ckpt.*:
// pass_rules_train.cc; the others: pass_rules_other.cc).
Findings Driver(const Json& m, const RuleContext&);
Findings Runtime(const Json& m, const RuleContext&);
Findings Versions(const Json& m, const RuleContext&);
Findings Devices(const Json& m, const RuleContext&);
Findings Arch(const Json& m, const RuleContext&);
Findings Health(const Json& m, const RuleContext&);
Findings Packages(const Json& m, const RuleContext&);
Findings Data(const Json& m, const RuleContext&);
Findings Ops(const Json& m, const RuleContext&);
Findings Step(const Json& m, const RuleContext&);
Findings Roundtrip(const Json& m, const RuleContext&);
Findings Eval(const Json& m, const RuleContext&);
Findings Portable(const Json& m, const RuleContext&);
Findings Allreduce(const Json& m, const RuleContext&);
Findings Ddp(const Json& m, const RuleContext&);
Findings Perf(const Json& m, const RuleContext&);
Findings Command(const Json& m, const RuleContext&);

// A merged report's node check: every node that judged it must have passed it (metrics.nodes,
// rank_merge.h); read by every rule's dispatcher.
void MergedNodes(const Json& m, Findings& out);

}  // namespace trainlock::pass_rules
