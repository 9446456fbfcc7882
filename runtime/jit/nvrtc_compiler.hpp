// compile_cuda: CUDA C++ source + in-memory headers -> CUBIN (and PTX on request) with NVRTC, plus what ptxas says
// about each kernel (registers, spills, shared memory, stack). NVRTC needs no GPU or driver.
#pragma once

#include <string>
#include <vector>

#include "codegen/source_file.hpp"

namespace canopy {

struct CompileOptions {
  std::string arch = "sm_90";              // --gpu-architecture
  bool keep_ptx = false;                   // also return the PTX
  std::vector<std::string> extra_options;  // passed to NVRTC as they are
};

struct KernelStats {
  std::string name;  // mangled for device functions, plain for extern "C" entries
  int registers = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int shared_bytes = 0;
  int stack_bytes = 0;
};

struct CompiledModule {
  std::string cubin;
  std::string ptx;  // empty unless keep_ptx
  std::string log;  // NVRTC's log (ptxas's verbose lines included)
  std::vector<KernelStats> kernels;
  double compile_ms = 0;
};

// Throws canopy::Error carrying NVRTC's log (FILE(LINE): error: ..., headers named as given) when the source does not
// compile, naming the source and the architecture; an architecture without CUBIN (compute_90) or unknown to this
// NVRTC is refused with the list it supports.
CompiledModule compile_cuda(const SourceFile& source, const std::vector<SourceFile>& headers,
                            const CompileOptions& options);

// The NVRTC version linked, e.g. "13.0".
std::string nvrtc_version();

// Per-function statistics from ptxas's verbose output ("Function properties for X", "Used N registers").
std::vector<KernelStats> parse_ptxas_stats(const std::string& log);

}  // namespace canopy
