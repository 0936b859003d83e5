// A fleet's round: the one validation run `trainlock fleet summarize --since T --node a,b` judges,
// and the one rule deciding which reports of a shared reports directory count in it.
//
// A reports directory outlives rounds: the node gates read it, revalidations add to it, and a
// node that wrote nothing this time still holds its old file there. So a report counts only when
// it started after the round did, by the start time the report itself states under its
// signature (a file's mtime is whatever a copy made it, and a report may be crafted), and only
// when a node the round names made it. A named node without such a report is missing, a failure
// of the round; every other report is shown as not in this round and never decides the exit
// code (docs/fleet.md, "Rounds").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainlock {

struct FleetRound {
  std::optional<int64_t> since_s;  // the round's start, seconds since the epoch; nullopt: any age
  std::string since;               // the same as the user gave it (RFC 3339)
  std::vector<std::string> nodes;  // the nodes the round names; empty: any node counts
  int expected_nodes = 0;          // how many nodes must report; 0: as many as `nodes` names
  // The Ed25519 public key (PEM) every counted report must be signed with; nullopt: none given.
  std::optional<std::string> public_key_pem;
  // An unsigned report's start time is taken at its word (`--allow-unsigned`, as `gate` has it).
  bool allow_unsigned = false;

  bool Names(const std::string& node) const;
  // The nodes that must report: expected_nodes, and never fewer than the round names.
  int Expected() const;
};

// Why the start time a report states cannot be trusted under `round`, "" when it can: without a
// start to judge by and without a key, every report is trusted as before rounds existed; with a
// key a report must verify under it (an unsigned one only with allow_unsigned); with a start but
// no key, only allow_unsigned trusts it. `report_text` is the file's bytes, `is_signed` whether
// it carries a signature. Throws KeyError when the round's key is not an Ed25519 public key.
std::string UntrustedStartReason(const FleetRound& round, const std::string& report_text,
                                 bool is_signed);

// Why a report does not count in `round`, "" when it does: made by a node the round does not
// name, its start time not trusted (`untrusted`, from UntrustedStartReason), or started before
// the round (or at a time that is not RFC 3339).
std::string NotInRound(const FleetRound& round, const std::string& node,
                       const std::string& started_at, const std::string& untrusted);

}  // namespace trainlock
