// MSCCL-IR XML, the interchange format msccl-tools writes and the MSCCL runtime reads, for algorithm programs
// (dsl/algorithm.hpp):
//
//   <algo name=".." proto="Simple" nchannels="1" nchunksperloop="4" ngpus="4" coll="allreduce" inplace="0">
//     <gpu id="0" i_chunks="4" o_chunks="4" s_chunks="0">
//       <tb id="0" send="1" recv="-1" chan="0">
//         <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
//
// Export (msccl_export.cpp) writes one thread block per (peer, direction, channel) and per channel for local steps, a
// step per statement on each rank it touches (send `s` on the sender; `r` or `rrc` on the receiver; `cpy` or `re` when
// local), cross-block dependences as depid/deps (extra ones as `nop` steps), and every attribute MSCCL's executor
// requires, within its limits (else canopy::Error).
//
// Import (msccl_import.cpp) reads what msccl-tools writes: inplace 0 and 1 for every collective (the layouts of
// msccl_layout.hpp), nchunksperloop with each GPU's i_chunks/o_chunks/s_chunks (0 for an unused buffer), any number
// of instances, proto Simple/LL/LL128 (validated; Canopy's runtime picks its own protocol), step types s, r, rcs, rrs,
// rrc, rrcs, cpy, re and nop with depid/deps/hasdep. It matches the k-th send of each connection and channel with its
// k-th receive, orders the steps by thread-block order, dependences and matches (a cycle is a deadlock) and gives the
// program back for the checker. coll is the collective's name, "alltoall", or "custom": MSCCL-IR carries no
// post-condition, so an imported custom program promises nothing (every output is free; reads, races, deadlocks and
// sizes are still checked). Errors read ORIGIN:LINE: error: MESSAGE, naming the <gpu>/<tb>/<step> and the fix.
#pragma once

#include <string>
#include <string_view>

#include "dsl/algorithm.hpp"

namespace canopy::algo {

std::string to_msccl_xml(const Program& program);
Program from_msccl_xml(std::string_view text, std::string_view origin);

}  // namespace canopy::algo
