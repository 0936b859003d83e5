// Host memory for checkpoint staging: one block for every tensor of the training state, made
// resident by several threads at once and registered with CUDA in one call (page-locked, so
// the copies from the GPU run at the link's speed). torch's pinned allocator pins tensor by
// tensor, rounding each up to a power of two: 7 s for the pilot's 14.8 GB on an H200 host,
// longer than the steps before the first save, which then waited for it.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace trainlock::validate {

// Empty CPU tensors shaped and typed like `like`, laid out in one block. With `pin` (the state
// lives on a CUDA device) the block is page-locked; when the driver refuses to register it,
// the tensors come from torch's pinned allocator instead. Each tensor keeps the block alive.
std::vector<torch::Tensor> AllocateHostStaging(const std::vector<torch::Tensor>& like, bool pin);

}  // namespace trainlock::validate
