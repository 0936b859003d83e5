// Deciding per event; see event_judge.h.
#include "watch/event_judge.h"

namespace trainlock {

std::optional<Decision> EventJudge::Judge(const NvidiaEvent& event, std::optional<int64_t> time_us,
                                          uint64_t line) {
  if (time_us) {
    if (*time_us < clock_us_) last_request_us_.clear();  // a new boot
    clock_us_ = *time_us;
  }
  EventMeaning meaning =
      event.sxid ? table_.SXid(event.code, event.fatal) : table_.Xid(event.code, event.text);
  const Key key{event.sxid, event.pci, event.code};
  if (meaning.event_class == EventClass::kRevoke) {
    if (!revoked_.insert(key).second) {
      ++suppressed_;
      return std::nullopt;
    }
  } else {
    auto last = last_request_us_.find(key);
    if (last != last_request_us_.end() &&
        clock_us_ - last->second < table_.revalidate_window_us()) {
      ++suppressed_;
      return std::nullopt;
    }
    last_request_us_[key] = clock_us_;
  }
  return Decision{meaning.event_class, event, meaning.name, meaning.listed, time_us, line};
}

}  // namespace trainlock
