// Reference implementations of fused ops, composed of plain LibTorch ops, that a custom op's
// smoke test is compared against (the lock's [[custom-ops.smoke]] `reference`). Each takes
// the op's arguments as the op received them (tensors, then scalars from the schema) and
// computes in fp32, returning outputs in the first input's dtype.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/torch.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainlock::validate {

// A smoke test that could not run as specified (a dtype, argument or input the op or its
// reference cannot take). It never leaves ops/: the smoke test catches it by name and makes it
// an ops.custom smoke_error failure that blames the smoke spec, not the op.
class SmokeProblem : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using OpReference = std::function<std::vector<torch::Tensor>(const std::vector<c10::IValue>&)>;

// nullptr for an unknown name.
const OpReference* FindOpReference(const std::string& name);

// Every name FindOpReference knows, sorted (kept equal to trainlock's SmokeReferenceNames()).
std::vector<std::string> OpReferenceNames();

}  // namespace trainlock::validate
