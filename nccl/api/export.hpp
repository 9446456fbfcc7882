// CANOPY_NCCL_EXPORT marks a definition of NCCL's C API as exported (the library is built with hidden visibility, and
// canopy_nccl.map lets only nccl* and pnccl* names out). CANOPY_PNCCL_ALIAS(ncclXxx) defines NCCL's profiling alias
// pncclXxx as the same function; it must follow ncclXxx's definition in the same file (GCC's alias rule).
#pragma once

#define CANOPY_NCCL_EXPORT __attribute__((visibility("default")))
#define CANOPY_PNCCL_ALIAS(name) \
  extern "C" CANOPY_NCCL_EXPORT decltype(name) p##name __attribute__((alias(#name)));
