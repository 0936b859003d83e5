// "Did you mean ...?" suggestions for misspelt keys and names.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace trainlock {

// Levenshtein distance between two strings (case-sensitive).
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word`, or "" when none is close enough to be a plausible typo
// (distance at most a third of the word's length, and at least 1 allowed).
std::string ClosestMatch(std::string_view word, std::span<const std::string_view> candidates);

// "did you mean 'x'?" or "" when there is no close candidate.
std::string DidYouMean(std::string_view word, std::span<const std::string_view> candidates);

}  // namespace trainlock
