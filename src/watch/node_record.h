// The node's revocation record: the one file `trainlock watch` keeps per node under its state
// directory (default kWatchStateDir, src/image/in_image_paths.h), which `trainlock gate` reads to
// refuse a report older than the node's last revoking event. This header and node_record.cc are
// the one home of its format; nothing else writes or parses it.
//
// The format, trainlock.watch-record/1: UTF-8-agnostic text, one field a line, "KEY VALUE", in
// exactly this order, at most kMaxNodeRecordBytes in all:
//
//   trainlock.watch-record/1
//   node NAME                          the node the record is of (its file is NAME.record)
//   revoked-at 2026-12-07T19:02:39.123456Z    } the last revoking event, all seven lines or
//   class revoke                              } none: the time in UTC (microseconds), the
//   device gpu|nvswitch                       } event's class, device kind and PCI address
//   pci 0000:3b:00                            } (domain:bus:device), Xid or SXid and its
//   code xid 79                               } number (or `nvml CONDITION`), the event
//   name fallen off the bus                   } table's name for it and the kernel log's
//   kernel-line NVRM: Xid (PCI:0000:3b:00): 79, ...    line, or NVML's reading (its first
//                                                      kMaxKernelLineBytes)
//   revalidate 2026-12-07T19:05:00.000000Z gpu 0000:5e:00 xid 45 NAME   (0..kMaxPendingRequests
//                                      re-validation requests not yet answered, oldest first)
//   end
//
// A value's bytes below 0x20, 0x7f and '\' are written as \xNN. Reading is strict: a field out
// of order, an unknown key, a bad escape, a time or number that does not parse, a missing `end`
// (a file cut short) is one error naming the file, line and column: a corrupt record is never
// "no revocation".
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainlock {

inline constexpr const char* kNodeRecordSchema = "trainlock.watch-record/1";
inline constexpr size_t kMaxNodeRecordBytes = 64 * 1024;
inline constexpr size_t kMaxKernelLineBytes = 1024;
inline constexpr size_t kMaxPendingRequests = 32;

// One NVIDIA event as the record keeps it.
struct RecordedEvent {
  int64_t at_us = 0;        // UTC, microseconds since the epoch
  std::string device;       // "gpu" or "nvswitch"
  std::string pci;          // "0000:3b:00"
  std::string kind;         // "xid", "sxid" or "nvml"
  int64_t code = 0;         // the Xid or SXid number (0 for nvml)
  std::string name;         // the event table's name for it
  std::string kernel_line;  // the kernel log's message, or NVML's reading (revocation only)
  std::string condition;    // nvml only: the event table's condition ("remap-failed")
};

struct NodeRecord {
  std::string node;
  std::optional<RecordedEvent> revoked;  // the last revoking event
  std::vector<RecordedEvent> pending;    // re-validation requests, oldest first
};

// The record's text, as written; `pending` beyond kMaxPendingRequests keeps the newest.
std::string FormatNodeRecord(const NodeRecord& record);

// Parses a record's text; throws InputError naming display:line:column at the first problem.
NodeRecord ParseNodeRecord(std::string_view text, const std::string& display);

// DIR/NODE.record. Throws InputError (exit 2) for a node name that is no plain file name.
std::filesystem::path NodeRecordPath(const std::filesystem::path& dir, const std::string& node);

// The node's record in `dir`: nullopt when the directory or the record does not exist (no
// revocation); InputError for one that cannot be read, is not a regular file (a link is not
// followed), is larger than the cap or does not parse, or that names another node.
std::optional<NodeRecord> ReadNodeRecord(const std::filesystem::path& dir, const std::string& node);

// Writes the record atomically (a new file beside it, renamed over the old one: a link at the
// record's name is replaced, never followed); creates `dir` when missing.
void WriteNodeRecord(const std::filesystem::path& dir, const NodeRecord& record);

// "2026-12-07T19:02:39.123456Z" and back (nullopt for anything else).
std::string UtcMicrosText(int64_t at_us);
std::optional<int64_t> ParseUtcMicros(std::string_view text);

// "xid 79", "sxid 12028", "nvml remap-failed": the record's code field.
std::string RecordedEventCode(const RecordedEvent& event);

// "gpu 0000:3b:00 Xid 79 (fallen off the bus) at 2026-12-07T19:02:39.123456Z" ("... NVML
// remap-failed (row remap failure) at ..."): for messages.
std::string RecordedEventText(const RecordedEvent& event);

}  // namespace trainlock
