// A finding: something wrong with a valid project (exit code 1), as opposed to bad input
// (exit code 2). Each has a stable id, the position it is about and a remedy.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "base/diagnostic.h"

namespace trainlock {

struct Finding {
  std::string id;    // e.g. "compat.driver"
  std::string path;  // file the finding points into
  SourcePos pos;
  std::string message;
  std::string remedy;

  // "path:line:column: finding [id]: message; remedy: ..."
  std::string Format() const;
  nlohmann::json ToJson() const;
};

}  // namespace trainlock
