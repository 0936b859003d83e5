// Edit-distance suggestions; see suggest.h.
#include "base/suggest.h"

#include <algorithm>
#include <vector>

namespace trainlock {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string ClosestMatch(std::string_view word, std::span<const std::string_view> candidates) {
  // Very long words (binary garbage, 10 MB keys) are never typos; skip the quadratic work.
  if (word.size() > 256) return {};
  size_t limit = std::max<size_t>(1, word.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (std::string_view c : candidates) {
    size_t d = EditDistance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(c);
    }
  }
  return best;
}

std::string DidYouMean(std::string_view word, std::span<const std::string_view> candidates) {
  std::string match = ClosestMatch(word, candidates);
  return match.empty() ? std::string() : "did you mean '" + match + "'?";
}

}  // namespace trainlock
