// A round's golden digests compared (fleet.h, CompareRoundGolden): the reports of the round
// grouped by their golden key, each group judged by the one rule of report/golden_compare.h.
// A node alone under its key is a group of one, compared with no other key. A key the lock pins
// (`summarize --lock`) is judged against the pin by the gate's rule (report/golden_pin.h), and
// with the lock's pins a passing report without a golden digest fails as at the gate.
#include <algorithm>
#include <map>

#include "fleet/fleet.h"

namespace trainlock {
namespace {

// One witness per node (copies of one node's report count once), in node order.
std::map<std::string, std::vector<const NodeSummary*>> RowsByKey(const FleetSummary& summary) {
  std::map<std::string, std::vector<const NodeSummary*>> by_key;
  for (const NodeSummary& row : summary.nodes) {
    if (!row.golden) continue;
    std::vector<const NodeSummary*>& rows = by_key[GoldenKeyId(row.golden->key)];
    const bool seen = std::any_of(rows.begin(), rows.end(),
                                  [&row](const NodeSummary* r) { return r->node == row.node; });
    if (!seen) rows.push_back(&row);
  }
  return by_key;
}

GoldenGroup JudgeGroup(const std::string& key_id, const std::vector<const NodeSummary*>& rows,
                       const Lockfile* lock) {
  GoldenGroup group;
  group.key_sha256 = key_id;
  group.key = rows.front()->golden->key;
  std::vector<GoldenWitness> witnesses;
  for (const NodeSummary* row : rows) {
    group.nodes.push_back(row->node);
    witnesses.push_back({row->node, row->golden->digest});
  }
  if (lock) {
    if (std::optional<GoldenVerdict> pinned = CompareWithLockPin(*lock, group.key, witnesses)) {
      group.pinned = true;
      group.verdict = std::move(*pinned);
      group.digest = group.verdict.reference;
      return group;
    }
  }
  group.verdict = CompareGolden(witnesses);
  group.digest =
      group.verdict.differing.empty() ? witnesses.front().digest : group.verdict.reference;
  return group;
}

// With the lock's pins, a passing report that carries no golden digest fails its node by the
// gate's rule (golden_pin.h): the round cannot say that node computes what the lock pins.
void FailPassesWithoutGolden(FleetSummary& summary, const Lockfile& lock) {
  for (NodeSummary& row : summary.nodes) {
    if (row.status != "pass") continue;
    if (std::optional<std::string> missing = MissingGoldenRefusal(lock, row.golden.has_value())) {
      row.golden_problem = *missing;
      row.golden_against_pin = true;
      row.status = "fail";
    }
  }
}

}  // namespace

void CompareRoundGolden(FleetSummary& summary, const Lockfile* lock) {
  summary.golden_groups.clear();
  for (const auto& [key_id, rows] : RowsByKey(summary))
    summary.golden_groups.push_back(JudgeGroup(key_id, rows, lock));
  for (const GoldenGroup& group : summary.golden_groups) {
    for (const std::string& node : group.verdict.differing) {
      for (NodeSummary& row : summary.nodes) {
        if (row.node != node) continue;
        row.golden_problem = group.verdict.reason;
        row.golden_against_pin = group.pinned;
        if (row.status == "pass") row.status = "fail";
      }
    }
  }
  if (lock) FailPassesWithoutGolden(summary, *lock);
}

}  // namespace trainlock
