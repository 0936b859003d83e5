// The c10d store under a RankStore, for the code that builds process groups on it
// (collectives.cc). Includes LibTorch's distributed headers: keep it out of torch-free files.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "rank_store.h"

namespace trainlock::validate {

struct RankStore::Impl {
  c10::intrusive_ptr<c10d::Store> store;
};

inline c10::intrusive_ptr<c10d::Store> NativeStore(RankStore& store) {
  return store.impl().store;
}

}  // namespace trainlock::validate
