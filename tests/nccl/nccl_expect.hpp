// What the NCCL API's CPU tests share: this thread's last error as ncclGetLastError says it, an expectation on a
// call's result and message, and a fake device address for calls refused or deferred before any pointer is used.
#pragma once

#include <gtest/gtest.h>
#include <nccl.h>

#include <cstdint>
#include <string>

namespace canopy::nccl_test {

inline std::string last() { return ncclGetLastError(nullptr); }

inline void* fake(std::uintptr_t a) { return reinterpret_cast<void*>(a); }

}  // namespace canopy::nccl_test

// Expects `call` to return `want` and the last error then to contain `text`.
#define EXPECT_NCCL_ERROR(call, want, text)                                                                       \
  do {                                                                                                            \
    const ncclResult_t r_ = (call);                                                                               \
    EXPECT_EQ(r_, want) << #call << ": " << ::canopy::nccl_test::last();                                          \
    EXPECT_NE(::canopy::nccl_test::last().find(text), std::string::npos) << #call << " says: "                    \
                                                                         << ::canopy::nccl_test::last();          \
  } while (0)
