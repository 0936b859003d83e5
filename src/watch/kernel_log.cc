// Reading kernel log records, bounded; see kernel_log.h.
#include "watch/kernel_log.h"

#include <charconv>
#include <cstring>

namespace trainlock {
namespace {

// A syslog or journal prefix ("May 18 19:02:39 host kernel: ") is short; a longer one is text.
constexpr size_t kMaxPrefixBytes = 128;

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Appends `text` to `out` keeping `out` within the cap; says whether anything was cut.
bool AppendCapped(std::string& out, std::string_view text) {
  const size_t room = out.size() < kMaxRecordBytes ? kMaxRecordBytes - out.size() : 0;
  out.append(text.substr(0, room));
  return text.size() > room;
}

// kmsg escapes bytes it will not print as \xNN (docs: Documentation/ABI/testing/dev-kmsg).
std::string UnescapeKmsg(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() && text[i + 1] == 'x' &&
        HexValue(text[i + 2]) >= 0 && HexValue(text[i + 3]) >= 0) {
      out.push_back(static_cast<char>(HexValue(text[i + 2]) * 16 + HexValue(text[i + 3])));
      i += 3;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

// "PRI,SEQ,TIMESTAMP,FLAGS[,...];" in shape: digits and commas (and the flag characters
// '-', '+', 'c') up to the first ';', with at least three commas. Numbers are checked later.
bool LooksLikeKmsgHeader(std::string_view line) {
  if (line.empty() || !IsDigit(line[0])) return false;
  const size_t semi = line.find(';');
  if (semi == std::string_view::npos || semi > kMaxPrefixBytes) return false;
  int commas = 0;
  for (char c : line.substr(0, semi)) {
    if (c == ',')
      ++commas;
    else if (!IsDigit(c) && c != '-' && c != '+' && c != 'c')
      return false;
  }
  return commas >= 3;
}

template <typename T>
std::optional<T> KmsgNumber(std::string_view text) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// "[  12.345678] rest" -> 12345678 us and "rest"; a bracket that is not a number ("[Mon May 18
// ...]", dmesg -T) is dropped without a time.
std::string_view StripBracketTime(std::string_view message, std::optional<int64_t>& time_us) {
  if (message.empty() || message[0] != '[') return message;
  const size_t close = message.find(']');
  if (close == std::string_view::npos || close > 64) return message;
  std::string_view inside = message.substr(1, close - 1);
  while (!inside.empty() && inside[0] == ' ') inside.remove_prefix(1);
  const size_t dot = inside.find('.');
  if (dot != std::string_view::npos && dot <= 12 && inside.size() - dot - 1 <= 6) {
    auto seconds = KmsgNumber<int64_t>(inside.substr(0, dot));
    std::string fraction(inside.substr(dot + 1));
    fraction.resize(6, '0');
    auto micros = KmsgNumber<int64_t>(fraction);
    if (seconds && micros) time_us = *seconds * 1000000 + *micros;
  }
  message.remove_prefix(close + 1);
  if (!message.empty() && message[0] == ' ') message.remove_prefix(1);
  return message;
}

// A dmesg or journal line: the message after a "... kernel: " prefix (or the whole line, for
// dmesg's own output), its bracketed kernel time when there is one.
KernelRecord ParseTextLine(std::string_view line, uint64_t number) {
  KernelRecord record;
  record.line = number;
  std::string_view message = line;
  const size_t colon = line.substr(0, kMaxPrefixBytes).find(": ");
  if (colon != std::string_view::npos) {
    std::string_view prefix = line.substr(0, colon);
    if (prefix == "kernel" || prefix.ends_with(" kernel")) message = line.substr(colon + 2);
  }
  message = StripBracketTime(message, record.time_us);
  record.truncated = AppendCapped(record.message, message);
  return record;
}

void CountRefused(KernelLogCounts& counts, uint64_t line) {
  ++counts.refused;
  if (counts.refused_lines.size() < kMaxRefusedLinesKept) counts.refused_lines.push_back(line);
}

// Adds one " KEY=VALUE" continuation line to a kmsg record, within the record's cap.
void AddDictLine(KernelRecord& record, std::string_view line) {
  line.remove_prefix(1);
  size_t used = record.message.size();
  for (const auto& [key, value] : record.dict) used += key.size() + value.size();
  if (used + line.size() > kMaxRecordBytes) {
    record.truncated = true;
    return;
  }
  const size_t eq = line.find('=');
  if (eq == std::string_view::npos) {
    record.dict.emplace_back(std::string(line), "");
  } else {
    record.dict.emplace_back(std::string(line.substr(0, eq)), UnescapeKmsg(line.substr(eq + 1)));
  }
}

}  // namespace

std::optional<KernelRecord> ParseKmsgRecord(std::string_view text, uint64_t line) {
  size_t end = text.find('\n');
  std::string_view first = text.substr(0, end);
  if (!LooksLikeKmsgHeader(first)) return std::nullopt;
  const size_t semi = first.find(';');
  std::string_view header = first.substr(0, semi);
  std::string_view fields[3];
  for (std::string_view& field : fields) {
    const size_t comma = header.find(',');
    field = header.substr(0, comma);
    header.remove_prefix(comma + 1);  // LooksLikeKmsgHeader saw three commas
  }
  auto priority = KmsgNumber<uint64_t>(fields[0]);
  auto sequence = KmsgNumber<uint64_t>(fields[1]);
  auto time_us = KmsgNumber<int64_t>(fields[2]);
  if (!priority || !sequence || !time_us) return std::nullopt;
  KernelRecord record;
  record.line = line;
  record.time_us = *time_us;
  record.from_kernel = (*priority >> 3) == 0;
  std::string_view message = first.substr(semi + 1);
  record.truncated = message.size() > kMaxRecordBytes;
  record.message = UnescapeKmsg(message.substr(0, kMaxRecordBytes));
  // The continuation lines " KEY=VALUE" follow in the same read.
  while (end != std::string_view::npos) {
    text.remove_prefix(end + 1);
    end = text.find('\n');
    std::string_view next = text.substr(0, end);
    if (next.empty() || next[0] != ' ') break;
    AddDictLine(record, next);
  }
  return record;
}

void ReadKernelLog(std::string_view text, const std::function<void(KernelRecord&&)>& sink,
                   KernelLogCounts& counts) {
  std::optional<KernelRecord> pending;
  bool pending_kmsg = false;
  auto flush = [&] {
    if (!pending) return;
    ++counts.records;
    if (pending->truncated) ++counts.truncated;
    sink(std::move(*pending));
    pending.reset();
  };
  uint64_t number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++number;
    ++counts.lines;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (counts.first_nul_line == 0 && std::memchr(line.data(), '\0', line.size()) != nullptr) {
      counts.first_nul_line = number;
    }
    if (!line.empty() && line[0] == ' ' && pending && pending_kmsg) {
      AddDictLine(*pending, line);  // a kmsg record's " KEY=VALUE" line
      continue;
    }
    flush();
    pending_kmsg = LooksLikeKmsgHeader(line);
    if (pending_kmsg) {
      pending = ParseKmsgRecord(line, number);
      if (!pending) CountRefused(counts, number);
      continue;
    }
    pending = ParseTextLine(line, number);
  }
  flush();
}

}  // namespace trainlock
