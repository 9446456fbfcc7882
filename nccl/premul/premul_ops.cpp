// PreMulSum operator bookkeeping (premul_ops.hpp).
#include "nccl/premul/premul_ops.hpp"

#include <fmt/format.h>

#include <cstring>

#include "nccl/base/last_error.hpp"

namespace canopy::nccl_api {

ncclResult_t PreMulOps::create(ncclRedOp_t* op, const void* scalar, ncclDataType_t datatype,
                               ncclScalarResidence_t residence, std::size_t type_size, const std::string& who) {
  if (!op) return fail(ncclInvalidArgument, fmt::format("{}: op is NULL: pass where to write the operator", who));
  if (!scalar)
    return fail(ncclInvalidArgument, fmt::format("{}: scalar is NULL: pass the address of the scalar (host memory "
                                                 "for ncclScalarHostImmediate, device memory for ncclScalarDevice)",
                                                 who));
  if (static_cast<int>(datatype) < 0 || static_cast<int>(datatype) >= ncclNumTypes || type_size == 0 ||
      type_size > sizeof(std::uint64_t))
    return fail(ncclInvalidArgument, fmt::format("{}: datatype {} is not an ncclDataType_t (0 .. {})", who,
                                                 static_cast<int>(datatype), ncclNumTypes - 1));
  PreMulOp made;
  made.datatype = datatype;
  made.residence = residence;
  switch (residence) {
    case ncclScalarDevice: made.scalar.device = scalar; break;
    case ncclScalarHostImmediate: std::memcpy(&made.scalar.host, scalar, type_size); break;
    default:
      return fail(ncclInvalidArgument, fmt::format("{}: residence {} is neither ncclScalarDevice (0) nor "
                                                   "ncclScalarHostImmediate (1)",
                                                   who, static_cast<int>(residence)));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t index = 0;
  while (index < ops_.size() && ops_[index]) ++index;
  if (index == ops_.size()) ops_.emplace_back();
  ops_[index] = made;
  *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(index));
  return ncclSuccess;
}

ncclResult_t PreMulOps::destroy(ncclRedOp_t op, const std::string& who) {
  const long index = static_cast<long>(op) - ncclNumOps;
  if (index < 0)
    return fail(ncclInvalidArgument, fmt::format("{}: op {} is a built-in operator: only operators "
                                                 "ncclRedOpCreatePreMulSum made can be destroyed",
                                                 who, static_cast<int>(op)));
  std::lock_guard<std::mutex> lock(mutex_);
  if (index >= static_cast<long>(ops_.size()) || !ops_[index])
    return fail(ncclInvalidArgument, fmt::format("{}: op {} is not an operator ncclRedOpCreatePreMulSum made on this "
                                                 "communicator (or it was destroyed already)",
                                                 who, static_cast<int>(op)));
  ops_[index].reset();
  return ncclSuccess;
}

std::optional<PreMulOp> PreMulOps::find(ncclRedOp_t op) const {
  const long index = static_cast<long>(op) - ncclNumOps;
  std::lock_guard<std::mutex> lock(mutex_);
  if (index < 0 || index >= static_cast<long>(ops_.size())) return std::nullopt;
  return ops_[index];
}

void PreMulOps::set_real(ncclRedOp_t op, ncclRedOp_t real) {
  const long index = static_cast<long>(op) - ncclNumOps;
  std::lock_guard<std::mutex> lock(mutex_);
  if (index >= 0 && index < static_cast<long>(ops_.size()) && ops_[index]) ops_[index]->real = real;
}

int PreMulOps::live() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int n = 0;
  for (const auto& o : ops_) n += o ? 1 : 0;
  return n;
}

}  // namespace canopy::nccl_api
