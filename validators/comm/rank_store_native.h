// The c10d store under a RankStore, for the code that builds process groups on it
// (collectives.cc). Includes LibTorch's distributed headers: keep it out of torch-free files.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "comm/rank_store.h"

namespace trainlock::validate {

struct RankStore::Impl {
  c10::intrusive_ptr<c10d::Store> store;
};

inline c10::intrusive_ptr<c10d::Store> NativeStore(RankStore& store) {
  return store.impl().store;
}

// A c10d store value holds bytes; ours are text.
inline std::vector<uint8_t> StoreValue(const std::string& text) {
  return {text.begin(), text.end()};
}
inline std::string StoreText(const std::vector<uint8_t>& value) {
  return {value.begin(), value.end()};
}

}  // namespace trainlock::validate
