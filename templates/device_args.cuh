// DeviceArgs: the one plain struct every generated kernel receives (MSCCL++'s device handle). It holds every rank's
// buffer and flag addresses, so kernels never assume one process. Included by device code (NVRTC) and by the host
// runtime (g++) alike: no CUDA keywords here. The static_asserts at the end hold both compilers to one layout, the
// one device_args_layout describes for the host's launches (runtime/launch/device_args_image.hpp).
#pragma once

namespace canopy {

// One rank's memory as the kernels see it. `send`/`recv` are the user's buffers of this collective call;
// `scratch` (FIFO slots that other ranks fill) and `flags` (counters) are owned by the communicator.
struct RankPointers {
  const void* send;
  void* recv;
  void* scratch;
  unsigned long long* flags;  // zeroed once at allocation, never reset: counters only grow
};

// kRanks is the plan's rank count. count: elements per rank in NCCL's convention (allgather: send count,
// reduce-scatter: receive count, otherwise the buffer's count). The launch's epoch is counted from 1 and equal on
// every rank for one collective call; flags carry it in their top 32 bits, so a value from an earlier launch is
// always smaller than any value of this one. epoch: the host's count of the launch, or 0 once the communicator has
// had calls captured into CUDA graphs (a replay repeats its arguments): then each GPU's launch counter says it.
// launches: by device index (the kernel's `device` argument; entries past the launch's devices are unused), that
// GPU's launch counter for the kernel (its own, or its protocol's), zeroed once (flags.cuh: begin_launch).
// abort: the communicator's abort word (host memory mapped for the GPU; null: none): once non-zero, every wait gives
// up, so a launch whose peers are gone or that the host aborted ends (its outputs are then undefined).
template <int kRanks>
struct DeviceArgs {
  unsigned long long count;
  unsigned long long epoch;
  unsigned long long* launches[kRanks];
  RankPointers rank[kRanks];
  const volatile unsigned int* abort;
};

// Each counter sits alone on a 128-byte line (16 x 8 bytes) so remote writers and local spinners do not share.
constexpr int kFlagStride = 16;

// A member's byte offset as a constant, without <cstddef> (NVRTC has none): EDG's __INTADDR__ under NVRTC, the
// builtin under g++ and Clang (the parse check, codegen/cuda_parse_check.hpp, defines __CUDACC_RTC__ too).
#if defined(__CUDACC_RTC__) && !defined(__clang__)
#define CANOPY_OFFSET_OF(type, member) ((unsigned long long)__INTADDR__(&(((type*)0)->member)))
#else
#define CANOPY_OFFSET_OF(type, member) __builtin_offsetof(type, member)
#endif

// Where DeviceArgs<N>'s members lie, for a rank count the host knows only at run time: byte offsets, and the size of
// the whole. Read off the struct itself (DeviceArgs<1> and DeviceArgs<2>): each array grows by one element per rank
// and what follows it moves by as much, since every member is 8 bytes wide and aligned (no padding appears).
struct DeviceArgsLayout {
  unsigned long long count, epoch, launches, rank, abort, size;
};

constexpr DeviceArgsLayout device_args_layout(int ranks) {
  typedef DeviceArgs<1> One;
  typedef DeviceArgs<2> Two;
  return DeviceArgsLayout{
      CANOPY_OFFSET_OF(One, count),
      CANOPY_OFFSET_OF(One, epoch),
      CANOPY_OFFSET_OF(One, launches),
      CANOPY_OFFSET_OF(One, rank) + (ranks - 1) * (CANOPY_OFFSET_OF(Two, rank) - CANOPY_OFFSET_OF(One, rank)),
      CANOPY_OFFSET_OF(One, abort) + (ranks - 1) * (CANOPY_OFFSET_OF(Two, abort) - CANOPY_OFFSET_OF(One, abort)),
      sizeof(One) + (ranks - 1) * (sizeof(Two) - sizeof(One))};
}

// Whether DeviceArgs<kRanks> lies where device_args_layout(kRanks) says, member by member.
template <int kRanks>
constexpr bool device_args_layout_holds() {
  typedef DeviceArgs<kRanks> Args;
  return CANOPY_OFFSET_OF(Args, count) == device_args_layout(kRanks).count &&
         CANOPY_OFFSET_OF(Args, epoch) == device_args_layout(kRanks).epoch &&
         CANOPY_OFFSET_OF(Args, launches) == device_args_layout(kRanks).launches &&
         CANOPY_OFFSET_OF(Args, rank) == device_args_layout(kRanks).rank &&
         CANOPY_OFFSET_OF(Args, abort) == device_args_layout(kRanks).abort &&
         sizeof(Args) == device_args_layout(kRanks).size;
}

static_assert(sizeof(void*) == 8 && sizeof(unsigned long long) == 8, "DeviceArgs assumes 64-bit pointers and counters");
static_assert(sizeof(RankPointers) == 4 * sizeof(void*), "RankPointers is four pointers, unpadded");
static_assert(device_args_layout(2).rank == 16 + 2 * 8 && device_args_layout(2).abort == 16 + 2 * 8 + 2 * 32 &&
                  device_args_layout(2).size == 16 + 2 * 8 + 2 * 32 + 8,
              "DeviceArgs<N>: count, epoch, N launch counters, N RankPointers, the abort word");
static_assert(device_args_layout_holds<1>() && device_args_layout_holds<3>() && device_args_layout_holds<8>() &&
                  device_args_layout_holds<16>() && device_args_layout_holds<1000>(),
              "DeviceArgs<N> lies where device_args_layout(N) says");

}  // namespace canopy
