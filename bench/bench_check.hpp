// CHECK for the GPU benchmarks (bench/*_bench.cpp): a failed CUDA runtime call prints the call, where, and CUDA's
// reason, then exits 1. Benchmarks measure; they have nothing to recover to.
#pragma once

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdlib>

#define CHECK(x)                                                                                    \
  do {                                                                                              \
    if (cudaError_t e_ = (x); e_ != cudaSuccess) {                                                  \
      fmt::print(stderr, "{}:{}: {} failed: {}\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                 \
    }                                                                                               \
  } while (0)
