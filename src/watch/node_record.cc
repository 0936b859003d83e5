// The node's revocation record, written and read; see node_record.h for the format.
#include "watch/node_record.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/safe_paths.h"
#include "base/scoped_fd.h"

namespace trainlock {
namespace {

constexpr const char* kRecordHint =
    "`trainlock watch` writes this file; a record that does not read is never taken as no "
    "revocation: look at it, and remove it only once the node passed a new validation";

bool IsEscapedByte(unsigned char c) {
  return c < 0x20 || c == 0x7f || c == '\\';
}

std::string EscapeRecordValue(std::string_view value) {
  std::string out;
  for (unsigned char c : value) {
    if (!IsEscapedByte(c)) {
      out.push_back(static_cast<char>(c));
      continue;
    }
    char buffer[5];
    std::snprintf(buffer, sizeof buffer, "\\x%02x", c);
    out += buffer;
  }
  return out;
}

int RecordHexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The record's lines, one at a time, with their numbers; every refusal names the position.
class RecordReader {
 public:
  RecordReader(std::string_view text, const std::string& display)
      : text_(text), display_(display) {}

  [[noreturn]] void Fail(int column, const std::string& message) const {
    throw InputError(Diagnostic{display_, {line_, column}, message, kRecordHint});
  }

  // The next line, without its newline; a file that ends before `end` is cut short.
  std::string_view Next() {
    if (text_.empty()) {
      ++line_;
      Fail(1, "the record ends before its `end` line: cut short");
    }
    const size_t end = text_.find('\n');
    if (end == std::string_view::npos) {
      ++line_;
      Fail(static_cast<int>(text_.size()) + 1, "the last line has no newline: cut short");
    }
    std::string_view line = text_.substr(0, end);
    text_.remove_prefix(end + 1);
    ++line_;
    return line;
  }

  std::string_view Peek() const { return text_.substr(0, text_.find('\n')); }
  bool AtEnd() const { return text_.empty(); }

  // The value of the next line, which must be "KEY VALUE"; unescaped.
  std::string Field(std::string_view key) {
    std::string_view line = Next();
    if (!line.starts_with(key) || line.size() <= key.size() || line[key.size()] != ' ')
      Fail(1, "expected `" + std::string(key) + " ...`, found " + Quoted(line));
    return Unescape(line.substr(key.size() + 1), static_cast<int>(key.size()) + 2);
  }

  std::string Unescape(std::string_view value, int first_column) const {
    std::string out;
    for (size_t i = 0; i < value.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(value[i]);
      const int column = first_column + static_cast<int>(i);
      if (c != '\\') {
        if (IsEscapedByte(c)) Fail(column, "a control byte that should have been escaped");
        out.push_back(static_cast<char>(c));
        continue;
      }
      if (i + 3 >= value.size() || value[i + 1] != 'x' || RecordHexDigit(value[i + 2]) < 0 ||
          RecordHexDigit(value[i + 3]) < 0)
        Fail(column, "a backslash that is no \\xNN escape");
      out.push_back(
          static_cast<char>(RecordHexDigit(value[i + 2]) * 16 + RecordHexDigit(value[i + 3])));
      i += 3;
    }
    return out;
  }

  int line() const { return line_; }

 private:
  std::string_view text_;
  const std::string& display_;
  int line_ = 0;
};

int64_t RecordNumber(const RecordReader& reader, std::string_view text, int column) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || text.size() > 18 || ec != std::errc() || end != text.data() + text.size() ||
      value < 0)
    reader.Fail(column, "not a number: " + Quoted(text));
  return value;
}

int64_t RecordTime(const RecordReader& reader, std::string_view text, int column) {
  std::optional<int64_t> at = ParseUtcMicros(text);
  if (!at) {
    reader.Fail(column, "not a UTC time as the watch writes it (2026-12-07T19:02:39.123456Z): " +
                            Quoted(text));
  }
  return *at;
}

// "gpu 0000:3b:00" / "xid 79": the device and code fields, checked against their vocabularies.
void ParseDevice(const RecordReader& reader, std::string_view device, RecordedEvent& event,
                 int column) {
  if (device != "gpu" && device != "nvswitch")
    reader.Fail(column, "a device is gpu or nvswitch, not " + Quoted(device));
  event.device = std::string(device);
}

