// A group's sends and receives posted to their communicators' exchanges and waited for (group_point_to_point.hpp).
#include "nccl/group/group_point_to_point.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <utility>

#include "core/error.hpp"
#include "nccl/base/last_error.hpp"
#include "nccl/comm/local_failure.hpp"
#include "runtime/transport/bootstrap/bootstrap_options.hpp"

namespace canopy::nccl_api {

std::chrono::milliseconds ranks_wait() {
  try {
    return bootstrap_timeout_from_environment();
  } catch (const Error&) {
    return std::chrono::seconds(120);  // a malformed value was reported at init
  }
}

void number_alltoall_calls(std::span<PointToPointPart> parts) {
  std::map<const ncclComm*, std::uint32_t> alltoalls;  // per handle (a rank of one communicator)
  for (PointToPointPart& p : parts) {
    if (p.ops.empty() || p.ops.front().alltoall_call == 0) continue;
    const std::uint32_t number = ++alltoalls[p.comm];
    for (PointToPoint& op : p.ops) op.alltoall_call = number;
  }
}

PostedPointToPoint::PostedPointToPoint(std::vector<PointToPointPart> parts) : parts_(std::move(parts)) {
  for (std::size_t k = 0; k < parts_.size(); ++k) {
    const PointToPointPart& p = parts_[k];
    if (p.comm->state != CommState::ready) {
      if (not_ready_ == ncclSuccess) {
        not_ready_ = ncclInvalidUsage;
        not_ready_text_ = fmt::format("{} was not issued: its communicator is no longer ready ({})", p.function,
                                      p.comm->init_error.empty() ? "destroyed" : p.comm->init_error);
      }
      continue;
    }
    Batch* batch = nullptr;
    for (Batch& b : batches_)
      if (b.shared == p.comm->shared) batch = &b;
    if (!batch) {
      batches_.push_back(Batch{p.comm->shared, {}, 0, false});
      batch = &batches_.back();
    }
    batch->parts.push_back(k);
  }
  if (not_ready_ != ncclSuccess) return;  // nothing posted: failed_at_post reports it
  number_alltoall_calls(parts_);
  for (Batch& b : batches_) {
    std::vector<PointToPoint> ops;
    for (std::size_t k : b.parts) ops.insert(ops.end(), parts_[k].ops.begin(), parts_[k].ops.end());
    b.ticket = b.shared->point_to_point().post(std::move(ops));
    b.posted = true;
  }
}

ncclResult_t PostedPointToPoint::refused(const Batch& b, const Status& s, const std::string& who) {
  if (s.ok()) return ncclSuccess;
  const ncclResult_t r = nccl_api::result_of(s.code());
  const std::string text = who + s.message();
  for (std::size_t k : b.parts) fail_communicator_on_local_error(parts_[k].comm, r, parts_[k].function, text);
  return fail(r, text);
}

ncclResult_t PostedPointToPoint::failed_at_post(const std::string& who) {
  ncclResult_t result = ncclSuccess;
  std::string text;
  if (not_ready_ != ncclSuccess) {
    result = not_ready_;
    text = who + not_ready_text_;
  }
  for (const Batch& b : batches_) {
    if (result != ncclSuccess || !b.posted) break;
    if (const std::optional<Status> s = b.shared->point_to_point().result(b.ticket); s && !s->ok()) {
      result = refused(b, *s, who);
      text = last_error();
    }
  }
  if (result == ncclSuccess) return ncclSuccess;
  for (Batch& b : batches_) {
    if (!b.posted) continue;
    PointToPointExchange& exchange = b.shared->point_to_point();
    if (!exchange.withdraw(b.ticket)) (void)exchange.wait(b.ticket, std::chrono::milliseconds(0));  // issued: let go
    b.posted = false;
  }
  return fail(result, text);
}

ncclResult_t PostedPointToPoint::wait(const std::string& who) {
  if (not_ready_ != ncclSuccess) return fail(not_ready_, who + not_ready_text_);
  ncclResult_t result = ncclSuccess;
  std::string text;
  const std::chrono::milliseconds timeout = batches_.empty() ? std::chrono::milliseconds(0) : ranks_wait();
  for (Batch& b : batches_) {
    if (!b.posted) continue;
    PointToPointExchange& exchange = b.shared->point_to_point();
    const std::optional<Status> s = exchange.wait(b.ticket, timeout);
    b.posted = false;
    if (!s) {
      const PointToPointPart& first = parts_[b.parts.front()];
      const ncclResult_t r =
          fail(ncclInvalidUsage,
               fmt::format("{}the sends and receives of {} (rank {} of {}) waited {} for the matching calls of this "
                           "process's other ranks of the communicator and were withdrawn, nothing of them issued: "
                           "several ranks of one process must make their sends and receives inside one group "
                           "(ncclGroupStart, every rank's calls, ncclGroupEnd), or each rank from its own thread",
                           who, first.function, first.comm->rank, first.comm->nranks,
                           seconds_text(timeout)));
      if (result == ncclSuccess) result = r, text = last_error();
      continue;
    }
    if (!s->ok()) {
      const ncclResult_t r = refused(b, *s, who);
      if (result == ncclSuccess) result = r, text = last_error();
      continue;
    }
    for (std::size_t k : b.parts) {
      const PointToPointPart& p = parts_[k];
      b.shared->log().note(p.function, p.datatype, p.bytes, p.comm->rank, p.comm->nranks,
                           [] { return std::string("served by Canopy, send_recv"); });
    }
  }
  return result == ncclSuccess ? ncclSuccess : fail(result, text);
}

ncclResult_t run_point_to_point_alone(PointToPointPart part) {
  const std::string who = std::string(part.function) + ": ";
  std::vector<PointToPointPart> parts;
  parts.push_back(std::move(part));
  PostedPointToPoint posted(std::move(parts));
  if (const ncclResult_t r = posted.failed_at_post(who); r != ncclSuccess) return r;
  return posted.wait(who);
}

}  // namespace canopy::nccl_api
