// The field readers' shared messages; see fields.h.
#include "base/fields.h"

#include "base/diagnostic.h"
#include "base/text_format.h"

namespace trainlock {

std::string WrongTypeMessage(std::string_view field, std::string_view expected,
                             std::string_view found) {
  return "'" + std::string(field) + "' must be " + std::string(expected) + ", not " +
         std::string(found);
}

std::string OutOfRangeMessage(std::string_view field, std::string_view value) {
  return "'" + std::string(field) + "' = " + std::string(value) + " is out of range";
}

std::string ExpectedRangeHint(int64_t min, int64_t max) {
  return "expected " + std::to_string(min) + " to " + std::to_string(max);
}

std::string ExpectedRangeHint(double min, double max) {
  return "expected " + ShortNumber(min) + " to " + ShortNumber(max);
}

std::string UnknownKeyMessage(std::string_view key, std::string_view where) {
  return "unknown key " + Quoted(key) + " " + std::string(where);
}

}  // namespace trainlock
