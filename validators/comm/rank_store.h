// The rendezvous every rank of a distributed validation shares: a c10d TCPStore that rank 0
// opens and the others connect to. Beyond the process groups' own rendezvous it carries the
// validator's coordination: who joined, rank 0's "go" and "devices measured" signals, and
// each rank's results for the merged report. Every wait is bounded and names the ranks that
// did not arrive. The header stays free of LibTorch; rank_store_native.h has the c10d store.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/rank_env.h"

namespace trainlock::validate {

// A rendezvous that did not complete, with the sentence the comm checks report.
struct RankStoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class RankStore {
 public:
  using Clock = std::chrono::steady_clock;

  // Opens (rank 0) or connects to the store and waits until every rank has announced itself
  // with `device`. Throws RankStoreError: "rank 2 did not join within 60s", "rank 0's
  // rendezvous at host:port did not answer within 60s".
  static std::unique_ptr<RankStore> Join(const RankEnv& rank, const std::string& device,
                                         std::chrono::seconds join_timeout);
  ~RankStore();
  RankStore(const RankStore&) = delete;
  RankStore& operator=(const RankStore&) = delete;

  const RankEnv& rank() const { return rank_; }

  // This rank's value of `what` (key "trainlock/<what>/<rank>").
  void Publish(const std::string& what, const std::string& value);
  // The ranks that have not published `what` by `deadline`: "rank 2" / "ranks 2, 3"; "" when
  // every rank did.
  std::string Missing(const std::string& what, Clock::time_point deadline);
  // While a rank works (the round trip takes minutes) it beats every `interval`, so that
  // rank 0 can tell a slow rank from a dead one. Stops on StopHeartbeat, destruction, or when
  // rank 0's store is gone.
  void StartHeartbeat(std::chrono::milliseconds interval);
  void StopHeartbeat();

  // Every rank's value of `what`, in rank order. Waits for a rank as long as its heartbeat
  // advances within `stall`, and never past `deadline`; a rank that did not publish has no
  // value and a reason ("no heartbeat for 20s: the process died or hangs").
  struct RankValue {
    std::optional<std::string> value;
    std::string why_missing;
  };
  std::vector<RankValue> Collect(const std::string& what, std::chrono::seconds stall,
                                 Clock::time_point deadline);

  // Rank 0 tells every rank that `what` happened; the others wait for it up to `timeout`
  // (false when it did not come, or rank 0's store is gone).
  void Signal(const std::string& what);
  bool WaitForSignal(const std::string& what, std::chrono::seconds timeout);

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  RankStore(RankEnv rank, std::unique_ptr<Impl> impl);
  RankEnv rank_;
  std::unique_ptr<Impl> impl_;
  std::thread heartbeat_;
  std::mutex heartbeat_mutex_;
  std::condition_variable heartbeat_stop_;
  bool stopping_ = false;
};

// "trainlock/<what>/<rank>": the key of a rank's value in the store.
std::string RankStoreKey(const std::string& what, int rank);

}  // namespace trainlock::validate
