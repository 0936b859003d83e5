// Deciding what each NVIDIA event means for the node, from the event table
// (compat/gpu_events.h): a verdict per event and device, with storms folded. A revocation is made
// once per device and code (it lasts until a new signed pass, which nothing in the kernel log
// can give: a GPU that "recovers" stays revoked); a re-validation request or an information
// line once per device and code within the table's window of kernel time, the rest counted.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "compat/gpu_events.h"
#include "watch/nvidia_event.h"

namespace trainlock {

struct Decision {
  EventClass event_class = EventClass::kInfo;
  NvidiaEvent event;
  std::string name;  // the table's name, or why the default applied
  bool listed = false;
  std::optional<int64_t> time_us;
  uint64_t line = 0;
};

class EventJudge {
 public:
  explicit EventJudge(const GpuEventTable& table) : table_(table) {}

  // The decision for `event`, seen at kernel time `time_us` (when known) on `line`; nullopt when
  // it repeats a decision already made (counted in suppressed()).
  std::optional<Decision> Judge(const NvidiaEvent& event, std::optional<int64_t> time_us,
                                uint64_t line);
  uint64_t suppressed() const { return suppressed_; }

 private:
  using Key = std::tuple<bool, std::string, int64_t>;  // sxid, device, code
  const GpuEventTable& table_;
  std::set<Key> revoked_;
  std::map<Key, int64_t> last_request_us_;
  // Without a time of its own an event takes the last one seen: a storm of untimed lines
  // folds into one request. Kernel time that goes back is a new boot: windows start over.
  int64_t clock_us_ = 0;
  uint64_t suppressed_ = 0;
};

}  // namespace trainlock
