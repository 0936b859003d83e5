// Recognising what NVIDIA's drivers write to the kernel log: Xid lines of the GPU driver
// ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus."),
// the older "fallen off the bus" lines that carry no Xid, and SXid lines of the NVSwitch driver
// ("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 ..."). A line that
// starts as one of these but does not parse (a garbled address, a number that overflows) is
// refused, never guessed at.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trainlock {

enum class DeviceKind { kGpu, kNvSwitch };

struct NvidiaEvent {
  DeviceKind device = DeviceKind::kGpu;
  std::string pci;    // domain:bus:device, lower case, without the function: "0000:3b:00"
  bool sxid = false;  // an NVSwitch's SXid, else a GPU's Xid
  int64_t code = 0;
  bool fatal = false;  // SXid only: the line says "Fatal"
  std::string text;    // what follows the code, for the table's `info-if` and for people
};

enum class LineKind {
  kOther,    // not an event line (also the NVRM lines that continue a record)
  kEvent,    // `event` is set
  kRefused,  // looked like an event line and did not parse: `why` says how
};

struct NvidiaLine {
  LineKind kind = LineKind::kOther;
  NvidiaEvent event;
  std::string why;
};

// Reads one kernel message (without its timestamp or syslog prefix).
NvidiaLine ParseNvidiaLine(std::string_view message);

}  // namespace trainlock
