// What a training step's observed shape (train.step's measured_shape, read by the worker from
// its tensors and trainer) contradicts of the config's: one rule for the validator, which fails
// the step, and for the gate, which refuses a pass that carries the contradiction.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace trainlock {

// "" when `measured_shape` agrees with the config's precision and activation checkpointing;
// else why not ("activations in bf16, the config's precision is fp32"). An absent or
// non-object measured_shape contradicts it too: the step states nothing it observed.
std::string MeasuredShapeContradiction(const nlohmann::json& measured_shape,
                                       const std::string& precision, bool activation_checkpointing);

}  // namespace trainlock
