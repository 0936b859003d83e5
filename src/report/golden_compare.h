// The one rule for golden digests under one key (golden_digest.h): which of them computed
// differently. `trainlock fleet summarize` applies it to a round's reports, `trainlock gate` to a
// report against the digest the lock pins for its key (`trainlock lock --golden`).
//
// Under one key every digest must be the same to the bit. With a pinned digest, each witness
// that differs from it is named. Without one: two witnesses that differ are both named (which
// of the two computes wrongly cannot be told); three or more are held to the digest more than
// half of them share, and every other is named (all, when no digest has such a majority). A
// witness alone under its key is never compared with another key's.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace trainlock {

struct GoldenWitness {
  std::string name;    // the node, or the report's file
  std::string digest;  // GoldenDigest::digest
};

struct GoldenVerdict {
  std::vector<std::string> differing;  // the witnesses named, in the order given
  std::string reference;  // the digest they differ from: the pin, the majority's; "" otherwise
  // One sentence for a person when any differ, naming them and what they differ from, and that
  // this is a node computing differently (suspected silent data corruption), not a slow or
  // unhealthy one; "" when none differ or there was nothing to compare.
  std::string reason;
};

// Compares the digests of witnesses under one key; `pinned` is the lock's digest for that key.
GoldenVerdict CompareGolden(const std::vector<GoldenWitness>& witnesses,
                            const std::optional<std::string>& pinned = std::nullopt);

}  // namespace trainlock
