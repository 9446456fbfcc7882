// Acquire loads and release stores on plain words that another process or thread shares (std::atomic_ref): for
// memory mapped from elsewhere, which holds plain integers rather than std::atomic (the copy engines' boards, the
// host rings' words).
#pragma once

#include <atomic>

namespace canopy {

template <typename T>
T load_acquire(const T& word) {
  return std::atomic_ref<T>(const_cast<T&>(word)).load(std::memory_order_acquire);
}

template <typename T>
void store_release(T& word, T value) {
  std::atomic_ref<T>(word).store(value, std::memory_order_release);
}

}  // namespace canopy
