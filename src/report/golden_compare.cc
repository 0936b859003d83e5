// Which golden digests under one key computed differently (golden_compare.h).
#include "report/golden_compare.h"

#include <algorithm>
#include <map>

#include "base/text_format.h"

namespace trainlock {
namespace {

constexpr const char* kNotSlow =
    ": it computes differently, suspected silent data corruption (not a slow or unhealthy "
    "node): take it out of service and run `dcgmi diag -r 3` on its GPUs";

std::string Names(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return text;
}

GoldenVerdict AgainstPin(const std::vector<GoldenWitness>& witnesses, const std::string& pinned) {
  GoldenVerdict verdict;
  verdict.reference = pinned;
  std::string computed;
  for (const GoldenWitness& w : witnesses) {
    if (w.digest == pinned) continue;
    verdict.differing.push_back(w.name);
    if (computed.empty()) computed = w.digest;
  }
  if (!verdict.differing.empty())
    verdict.reason = Names(verdict.differing) + " computed golden digest " + ShortSha(computed) +
                     ", not the " + ShortSha(pinned) + " the lock pins for its key" + kNotSlow;
  return verdict;
}

// The digest more than half of the witnesses share; "" when none does.
std::string Majority(const std::vector<GoldenWitness>& witnesses) {
  std::map<std::string, size_t> counts;
  for (const GoldenWitness& w : witnesses) ++counts[w.digest];
  for (const auto& [digest, count] : counts)
    if (count * 2 > witnesses.size()) return digest;
  return "";
}

GoldenVerdict AmongThemselves(const std::vector<GoldenWitness>& witnesses) {
  GoldenVerdict verdict;
  const bool all_agree = std::all_of(witnesses.begin(), witnesses.end(), [&](const auto& w) {
    return w.digest == witnesses.front().digest;
  });
  if (witnesses.size() < 2 || all_agree) return verdict;
  if (witnesses.size() == 2) {
    verdict.differing = {witnesses[0].name, witnesses[1].name};
    verdict.reason = "these two disagree: " + Names(verdict.differing) +
                     " computed different golden digests under one key (" +
                     ShortSha(witnesses[0].digest) + ", " + ShortSha(witnesses[1].digest) +
                     "); a third node of the key, or the lock's pin, says which" + kNotSlow;
    return verdict;
  }
  verdict.reference = Majority(witnesses);
  for (const GoldenWitness& w : witnesses)
    if (w.digest != verdict.reference) verdict.differing.push_back(w.name);
  verdict.reason =
      verdict.reference.empty()
          ? "no golden digest is shared by most of the " + std::to_string(witnesses.size()) +
                " nodes under one key: " + Names(verdict.differing) + " all differ" + kNotSlow
          : Names(verdict.differing) + " computed a golden digest other than the " +
                ShortSha(verdict.reference) + " of the other " +
                std::to_string(witnesses.size() - verdict.differing.size()) +
                " nodes under its key" + kNotSlow;
  return verdict;
}

}  // namespace

GoldenVerdict CompareGolden(const std::vector<GoldenWitness>& witnesses,
                            const std::optional<std::string>& pinned) {
  if (pinned) return AgainstPin(witnesses, *pinned);
  return AmongThemselves(witnesses);
}

}  // namespace trainlock
