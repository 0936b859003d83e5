// The distributed phase of a validation; see rank_phase.h.
#include "comm/rank_phase.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "base/json_file.h"
#include "comm/rank_merge.h"
#include "compat/catalog.h"
#include "project/check_ids.h"
#include "support/check_selection.h"

namespace trainlock::validate {

CommOptions CommOptionsFor(const RankEnv& rank, const ValidateOptions& o, const NodeProbe& node) {
  CommOptions c;
  c.rank = rank;
  c.device = CommDevice(o.device, rank.local_rank);
  c.join_timeout = std::chrono::seconds(o.join_timeout_s);
  c.collective_timeout = std::chrono::seconds(o.collective_timeout_s);
  const bool cuda = c.device != "cpu";
  c.max_bytes = (o.comm_max_mib > 0 ? o.comm_max_mib : (cuda ? 1024 : 16)) * (int64_t{1} << 20);
  if (const char* fault = std::getenv("TRAINLOCK_FAULT_KILL_RANK"); fault && *fault)
    c.fault_kill_rank = std::atoi(fault);
  if (const char* fault = std::getenv("TRAINLOCK_FAULT_CORRUPT_RANK"); fault && *fault)
    c.fault_corrupt_rank = std::atoi(fault);
  // Thresholds describe one node's interconnect: only when every rank is on this node.
  const char* local_world = std::getenv("LOCAL_WORLD_SIZE");
  const bool one_node =
      rank.launcher == "standalone" || (local_world && std::atoi(local_world) == rank.world_size);
  if (!cuda || node.gpus.empty()) return c;
  const Catalog catalog = Catalog::Embedded();
  const auto& gpu = node.gpus[static_cast<size_t>(rank.local_rank) % node.gpus.size()];
  const GpuModel* model = catalog.FindGpu(gpu.name);
  if (!model) return c;
  c.accelerator = model->name;
  if (one_node) {
    c.busbw_threshold_gbps = AllReduceBusbwThreshold(*model, rank.world_size);
    c.threshold_source = "lockfiles/compat/gpus.toml interconnect-gbps " +
                         std::to_string(static_cast<int>(model->interconnect_gbps)) + " GB/s x " +
                         (rank.world_size == 8 ? "0.8" : "0.5");
  }
  return c;
}

void AddCommChecks(Report& report, const std::optional<CommOutcome>& comm) {
  if (comm) {
    for (const CheckResult& c : comm->checks) report.checks.push_back(c);
    return;
  }
  for (const char* id : {"comm.allreduce", "comm.ddp"}) {
    report.checks.push_back(Skip(id, "single process: no collective to test",
                                 "run with --nproc N, under torchrun or under srun"));
  }
}

void SkipForNonLeadRank(Report& report, int rank) {
  const std::string why = "run by the node's local rank 0 (ext.command: by rank 0); rank " +
                          std::to_string(rank) +
                          " joins the collectives and trains on its own device";
  const auto& own = PerRankCheckIds();
  for (std::string_view id : kCheckIds) {
    if (std::find(own.begin(), own.end(), id) == own.end())
      report.checks.push_back(Skip(std::string(id), why));
  }
}

void SkipJobChecks(Report& report, int rank) {
  report.checks.push_back(Skip("ext.command", "run by rank 0 for the job; rank " +
                                                  std::to_string(rank) + " is its node's lead"));
}

namespace {

// The entries rank 0 collected, in rank order; a rank that sent nothing readable is missing.
nlohmann::json EntriesOf(const std::vector<RankStore::RankValue>& values, int world_size) {
  nlohmann::json entries = nlohmann::json::array();
  for (int r = 0; r < world_size; ++r) {
    const auto& value = values[static_cast<size_t>(r)];
    nlohmann::json entry = value.value
                               ? TryParseJsonText(*value.value, nullptr).value_or(nlohmann::json())
                               : nlohmann::json();
    if (!entry.is_object())
      entry = MissingRankEntry(r, value.value ? "sent an unreadable result" : value.why_missing);
    entries.push_back(entry);
  }
  return entries;
}

}  // namespace

nlohmann::json EntriesWithoutTheOthers(const RankEnv& rank, const nlohmann::json& own,
                                       const std::string& why) {
  nlohmann::json entries = nlohmann::json::array();
  for (int r = 0; r < rank.world_size; ++r)
    entries.push_back(r == rank.rank ? own : MissingRankEntry(r, why));
  return entries;
}

nlohmann::json ExchangeRankEntries(RankStore* store, const RankEnv& rank, const nlohmann::json& own,
                                   std::chrono::seconds wait) {
  if (!store) return EntriesWithoutTheOthers(rank, own, "no rendezvous");
  try {
    store->Publish("result", own.dump());
    if (rank.rank != 0) {
      store->StopHeartbeat();
      return nlohmann::json::array();
    }
    return EntriesOf(store->Collect("result", kHeartbeatStall, RankStore::Clock::now() + wait),
                     rank.world_size);
  } catch (const std::exception& e) {
    // Rank 0 cannot hear the others: they are missing, and the merged report fails for them.
    // Another rank's own report stands (rank 0 writes the merged one).
    return EntriesWithoutTheOthers(rank, own, std::string("the rank store failed: ") + e.what());
  }
}

}  // namespace trainlock::validate
