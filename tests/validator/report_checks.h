// One check of a validation report by its id, for the validator's end-to-end tests: the test
// fails (and gets an empty object) when the report has no such check.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace trainlock::testing {

inline const nlohmann::json& ReportCheck(const nlohmann::json& report, const std::string& id) {
  for (const auto& c : report["checks"])
    if (c["id"] == id) return c;
  static const nlohmann::json kMissing = nlohmann::json::object();
  ADD_FAILURE() << "no check " << id;
  return kMissing;
}

}  // namespace trainlock::testing
