// The GPU event table (lockfiles/compat/gpu-events.toml): what each Xid and SXid a node's
// kernel log reports, and each condition NVML shows (its events, its readings against the
// node's last passing report), means for the node's validity. Data, not code: the classes and their
// reasons live in the file; this header is its one reader.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainlock {

// What an event means for the node: its validity revoked until a new signed pass, a
// re-validation asked for (never a drain), or information only.
enum class EventClass { kRevoke, kRevalidate, kInfo };

std::string_view EventClassName(EventClass c);

// What NVML can show of a GPU besides an Xid (an XidCritical event is judged as its Xid): each
// must have one `[[nvml]]` entry in the table, named by NvmlConditionName.
enum class NvmlCondition {
  kDbeEvent,                  // a double-bit ECC event (nvmlEventTypeDoubleBitEccError)
  kSbeEvent,                  // a single-bit ECC event (nvmlEventTypeSingleBitEccError)
  kUncorrectedEccRise,        // an uncorrected ECC count above the baseline
  kCorrectedEccRise,          // a corrected ECC count above the baseline
  kRemapFailed,               // nvmlDeviceGetRemappedRows' failureOccurred
  kRemapPending,              // its isPending
  kRemappedRowsRise,          // its rows remapped for uncorrectable errors above the baseline
  kRecoveryActionReset,       // the GPU recovery action: GPU reset (or reset of its bus)
  kRecoveryActionReboot,      // node reboot
  kRecoveryActionDrainP2p,    // drain peer-to-peer traffic
  kRecoveryActionDrainReset,  // drain and reset
  kRecoveryActionUnknown,     // a value this trainlock does not know
  kGpuLost,                   // NVML_ERROR_GPU_IS_LOST: the GPU fell off the bus
};
inline constexpr int kNvmlConditionCount = 13;

// "dbe-event", "remap-failed", ...: the table's and the watch record's word for it.
std::string_view NvmlConditionName(NvmlCondition c);

struct GpuEventRule {
  int64_t code = 0;
  std::string name;  // "fallen off the bus"
  EventClass event_class = EventClass::kInfo;
  // An event whose text holds this is information whatever `event_class` says ("" = never):
  // Xid 154's change of the recovery action back to None.
  std::string info_if;
};

// What the table says of one event: its class, a short name, and whether the table lists it
// (an unlisted number takes the documented default).
struct EventMeaning {
  EventClass event_class = EventClass::kInfo;
  std::string name;
  bool listed = false;
};

class GpuEventTable {
 public:
  // Parses the file's text; throws InputError naming display:line:column for each problem
  // (an unknown class, a code or NVML condition listed twice, an unknown NVML condition, one not
  // listed, a missing field, an unknown key).
  static GpuEventTable Parse(const std::string& text, const std::string& display);

  // The meaning of Xid `code` whose line reads `text` after the number.
  EventMeaning Xid(int64_t code, std::string_view text) const;
  // The meaning of SXid `code` whose line says it is fatal or not.
  EventMeaning SXid(int64_t code, bool fatal) const;
  // Whether Xid `code`'s meaning depends on its line's text (`info-if`): NVML's XidCritical
  // event carries the number only.
  bool XidNeedsText(int64_t code) const;
  // The meaning of an NVML condition (every one is listed: the loader refuses a table without).
  EventMeaning Nvml(NvmlCondition condition) const;
  // The storm window: one re-validation request per GPU and code within it.
  int64_t revalidate_window_us() const { return revalidate_window_s_ * 1000000; }
  const std::vector<GpuEventRule>& xids() const { return xids_; }

 private:
  std::vector<GpuEventRule> xids_;
  std::vector<GpuEventRule> sxids_;
  std::vector<GpuEventRule> nvml_;  // indexed by NvmlCondition; code unused
  EventClass default_xid_ = EventClass::kRevalidate;
  EventClass sxid_fatal_ = EventClass::kRevoke;
  EventClass sxid_non_fatal_ = EventClass::kInfo;
  int64_t revalidate_window_s_ = 60;
};

}  // namespace trainlock
