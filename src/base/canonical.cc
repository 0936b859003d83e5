// Canonical TOML serialization; see canonical.h.
#include "base/canonical.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <vector>

#include "base/sha256.h"

namespace trainlock {
namespace {

void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
}

std::string TwoDigits(int v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02d", v);
  return buf;
}

std::string DateString(const toml::date& d) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", static_cast<int>(d.year),
                static_cast<int>(d.month), static_cast<int>(d.day));
  return buf;
}

std::string TimeString(const toml::time& t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d.%09u", static_cast<int>(t.hour),
                static_cast<int>(t.minute), static_cast<int>(t.second),
                static_cast<unsigned>(t.nanosecond));
  return buf;
}

void AppendNode(std::string& out, const toml::node& node);

void AppendTable(std::string& out, const toml::table& table,
                 std::initializer_list<std::string_view> exclude) {
  std::vector<std::pair<std::string_view, const toml::node*>> entries;
  for (auto&& [key, value] : table) {
    if (std::find(exclude.begin(), exclude.end(), key.str()) != exclude.end()) continue;
    entries.emplace_back(key.str(), &value);
  }
  std::sort(entries.begin(), entries.end());
  out.push_back('{');
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i) out.push_back(',');
    AppendJsonString(out, entries[i].first);
    out.push_back(':');
    AppendNode(out, *entries[i].second);
  }
  out.push_back('}');
}

void AppendNode(std::string& out, const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      AppendTable(out, *node.as_table(), {});
      return;
    case toml::node_type::array: {
      out.push_back('[');
      bool first = true;
      for (const toml::node& element : *node.as_array()) {
        if (!first) out.push_back(',');
        first = false;
        AppendNode(out, element);
      }
      out.push_back(']');
      return;
    }
    case toml::node_type::string:
      AppendJsonString(out, node.as_string()->get());
      return;
    case toml::node_type::integer:
      out += std::to_string(node.as_integer()->get());
      return;
    case toml::node_type::floating_point: {
      double v = node.as_floating_point()->get();
      if (std::isnan(v)) {
        out += "\"nan\"";
      } else if (std::isinf(v)) {
        out += v > 0 ? "\"inf\"" : "\"-inf\"";
      } else {
        // Mark floats so 1.0 and 1 stay distinct values.
        char buf[64];
        auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
        out += "{\"f\":" + std::string(buf, end) + "}";
      }
      return;
    }
    case toml::node_type::boolean:
      out += node.as_boolean()->get() ? "true" : "false";
      return;
    case toml::node_type::date:
      AppendJsonString(out, DateString(node.as_date()->get()));
      return;
    case toml::node_type::time:
      AppendJsonString(out, TimeString(node.as_time()->get()));
      return;
    case toml::node_type::date_time: {
      const toml::date_time& dt = node.as_date_time()->get();
      std::string s = DateString(dt.date) + "T" + TimeString(dt.time);
      if (dt.offset) {
        int minutes = dt.offset->minutes;
        s += minutes < 0 ? "-" : "+";
        minutes = std::abs(minutes);
        s += TwoDigits(minutes / 60) + ":" + TwoDigits(minutes % 60);
      }
      AppendJsonString(out, s);
      return;
    }
    case toml::node_type::none:
      out += "null";
      return;
  }
}

}  // namespace

std::string CanonicalJson(const toml::table& table,
                          std::initializer_list<std::string_view> exclude_top_level) {
  std::string out;
  AppendTable(out, table, exclude_top_level);
  return out;
}

std::string ManifestSha256(const toml::table& manifest) {
  return Sha256Hex(CanonicalJson(manifest));
}

std::string LockSha256(const toml::table& lock) {
  return Sha256Hex(CanonicalJson(lock));
}

std::string LockBuildSha256(const toml::table& lock) {
  return Sha256Hex(CanonicalJson(lock, {"images", "golden"}));
}

}  // namespace trainlock
