// A stand-in for the real NCCL in the CPU tests of Canopy's group semantics (nccl_group_test.cpp): a shared library
// that the NCCL API loads as "the real NCCL" (CANOPY_NCCL_LIBRARY) and that records which of its functions were
// called, in order, so a test can see how deep its group was opened, whether it was ended or closed without being
// issued (ncclGroupSimulateEnd), and what was forwarded (Send, Recv, AlltoAll, Gather, Scatter, with their counts).
// ncclSend of count 13 fails (ncclInvalidArgument), as a real call refused by the real NCCL; ncclGroupSimulateEnd
// writes an estimate of 12.5 us. Not NCCL: records only.
#include <nccl.h>

#include <string>

namespace {
std::string g_calls;  // "GroupStart;Send(4);GroupEnd;"
int g_depth = 0;
ncclResult_t g_group_error = ncclSuccess;
const char* g_last = "";
}  // namespace

extern "C" {

__attribute__((visibility("default"))) const char* fake_nccl_calls() { return g_calls.c_str(); }
__attribute__((visibility("default"))) void fake_nccl_reset() {
  g_calls.clear();
  g_depth = 0;
  g_group_error = ncclSuccess;
}

__attribute__((visibility("default"))) ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
__attribute__((visibility("default"))) const char* ncclGetErrorString(ncclResult_t) { return "fake error"; }
__attribute__((visibility("default"))) const char* ncclGetLastError(ncclComm_t) { return g_last; }

__attribute__((visibility("default"))) ncclResult_t ncclGroupStart() {
  g_calls += "GroupStart;";
  ++g_depth;
  return ncclSuccess;
}
__attribute__((visibility("default"))) ncclResult_t ncclGroupEnd() {
  g_calls += "GroupEnd;";
  if (g_depth == 0) return ncclInvalidUsage;
  if (--g_depth > 0) return ncclSuccess;
  const ncclResult_t r = g_group_error;
  g_group_error = ncclSuccess;
  return r;
}
__attribute__((visibility("default"))) ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* info) {
  g_calls += "GroupSimulateEnd;";
  if (g_depth == 0) return ncclInvalidUsage;
  if (--g_depth > 0) return ncclSuccess;
  if (info) info->estimatedTime = 12.5f;
  const ncclResult_t r = g_group_error;
  g_group_error = ncclSuccess;
  return r;
}
__attribute__((visibility("default"))) ncclResult_t ncclSend(const void*, size_t count, ncclDataType_t, int,
                                                             ncclComm_t, cudaStream_t) {
  g_calls += "Send(" + std::to_string(count) + ");";
  if (count != 13) return ncclSuccess;
  g_last = "fake: a send of 13 elements is refused";
  if (g_depth > 0) g_group_error = ncclInvalidArgument;
  return ncclInvalidArgument;
}
__attribute__((visibility("default"))) ncclResult_t ncclRecv(void*, size_t count, ncclDataType_t, int, ncclComm_t,
                                                             cudaStream_t) {
  g_calls += "Recv(" + std::to_string(count) + ");";
  return ncclSuccess;
}

__attribute__((visibility("default"))) ncclResult_t ncclAlltoAll(const void*, void*, size_t count, ncclDataType_t,
                                                                 ncclComm_t, cudaStream_t) {
  g_calls += "AlltoAll(" + std::to_string(count) + ");";
  return ncclSuccess;
}
__attribute__((visibility("default"))) ncclResult_t ncclGather(const void*, void*, size_t count, ncclDataType_t, int,
                                                               ncclComm_t, cudaStream_t) {
  g_calls += "Gather(" + std::to_string(count) + ");";
  return ncclSuccess;
}
__attribute__((visibility("default"))) ncclResult_t ncclScatter(const void*, void*, size_t count, ncclDataType_t, int,
                                                                ncclComm_t, cudaStream_t) {
  g_calls += "Scatter(" + std::to_string(count) + ");";
  return ncclSuccess;
}

}  // extern "C"
