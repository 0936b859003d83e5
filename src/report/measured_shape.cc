// The observed shape against the config's; see measured_shape.h.
#include "report/measured_shape.h"

#include "report/check_metrics.h"

namespace trainlock {

std::string MeasuredShapeContradiction(const nlohmann::json& measured_shape,
                                       const std::string& precision,
                                       bool activation_checkpointing) {
  if (!measured_shape.is_object()) return "the worker reported no shape";
  const auto seen = ReadMetrics<MeasuredShapeMetrics>(measured_shape);
  const std::string dtype = seen.activation_dtype.value_or("none");
  if (dtype != precision)
    return "activations in " + dtype + ", the config's precision is " + precision;
  if (seen.activation_checkpointing.value_or(!activation_checkpointing) != activation_checkpointing)
    return std::string("activation checkpointing ") + (activation_checkpointing ? "off" : "on") +
           ", the config asks for it " + (activation_checkpointing ? "on" : "off");
  return "";
}

}  // namespace trainlock
