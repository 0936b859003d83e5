// [python] of a manifest or lock: the project's own packages, each at one exact version, each
// named once (PEP 503 names).
#include "project/lockfile_reader.h"

#include <map>
#include <regex>
#include <tuple>

#include "base/package_name.h"
#include "base/strings.h"

namespace trainlock {

void LockfileReader::ReadPython(const toml::table& t) {
  static const std::regex kPackage(R"(^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$)");
  // Each number at most 18 digits (it fits an int64_t; pep440.h reads no longer one).
  static const std::regex kExact(
      R"(^[0-9]{1,18}(\.[0-9]{1,18})*([a-z]+[0-9]{0,18})?(\.post[0-9]{1,18})?(\+[A-Za-z0-9.]+)?$)");
  // PEP 503 makes 'My_Pkg' and 'my-pkg' one package: two spellings would pin it twice and the
  // resolver would keep one of them without a word.
  std::map<std::string, std::pair<std::string, SourcePos>> spelled;  // normalised -> key, where
  for (auto&& [key, node] : t) {
    std::string name(key.str());
    SourcePos pos = PosOf(node);
    if (!std::regex_match(name, kPackage)) {
      diags_.Error(path_, PosOf(key.source()),
                   "[python] key " + Quoted(name) + " is not a package name");
      continue;
    }
    const auto* version = node.as_string();
    if (!version) {
      diags_.Error(path_, pos,
                   "'python." + name + "' must be a string, not " + TomlTypeName(node.type()),
                   "write the exact version, e.g. " + name + " = \"1.2.3\"");
      continue;
    }
    if (!std::regex_match(version->get(), kExact)) {
      diags_.Error(path_, pos,
                   "'python." + name + "' = " + Quoted(version->get()) + " is not an exact version",
                   "pin one release, e.g. \"1.2.3\"; ranges and wildcards are not reproducible");
      continue;
    }
    const SourcePos key_pos = PosOf(key.source());
    auto [other, fresh] = spelled.try_emplace(NormalizePackageName(name), name, key_pos);
    if (!fresh) {  // named at the later of the two lines, in the file's order
      const auto& [first_name, first_pos] = other->second;
      const bool before =
          std::tie(first_pos.line, first_pos.column) < std::tie(key_pos.line, key_pos.column);
      diags_.Error(path_, before ? key_pos : first_pos,
                   "[python] names " + other->first + " twice (" +
                       Quoted(before ? first_name : name) + " and " +
                       Quoted(before ? name : first_name) + ")",
                   "package names compare without case and '-', '_', '.'; keep one pin");
      continue;
    }
    spec_.python[name] = version->get();
    spec_.positions["python." + name] = pos;
  }
}

}  // namespace trainlock
