// The ranks' shared rendezvous store; see rank_store.h.
#include "comm/rank_store.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <thread>

#include "comm/rank_store_native.h"

namespace trainlock::validate {
namespace {

using Clock = RankStore::Clock;

std::string Seconds(std::chrono::seconds s) {
  return std::to_string(s.count()) + "s";
}
std::string SignalKey(const std::string& what) {
  return "trainlock/" + what;
}

c10::intrusive_ptr<c10d::Store> Connect(const RankEnv& rank, std::chrono::seconds join_timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(rank.master_port);
  options.isServer = rank.rank == 0;
  options.waitWorkers = false;
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(join_timeout);
  try {
    return c10::make_intrusive<c10d::TCPStore>(rank.master_addr, options);
  } catch (const std::exception& e) {
    throw RankStoreError(rank.rank == 0 ? "rank 0 could not open the rendezvous on port " +
                                              std::to_string(rank.master_port) + ": " + e.what()
                                        : "rank 0's rendezvous at " + rank.master_addr + ":" +
                                              std::to_string(rank.master_port) +
                                              " did not answer within " + Seconds(join_timeout));
  }
}

}  // namespace

std::string RankStoreKey(const std::string& what, int rank) {
  return "trainlock/" + what + "/" + std::to_string(rank);
}

RankStore::RankStore(RankEnv rank, std::unique_ptr<Impl> impl)
    : rank_(std::move(rank)), impl_(std::move(impl)) {}

RankStore::~RankStore() {
  StopHeartbeat();
}

// Every rank announces itself; rank 0 waits for all and then says "go" (or why not).
std::unique_ptr<RankStore> RankStore::Join(const RankEnv& rank, const std::string& device,
                                           std::chrono::seconds join_timeout) {
  auto impl = std::make_unique<Impl>();
  impl->store = Connect(rank, join_timeout);
  std::unique_ptr<RankStore> self(new RankStore(rank, std::move(impl)));
  self->Publish("join", HostName() + " " + device);
  c10d::Store& store = *self->impl_->store;
  const std::string start = SignalKey("start");
  if (rank.rank == 0) {
    std::string missing = self->Missing("join", Clock::now() + join_timeout);
    std::string verdict =
        missing.empty() ? "go" : missing + " did not join within " + Seconds(join_timeout);
    store.set(start, StoreValue(verdict));
    if (!missing.empty()) throw RankStoreError(verdict);
    return self;
  }
  try {
    store.wait({start}, std::chrono::duration_cast<std::chrono::milliseconds>(join_timeout * 2));
  } catch (const std::exception&) {
    throw RankStoreError("rank 0 did not start the collectives within " +
                         Seconds(join_timeout * 2));
  }
  std::string verdict = StoreText(store.get(start));
  if (verdict != "go") throw RankStoreError(verdict);
  return self;
}

void RankStore::Publish(const std::string& what, const std::string& value) {
  const std::string key = RankStoreKey(what, rank_.rank);
  impl_->store->set(key, StoreValue(value));
  // The set is not answered; a query on the same connection is, and only after the server
  // handled the set. Without it a rank that exits right after publishing can lose the value:
  // the server may drop a connection that closed with the request still unread.
  impl_->store->check({key});
}

std::string RankStore::Missing(const std::string& what, Clock::time_point deadline) {
  std::vector<int> missing;
  do {
    missing.clear();
    for (int r = 0; r < rank_.world_size; ++r) {
      if (!impl_->store->check({RankStoreKey(what, r)})) missing.push_back(r);
    }
    if (missing.empty()) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (Clock::now() < deadline);
  std::string out = missing.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < missing.size(); ++i) out += (i ? ", " : "") + std::to_string(missing[i]);
  return out;
}

void RankStore::StartHeartbeat(std::chrono::milliseconds interval) {
  heartbeat_ = std::thread([this, interval] {
    const std::string key = RankStoreKey("beat", rank_.rank);
    std::unique_lock<std::mutex> lock(heartbeat_mutex_);
    while (!stopping_) {
      try {
        impl_->store->add(key, 1);
      } catch (const std::exception&) {
        return;  // rank 0's store is gone: nobody is listening
      }
      heartbeat_stop_.wait_for(lock, interval, [this] { return stopping_; });
    }
  });
}

void RankStore::StopHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(heartbeat_mutex_);
    stopping_ = true;
  }
  heartbeat_stop_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
}

std::vector<RankStore::RankValue> RankStore::Collect(const std::string& what,
                                                     std::chrono::seconds stall,
                                                     Clock::time_point deadline) {
  const int world = rank_.world_size;
  std::vector<RankValue> values(static_cast<size_t>(world));
  std::vector<int64_t> beats(static_cast<size_t>(world), -1);
  std::vector<Clock::time_point> last_beat(static_cast<size_t>(world), Clock::now());
  std::vector<bool> open(static_cast<size_t>(world), true);
  for (int pending = world; pending > 0;) {
    pending = 0;
    const auto now = Clock::now();
    for (int r = 0; r < world; ++r) {
      const auto i = static_cast<size_t>(r);
      if (!open[i]) continue;
      const std::string key = RankStoreKey(what, r);
      if (impl_->store->check({key})) {
        values[i].value = StoreText(impl_->store->get(key));
        open[i] = false;
        continue;
      }
      const int64_t beat = impl_->store->add(RankStoreKey("beat", r), 0);
      if (beat != beats[i]) {
        beats[i] = beat;
        last_beat[i] = now;
      }
      if (now - last_beat[i] > stall) {
        values[i].why_missing =
            "no heartbeat for " + Seconds(stall) + ": the process died or hangs";
        open[i] = false;
      } else if (now > deadline) {
        values[i].why_missing = "sent no result in time";
        open[i] = false;
      } else {
        ++pending;
      }
    }
    if (pending > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return values;
}

void RankStore::Signal(const std::string& what) {
  impl_->store->set(SignalKey(what), StoreValue("1"));
}

bool RankStore::WaitForSignal(const std::string& what, std::chrono::seconds timeout) {
  try {
    impl_->store->wait({SignalKey(what)},
                       std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace trainlock::validate
