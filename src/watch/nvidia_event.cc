// Recognising NVIDIA driver lines; see nvidia_event.h.
#include "watch/nvidia_event.h"

#include <charconv>

namespace trainlock {
namespace {

// Xids and SXids are at most five digits today; nine keep any future one and stay far from
// overflow.
constexpr size_t kMaxCodeDigits = 9;
// "0000:3b:00.0" is 12 characters; a longer address is not one.
constexpr size_t kMaxPciChars = 16;

bool IsHexOrSeparator(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' ||
         c == '.';
}

// "PCI:0000:3B:00.0" -> "0000:3b:00"; "" when it is not a PCI address.
std::string NormalizePci(std::string_view text) {
  if (text.starts_with("PCI:")) text.remove_prefix(4);
  if (text.empty() || text.size() > kMaxPciChars || text.find(':') == std::string_view::npos) {
    return "";
  }
  std::string out;
  for (char c : text) {
    if (!IsHexOrSeparator(c)) return "";
    out.push_back(c >= 'A' && c <= 'F' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  // The Xid line names the device without its function, the others with it: one GPU, one key.
  if (const size_t dot = out.rfind('.'); dot != std::string::npos && dot > out.rfind(':')) {
    out.resize(dot);
  }
  return out;
}

NvidiaLine RefusedNvidiaLine(std::string why) {
  NvidiaLine line;
  line.kind = LineKind::kRefused;
  line.why = std::move(why);
  return line;
}

// "(PCI:0000:3b:00): 79, rest" after the "Xid " or "SXid " word.
NvidiaLine ParseCodeLine(std::string_view rest, bool sxid) {
  const std::string_view what = sxid ? "SXid" : "Xid";
  if (!rest.starts_with("(")) return RefusedNvidiaLine(std::string(what) + " without a device");
  const size_t close = rest.find("): ");
  if (close == std::string_view::npos || close > kMaxPciChars + 6) {
    return RefusedNvidiaLine(std::string(what) + " device not closed");
  }
  NvidiaLine line;
  line.event.sxid = sxid;
  line.event.device = sxid ? DeviceKind::kNvSwitch : DeviceKind::kGpu;
  line.event.pci = NormalizePci(rest.substr(1, close - 1));
  if (line.event.pci.empty())
    return RefusedNvidiaLine(std::string(what) + " device is not a PCI address");
  rest.remove_prefix(close + 3);
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  if (digits == 0) return RefusedNvidiaLine(std::string(what) + " without a number");
  if (digits > kMaxCodeDigits) return RefusedNvidiaLine(std::string(what) + " number too long");
  std::from_chars(rest.data(), rest.data() + digits, line.event.code);
  rest.remove_prefix(digits);
  if (rest.starts_with(",")) rest.remove_prefix(1);
  if (rest.starts_with(" ")) rest.remove_prefix(1);
  line.event.text = std::string(rest);
  if (sxid) {
    // The first line of an SXid says its severity; the lines after it ("Data {...}",
    // "Severity 1 Engine ...") continue that record and are no new event.
    const bool fatal = rest.starts_with("Fatal");
    if (!fatal && !rest.starts_with("Non-fatal")) return NvidiaLine{};
    line.event.fatal = fatal;
  }
  line.kind = LineKind::kEvent;
  return line;
}

// "GPU at PCI:0000:01:00.0 has fallen off the bus." (older drivers, no Xid) and
// "GPU 0000:2b:00.0: GPU has fallen off the bus." (after an Xid 79): both Xid 79.
NvidiaLine ParseFallenOffTheBus(std::string_view rest) {
  if (rest.find("fallen off the bus") == std::string_view::npos) return NvidiaLine{};
  if (rest.starts_with("at ")) rest.remove_prefix(3);
  std::string_view address = rest.substr(0, rest.find(' '));
  if (address.ends_with(":")) address.remove_suffix(1);
  NvidiaLine line;
  line.event.pci = NormalizePci(address);
  if (line.event.pci.empty()) return RefusedNvidiaLine("fallen off the bus without a PCI address");
  line.event.code = 79;
  line.event.text = "GPU has fallen off the bus.";
  line.kind = LineKind::kEvent;
  return line;
}

}  // namespace

NvidiaLine ParseNvidiaLine(std::string_view message) {
  constexpr std::string_view kNvrm = "NVRM: ";
  if (message.starts_with(kNvrm)) {
    message.remove_prefix(kNvrm.size());
    if (message.starts_with("Xid ")) return ParseCodeLine(message.substr(4), false);
    if (message.starts_with("GPU ")) return ParseFallenOffTheBus(message.substr(4));
    return NvidiaLine{};
  }
  constexpr std::string_view kSwitch = "nvidia-nvswitch";
  if (message.starts_with(kSwitch)) {
    const size_t sxid = message.find(": SXid ");
    if (sxid == std::string_view::npos || sxid > kSwitch.size() + 4) return NvidiaLine{};
    return ParseCodeLine(message.substr(sxid + 7), true);
  }
  return NvidiaLine{};
}

}  // namespace trainlock
