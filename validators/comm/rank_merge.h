// The merged report of a distributed validation. Every rank runs the collectives and its own
// train -> checkpoint -> kill -> restore -> resume round trip on its own GPU; it sends rank 0
// an entry with those results, and rank 0 folds the entries into its report: a check fails
// when any rank's did (naming the rank), a rank that sent nothing fails the training checks,
// a GPU that trains more slowly than its peers is named, and GPUs of one model that compute
// different bits from identical inputs fail train.roundtrip. Torch-free and pure: the tests
// give it entries directly.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "base/rank_env.h"
#include "report/report.h"

namespace trainlock::validate {

// The checks every rank runs itself, in report order.
const std::vector<std::string>& PerRankCheckIds();

// The checks of a node (its driver, devices, data, custom ops, throughput), which each node's
// local rank 0 runs for its node: every node of the job is measured, not only rank 0's.
const std::vector<std::string>& NodeCheckIds();

// This rank's entry: rank, local_rank, node_rank, host, device, the status and summary of each
// of its per-rank checks (and, from a node's local rank 0, of its node checks with the node's
// `devices`), and the training numbers the merge compares.
nlohmann::json RankEntry(const RankEnv& rank, const std::string& host, const std::string& device,
                         const std::vector<CheckResult>& checks,
                         const nlohmann::json& devices = nlohmann::json::array());

// The entry of a rank that sent nothing (or something unreadable).
nlohmann::json MissingRankEntry(int rank, const std::string& why);

struct MergeOptions {
  bool gpu = false;                // timing spread fails only on GPUs: CPU ranks share cores
  double straggler_margin = 0.20;  // slower than the median by more than this: a straggler
};

// Folds `entries` (one per rank, in rank order, rank 0's own included) into rank 0's report.
void MergeRankResults(Report& report, const nlohmann::json& entries, const MergeOptions& options);

}  // namespace trainlock::validate
