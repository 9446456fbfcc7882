// DeviceArgsImage: the bytes of one DeviceArgs<N> (templates/device_args.cuh) for a rank count known only at run
// time, what a launch passes as the kernels' first argument. Each member is written with its own type where
// device_args_layout(N) puts it; that header's static_asserts hold the struct, as the host and NVRTC lay it out, to
// that layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "templates/device_args.cuh"

namespace canopy {

class DeviceArgsImage {
 public:
  // Sized for `ranks` ranks, every member zero (null pointers).
  void reset(int ranks) {
    layout_ = device_args_layout(ranks);
    words_.assign(layout_.size / sizeof(Word), 0);
  }
  void set_count(std::uint64_t count) { put(layout_.count, static_cast<decltype(Args::count)>(count)); }
  void set_epoch(std::uint64_t epoch) { put(layout_.epoch, static_cast<decltype(Args::epoch)>(epoch)); }
  // Device index d's launch counter (DeviceArgs::launches[d]).
  void set_launch_counter(int d, unsigned long long* counter) { put(layout_.launches + sizeof(counter) * d, counter); }
  void set_rank(int r, const RankPointers& pointers) { put(layout_.rank + sizeof(RankPointers) * r, pointers); }
  void set_abort(const volatile unsigned int* abort) { put(layout_.abort, abort); }

  void* data() { return words_.data(); }
  const void* data() const { return words_.data(); }
  std::size_t size() const { return words_.size() * sizeof(Word); }

 private:
  typedef DeviceArgs<1> Args;   // for the members' types, which no rank count changes
  typedef unsigned long long Word;  // the storage's unit: every member is 8-byte aligned
  template <class T>
  void put(unsigned long long offset, const T& value) {
    std::memcpy(reinterpret_cast<unsigned char*>(words_.data()) + offset, &value, sizeof value);
  }
  DeviceArgsLayout layout_{};
  std::vector<Word> words_;
};

}  // namespace canopy