// "xid 79", "sxid 12028" or "nvml remap-failed" (a condition of the event table's [[nvml]]).
void ParseCode(const RecordReader& reader, std::string_view value, RecordedEvent& event,
               int column) {
  constexpr const char* kCodeForms = "a code is xid N, sxid N or nvml CONDITION";
  const size_t space = value.find(' ');
  std::string_view kind = value.substr(0, space);
  if (kind != "xid" && kind != "sxid" && kind != "nvml") reader.Fail(column, kCodeForms);
  event.kind = std::string(kind);
  if (space == std::string_view::npos) reader.Fail(column, kCodeForms);
  const std::string_view code = value.substr(space + 1);
  const int code_column = column + static_cast<int>(space) + 1;
  if (kind != "nvml") {
    event.code = RecordNumber(reader, code, code_column);
    return;
  }
  const bool word =
      !code.empty() && code.size() <= 40 &&
      code.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string_view::npos;
  if (!word) reader.Fail(code_column, "not an NVML condition: " + Quoted(code));
  event.condition = std::string(code);
}

void ParseRevocation(RecordReader& reader, NodeRecord& record) {
  RecordedEvent event;
  event.at_us = RecordTime(reader, reader.Field("revoked-at"), 12);
  if (reader.Field("class") != "revoke") reader.Fail(7, "the recorded event's class is revoke");
  ParseDevice(reader, reader.Field("device"), event, 8);
  event.pci = reader.Field("pci");
  if (event.pci.empty() || event.pci.size() > 16) reader.Fail(5, "not a PCI address");
  ParseCode(reader, reader.Field("code"), event, 6);
  event.name = reader.Field("name");
  event.kernel_line = reader.Field("kernel-line");
  record.revoked = std::move(event);
}

// "revalidate TIME DEVICE PCI KIND CODE NAME"
RecordedEvent ParseRequest(RecordReader& reader) {
  const std::string value = reader.Field("revalidate");
  std::string_view rest = value;
  int column = 12;  // after "revalidate "
  // The next space-separated word and the column it starts at.
  auto word = [&](int& at) {
    const size_t space = rest.find(' ');
    if (space == std::string_view::npos)
      reader.Fail(column, "a request is TIME DEVICE PCI KIND CODE NAME");
    at = column;
    std::string_view w = rest.substr(0, space);
    rest.remove_prefix(space + 1);
    column += static_cast<int>(space) + 1;
    return w;
  };
  RecordedEvent event;
  int at = 0;
  std::string_view time = word(at);
  event.at_us = RecordTime(reader, time, at);
  std::string_view device = word(at);
  ParseDevice(reader, device, event, at);
  event.pci = std::string(word(at));
  std::string_view kind = word(at);
  const int kind_column = at;
  std::string_view code = word(at);
  ParseCode(reader, std::string(kind) + " " + std::string(code), event, kind_column);
  event.name = std::string(rest);
  return event;
}

}  // namespace

std::string UtcMicrosText(int64_t at_us) {
  const time_t seconds = static_cast<time_t>(at_us / 1000000);
  struct tm utc {};
  gmtime_r(&seconds, &utc);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long long>(at_us % 1000000));
  return buffer;
}

std::optional<int64_t> ParseUtcMicros(std::string_view text) {
  // Exactly the form UtcMicrosText writes: 19 characters, '.', six digits, 'Z'.
  if (text.size() != 27 || text[19] != '.' || text[26] != 'Z') return std::nullopt;
  struct tm utc {};
  char tail = 0;
  const std::string head(text.substr(0, 19));
  if (std::sscanf(head.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &utc.tm_year, &utc.tm_mon,
                  &utc.tm_mday, &utc.tm_hour, &utc.tm_min, &utc.tm_sec, &tail) != 6)
    return std::nullopt;
  int64_t micros = 0;
  for (char c : text.substr(20, 6)) {
    if (c < '0' || c > '9') return std::nullopt;
    micros = micros * 10 + (c - '0');
  }
  const int year = utc.tm_year;
  utc.tm_year -= 1900;
  utc.tm_mon -= 1;
  const time_t seconds = timegm(&utc);
  // timegm normalises 2026-02-31 into March: a date that is not one does not round-trip.
  if (seconds < 0 || UtcMicrosText(int64_t{seconds} * 1000000).substr(0, 19) != head || year < 1970)
    return std::nullopt;
  return int64_t{seconds} * 1000000 + micros;
}

std::string RecordedEventCode(const RecordedEvent& e) {
  return e.kind + " " + (e.kind == "nvml" ? e.condition : std::to_string(e.code));
}

