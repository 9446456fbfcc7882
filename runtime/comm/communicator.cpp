// Communicator (communicator.hpp): a handle over one way of running (CallPath, call_path.hpp), which the factory
// (factory/) picked at create, join or split. Every member here forwards to it (alltoall, gather, scatter and
// send_recv, which build program calls or groups above it, are in communicator_exchanges.cpp); the queries of what a
// call of a size takes read its protocol table and configuration (KernelRules).
#include "runtime/comm/communicator.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "runtime/comm/alltoall_programs.hpp"
#include "runtime/comm/call_path.hpp"
#include "runtime/comm/kernel_rules.hpp"

namespace canopy {

Communicator::Communicator(std::unique_ptr<CallPath> path)
    : alltoall_(std::make_unique<AlltoallPrograms>()), path_(std::move(path)) {}
Communicator::~Communicator() = default;

int Communicator::ranks() const { return path_->layout().ranks(); }
bool Communicator::multi_process() const { return path_->layout().placement.multi_process(); }
bool Communicator::on_own_buffers() const { return path_->on_own_buffers(); }
bool Communicator::on_peer_buffers() const { return path_->on_peer_buffers(); }
int Communicator::own_ranks() const { return path_->own_ranks(); }
int Communicator::first_own_rank() const { return path_->first_own_rank(); }
int Communicator::devices() const { return path_->layout().placement.devices(); }
int Communicator::device_of_rank(int rank) const { return path_->layout().placement.ordinal_of_rank.at(rank); }
const std::vector<int>& Communicator::device_ordinals() const { return path_->layout().placement.ordinals; }
const std::vector<std::string>& Communicator::rank_names() const { return path_->layout().placement.rank_names; }
const Topology& Communicator::topology() const { return path_->layout().topology; }
std::string Communicator::topology_source() const { return path_->layout().topology_source; }
const std::string& Communicator::machine_key() const { return path_->machine_key(); }
std::filesystem::path Communicator::tuning_path() const { return path_->tuning_path(); }

// --- what a call of a given size takes -------------------------------------------------------------------------------

bool Communicator::is_large(Collective collective, std::uint64_t count, DataType dtype) const {
  return large_at(path_->layout().config, size_bytes(collective, count, dtype, ranks()));
}
bool Communicator::is_large(const algo::Program& program, std::uint64_t count, DataType dtype) const {
  return large_at(path_->layout().config, size_bytes(program, count, dtype));
}
bool Communicator::is_huge(Collective collective, std::uint64_t count, DataType dtype) const {
  return huge_at(path_->layout().config, size_bytes(collective, count, dtype, ranks()));
}
bool Communicator::is_huge(const algo::Program& program, std::uint64_t count, DataType dtype) const {
  return huge_at(path_->layout().config, size_bytes(program, count, dtype));
}
std::int64_t Communicator::tuned_chunk(Collective collective, std::uint64_t count, DataType dtype) const {
  return path_->tuned_chunk(collective, count, dtype);
}
Protocol Communicator::protocol(Collective collective, std::uint64_t count, DataType dtype, bool in_place) const {
  return path_->protocols().choose(collective, size_bytes(collective, count, dtype, ranks()), in_place).protocol;
}
bool Communicator::is_low_latency(Collective collective, std::uint64_t count, DataType dtype) const {
  return protocol(collective, count, dtype) == Protocol::low_latency;
}
bool Communicator::is_ll128(Collective collective, std::uint64_t count, DataType dtype) const {
  return protocol(collective, count, dtype) == Protocol::ll128;
}
bool Communicator::is_direct(Collective collective, std::uint64_t count, DataType dtype, bool in_place) const {
  return protocol(collective, count, dtype, in_place) == Protocol::direct;
}
bool Communicator::is_two_shot(Collective collective, std::uint64_t count, DataType dtype, bool in_place) const {
  const ProtocolPick pick =
      path_->protocols().choose(collective, size_bytes(collective, count, dtype, ranks()), in_place);
  // Across processes on own buffers the direct kernels are one-shot.
  KernelRules forms;
  forms.own_buffers = path_->on_own_buffers();
  return forms.as_run(with_protocol(CollectiveSpec{collective, dtype}, pick)).two_shot;
}
bool Communicator::is_copy_engine(Collective collective, std::uint64_t count, DataType dtype) const {
  return path_->engines_take(collective, count * static_cast<std::uint64_t>(size_of(dtype)));
}
std::uint64_t Communicator::staged_count(Collective collective, std::uint64_t count, DataType dtype, int root) const {
  return path_->staged_count(collective, count, dtype, root);
}
Communicator::Choice Communicator::choice(Collective collective, std::uint64_t count, DataType dtype, int root,
                                          bool in_place) const {
  return path_->choice(collective, count, dtype, root, in_place);
}
CollectiveSpec Communicator::spec_of(Collective collective, std::uint64_t count, DataType dtype, ReduceOp op, int root,
                                     bool in_place_call) {
  CollectiveCall call;
  call.collective = collective;
  call.count = count;
  call.dtype = dtype;
  call.op = op;
  call.root = root;
  return path_->spec_of(call, in_place_call);
}

// --- calls -------------------------------------------------------------------------------------------------------

Status Communicator::run(const CollectiveCall& call) { return path_->run(call); }
Status Communicator::prepare(std::span<const CollectiveSpec> specs) { return path_->prepare(specs); }
Status Communicator::prepare(const CollectiveCall& call) { return path_->prepare(call); }
Status Communicator::info(const CollectiveSpec& spec, CollectiveInfo* out) { return path_->info(spec, out); }
Status Communicator::exchange(std::string mine, std::vector<std::string>* all) {
  return path_->exchange(std::move(mine), all);
}
Status Communicator::scale(int rank, void* out, const void* in, std::uint64_t count, DataType dtype,
                           const void* device_scalar, const void* host_scalar, cudaStream_t stream) {
  return path_->scale(rank, out, in, count, dtype, device_scalar, host_scalar, stream);
}
Status Communicator::abort() { return path_->abort(); }
Status Communicator::fail(const std::string& why) { return path_->fail(why); }
void Communicator::leave_at_exit() { path_->leave_at_exit(); }
Status Communicator::async_error() { return path_->async_error(); }

// --- the collectives ---------------------------------------------------------------------------------------------

Status Communicator::run_program(const algo::Program& program, std::span<const void* const> send,
                                 std::span<void* const> recv, std::uint64_t count, DataType dtype, ReduceOp op,
                                 std::span<const cudaStream_t> streams) {
  CollectiveCall call{Collective::allreduce, send, recv, count, dtype, op, 0, streams};
  call.program = &program;
  return run(call);
}
Status Communicator::broadcast(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count,
                               DataType dtype, int root, std::span<const cudaStream_t> streams) {
  return run(CollectiveCall{Collective::broadcast, send, recv, count, dtype, ReduceOp::sum, root, streams});
}
Status Communicator::reduce(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count,
                            DataType dtype, ReduceOp op, int root, std::span<const cudaStream_t> streams) {
  return run(CollectiveCall{Collective::reduce, send, recv, count, dtype, op, root, streams});
}
Status Communicator::allreduce(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t count,
                               DataType dtype, ReduceOp op, std::span<const cudaStream_t> streams) {
  return run(CollectiveCall{Collective::allreduce, send, recv, count, dtype, op, 0, streams});
}
Status Communicator::allgather(std::span<const void* const> send, std::span<void* const> recv, std::uint64_t send_count,
                               DataType dtype, std::span<const cudaStream_t> streams) {
  return run(CollectiveCall{Collective::allgather, send, recv, send_count, dtype, ReduceOp::sum, 0, streams});
}
Status Communicator::reduce_scatter(std::span<const void* const> send, std::span<void* const> recv,
                                    std::uint64_t recv_count, DataType dtype, ReduceOp op,
                                    std::span<const cudaStream_t> streams) {
  return run(CollectiveCall{Collective::reducescatter, send, recv, recv_count, dtype, op, 0, streams});
}

}  // namespace canopy
