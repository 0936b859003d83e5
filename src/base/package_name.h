// Python package names as PEP 503 compares them. In base/ because the manifest's reader
// (project/) must refuse two spellings of one package, and the lock's resolver (lock/) keys
// its closure by the same name.
#pragma once

#include <string>
#include <string_view>

namespace trainlock {

// PEP 503 normalisation: lower case, runs of '-', '_' and '.' as one '-'.
std::string NormalizePackageName(std::string_view name);

}  // namespace trainlock