std::string RecordedEventText(const RecordedEvent& e) {
  const std::string code = e.kind == "nvml"   ? " NVML " + e.condition
                           : e.kind == "sxid" ? " SXid " + std::to_string(e.code)
                                              : " Xid " + std::to_string(e.code);
  return e.device + " " + e.pci + code + " (" + e.name + ") at " + UtcMicrosText(e.at_us);
}

std::string FormatNodeRecord(const NodeRecord& record) {
  std::string text = std::string(kNodeRecordSchema) + "\n";
  text += "node " + EscapeRecordValue(record.node) + "\n";
  if (record.revoked) {
    const RecordedEvent& e = *record.revoked;
    text += "revoked-at " + UtcMicrosText(e.at_us) + "\nclass revoke\n";
    text += "device " + e.device + "\npci " + EscapeRecordValue(e.pci) + "\n";
    text += "code " + RecordedEventCode(e) + "\n";
    text += "name " + EscapeRecordValue(e.name) + "\n";
    text += "kernel-line " +
            EscapeRecordValue(std::string_view(e.kernel_line).substr(0, kMaxKernelLineBytes)) +
            "\n";
  }
  const size_t first =
      record.pending.size() > kMaxPendingRequests ? record.pending.size() - kMaxPendingRequests : 0;
  for (size_t i = first; i < record.pending.size(); ++i) {
    const RecordedEvent& e = record.pending[i];
    text += "revalidate " + UtcMicrosText(e.at_us) + " " + e.device + " " +
            EscapeRecordValue(e.pci) + " " + RecordedEventCode(e) + " " +
            EscapeRecordValue(e.name) + "\n";
  }
  return text + "end\n";
}

NodeRecord ParseNodeRecord(std::string_view text, const std::string& display) {
  RecordReader reader(text, display);
  NodeRecord record;
  if (std::string_view first = reader.Next(); first != kNodeRecordSchema)
    reader.Fail(1, "not a " + std::string(kNodeRecordSchema) + " record: " + Quoted(first));
  record.node = reader.Field("node");
  if (reader.Peek().starts_with("revoked-at ")) ParseRevocation(reader, record);
  while (reader.Peek().starts_with("revalidate ")) {
    if (record.pending.size() == kMaxPendingRequests)
      reader.Fail(1, "more than " + std::to_string(kMaxPendingRequests) + " requests");
    record.pending.push_back(ParseRequest(reader));
  }
  if (std::string_view last = reader.Next(); last != "end")
    reader.Fail(1, "expected `end` (or a field in its place), found " + Quoted(last));
  if (!reader.AtEnd()) {
    reader.Next();
    reader.Fail(1, "text after the `end` line");
  }
  return record;
}

std::filesystem::path NodeRecordPath(const std::filesystem::path& dir, const std::string& node) {
  if (!IsPlainFileName(node) || node.find(' ') != std::string::npos)
    throw InputError(Diagnostic{"--node", {}, "not a node name: " + Quoted(node), ""});
  return dir / (node + ".record");
}

std::optional<NodeRecord> ReadNodeRecord(const std::filesystem::path& dir,
                                         const std::string& node) {
  const std::filesystem::path path = NodeRecordPath(dir, node);
  ScopedFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) {
    if (errno == ENOENT) return std::nullopt;
    throw InputError(Diagnostic{dir.string(),
                                {},
                                std::string("cannot read the watch's state "
                                            "directory: ") +
                                    std::strerror(errno),
                                kRecordHint});
  }
  ScopedFd fd = OpenRegularFileAt(dir_fd.get(), path.filename().string(), path);
  if (!fd.valid()) return std::nullopt;
  std::string text;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw InputError(Diagnostic{
          path.string(), {}, std::string("cannot read: ") + std::strerror(errno), kRecordHint});
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > kMaxNodeRecordBytes) {
      throw InputError(Diagnostic{path.string(),
                                  {},
                                  "larger than " + std::to_string(kMaxNodeRecordBytes) +
                                      " bytes: no record the "
                                      "watch writes",
                                  kRecordHint});
    }
  }
  NodeRecord record = ParseNodeRecord(text, path.string());
  if (record.node != node) {
    throw InputError(
        Diagnostic{path.string(),
                   {2, 6},
                   "the record is of node " + Quoted(record.node) + ", not " + Quoted(node),
                   kRecordHint});
  }
  return record;
}

void WriteNodeRecord(const std::filesystem::path& dir, const NodeRecord& record) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);  // an error shows at the write, naming the file
  WriteFileAtomically(NodeRecordPath(dir, record.node), FormatNodeRecord(record));
}

}  // namespace trainlock
