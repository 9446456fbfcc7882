// MSCCL-IR XML, the interchange format msccl-tools writes and the MSCCL runtime reads, for algorithm programs
// (dsl/algorithm.hpp):
//
//   <algo name=".." proto="Simple" nchannels="1" nchunksperloop="4" ngpus="4" coll="allreduce" inplace="0">
//     <gpu id="0" i_chunks="4" o_chunks="4" s_chunks="0">
//       <tb id="0" send="1" recv="-1" chan="0">
//         <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
//
// Export writes one thread block per (peer, direction, channel) and per channel for local steps, a step per statement
// on each rank it touches (send `s` on the sender; `r` or `rrc` on the receiver; `cpy` or `re` when local), and
// cross-block dependences as depid/deps (extra ones as `nop` steps). Import reads steps of types s, r, rrc, rcs,
// rrcs, cpy, re and nop, matches the k-th send of each connection and channel with its k-th receive, orders all steps
// by thread-block order, dependences and matches, and gives the program back for the checker. In-place programs are
// read for allreduce (the output starts as a copy of the input). coll is the collective's name, "alltoall", or
// "custom" for a custom goal: MSCCL-IR carries no post-condition, so an imported custom program promises nothing
// (every output is free; reads, races, deadlocks and sizes are still checked). Errors read ORIGIN:LINE: error: MESSAGE.
#pragma once

#include <string>
#include <string_view>

#include "dsl/algorithm.hpp"

namespace canopy::algo {

std::string to_msccl_xml(const Program& program);
Program from_msccl_xml(std::string_view text, std::string_view origin);

}  // namespace canopy::algo
