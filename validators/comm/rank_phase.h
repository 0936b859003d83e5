// The distributed part of a validation: what every rank needs to join comm.allreduce and
// comm.ddp, the checks a non-lead rank leaves to rank 0, and the exchange in which every rank
// sends rank 0 its results (comm/rank_merge.h merges them).
#pragma once

#include <chrono>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/rank_env.h"
#include "comm/collectives.h"
#include "comm/rank_store.h"
#include "probes/node_checks.h"
#include "report/report.h"
#include "support/validate_options.h"

namespace trainlock::validate {

// A rank beats this often while it works; rank 0 gives up on one silent for the stall.
inline constexpr std::chrono::milliseconds kHeartbeatInterval{2000};
inline constexpr std::chrono::seconds kHeartbeatStall{20};

// The options every rank needs to join comm.allreduce and comm.ddp, with the bus-bandwidth
// threshold of the node's GPU when every rank is on this node.
CommOptions CommOptionsFor(const RankEnv& rank, const ValidateOptions& o, const NodeProbe& node);

// comm.* of this rank, or skips saying a single process has no collective to test.
void AddCommChecks(Report& report, const std::optional<CommOutcome>& comm);

// A rank that is not its node's local rank 0 leaves the node's checks to that rank and the
// job's (ext.command) to rank 0; it runs only the per-rank ones.
void SkipForNonLeadRank(Report& report, int rank);

// A node's local rank 0 other than rank 0 leaves the job's checks (ext.command) to rank 0.
void SkipJobChecks(Report& report, int rank);

// The entries of a rank that cannot hear the others: its own, and every other rank missing
// for `why`.
nlohmann::json EntriesWithoutTheOthers(const RankEnv& rank, const nlohmann::json& own,
                                       const std::string& why);

// Every rank sends rank 0 its entry; rank 0 waits for all of them (while their heartbeats
// go on, and at most `wait`) and returns them in rank order. Without a store (the rendezvous
// failed), or when rank 0's store fails, the others are missing; other ranks get [].
nlohmann::json ExchangeRankEntries(RankStore* store, const RankEnv& rank, const nlohmann::json& own,
                                   std::chrono::seconds wait);

}  // namespace trainlock::validate
