// Pinning a golden digest into the lock, and finding a key's pin (golden_pin.h).
#include "report/golden_pin.h"

#include "base/diagnostic.h"
#include "base/text_format.h"
#include "base/toml_document.h"
#include "lock/lock_resolver.h"
#include "project/lockfile_loader.h"

namespace trainlock {

std::string LockTextWithGoldenPin(const std::string& lock_text, const std::string& display,
                                  const std::string& lock_build_sha256,
                                  const GoldenDigest& golden) {
  if (golden.key.lock_sha256 != lock_build_sha256) {
    throw InputError(Diagnostic{display,
                                {},
                                "the report's golden digest is of lock " +
                                    ShortSha(golden.key.lock_sha256) + ", not this lock's " +
                                    ShortSha(lock_build_sha256),
                                "pin a report validated with this lock"});
  }
  toml::table doc = ParseTomlDocument(lock_text, display);
  if (!doc["golden"].is_table()) doc.insert_or_assign("golden", toml::table{});
  toml::table pin{{"digest", golden.digest}};
  const nlohmann::json key = ToJson(golden)["key"];
  for (const auto& [name, value] : key.items()) pin.insert(name, value.get<std::string>());
  doc["golden"].as_table()->insert_or_assign(GoldenKeyId(golden.key), std::move(pin));
  const std::string text = LockFileText(doc);
  LoadLockfile(text, display, LockfileKind::kLock);  // still a valid lock
  return text;
}

const GoldenPin* PinnedGoldenFor(const Lockfile& lock, const GoldenKey& key) {
  auto it = lock.golden.find(GoldenKeyId(key));
  return it == lock.golden.end() ? nullptr : &it->second;
}

std::optional<GoldenVerdict> CompareWithLockPin(const Lockfile& lock, const GoldenKey& key,
                                                const std::vector<GoldenWitness>& witnesses) {
  const GoldenPin* pin = PinnedGoldenFor(lock, key);
  if (!pin) return std::nullopt;
  return CompareGolden(witnesses, pin->digest);
}

std::optional<std::string> MissingGoldenRefusal(const Lockfile& lock, bool report_has_golden) {
  if (lock.golden.empty() || report_has_golden) return std::nullopt;
  return "the lock pins golden digests and the report carries none (train.roundtrip did not pass "
         "bitwise, or did not run): validate the node with train.roundtrip";
}

}  // namespace trainlock
