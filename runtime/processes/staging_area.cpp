// StagingArea growth through the transport (see staging_area.hpp).
#include "runtime/processes/staging_area.hpp"

#include <bit>

namespace canopy {

namespace {
std::size_t rounded(std::size_t bytes) { return std::bit_ceil(std::max<std::size_t>(bytes, std::size_t{1} << 20)); }
}  // namespace

void StagingArea::grow(PeerMemory& peers, std::size_t send, std::size_t recv, bool keep_old) {
  // Never smaller than before on either side: an allgather's large receive region must survive a reduce-scatter's
  // large send region, or calls captured later find the area too small for sizes they already ran eagerly.
  const std::size_t s = rounded(std::max(send, send_bytes)), r = rounded(std::max(recv, recv_bytes));
  for (void* p : base)
    if (keep_old)
      retired.push_back(p);
    else
      peers.free(p);
  base.clear();
  send_bytes = recv_bytes = 0;
  base = peers.allocate_zeroed([&](int) { return s + r; });
  send_bytes = s;
  recv_bytes = r;
}

void StagingArea::release(PeerMemory& peers) {
  for (void* p : base) peers.free(p);
  for (void* p : retired) peers.free(p);
  base.clear();
  retired.clear();
  send_bytes = recv_bytes = 0;
}

}  // namespace canopy
