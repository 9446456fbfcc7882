// ncclRedOpCreatePreMulSum and ncclRedOpDestroy: on a Canopy communicator, operators of this rank (premul_ops.hpp),
// made on the real NCCL communicator beside it too when there is one (so a forwarded call can take them); the real
// NCCL's handles go to it.
#include <fmt/format.h>
#include <nccl.h>

#include "nccl/api/export.hpp"
#include "nccl/api/forward.hpp"
#include "nccl/base/last_error.hpp"
#include "nccl/base/nccl_types.hpp"
#include "nccl/comm/comm_handle.hpp"
#include "nccl/real/real_nccl.hpp"

using namespace canopy::nccl_api;

extern "C" {

CANOPY_NCCL_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                                         ncclScalarResidence_t residence, ncclComm_t comm) {
  const char* fn = "ncclRedOpCreatePreMulSum";
  if (comm && !is_canopy_comm(comm)) return forward(fn, comm, op, scalar, datatype, residence, comm);
  if (const ncclResult_t r = check_comm(comm, fn, /*pending_ok=*/true); r != ncclSuccess) return r;
  const std::size_t size = is_nccl_type(datatype) ? nccl_type_size(datatype) : 0;
  if (const ncclResult_t r = comm->premul.create(op, scalar, datatype, residence, size, describe(comm, fn));
      r != ncclSuccess)
    return r;
  if (comm->real) {
    using F = ncclResult_t (*)(ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t, ncclComm_t);
    ncclRedOp_t real = ncclNumOps;
    if (auto f = real_nccl<F>(fn); f && f(&real, scalar, datatype, residence, comm->real) == ncclSuccess)
      comm->premul.set_real(*op, real);
  }
  return ncclSuccess;
}

CANOPY_NCCL_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  const char* fn = "ncclRedOpDestroy";
  if (comm && !is_canopy_comm(comm)) return forward(fn, comm, op, comm);
  if (const ncclResult_t r = check_comm(comm, fn, /*pending_ok=*/true); r != ncclSuccess) return r;
  const std::optional<PreMulOp> made = comm->premul.find(op);
  if (const ncclResult_t r = comm->premul.destroy(op, describe(comm, fn)); r != ncclSuccess) return r;
  if (comm->real && made && made->real != ncclNumOps)
    if (auto f = real_nccl<ncclResult_t (*)(ncclRedOp_t, ncclComm_t)>(fn)) (void)f(made->real, comm->real);
  return ncclSuccess;
}

}  // extern "C"

CANOPY_PNCCL_ALIAS(ncclRedOpCreatePreMulSum)
CANOPY_PNCCL_ALIAS(ncclRedOpDestroy)
