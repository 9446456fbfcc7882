// paired_rounds: how canopy bench --vs-nccl compares Canopy with NCCL honestly (issue 70): each size is timed in
// several rounds, each round timing both libraries, the one that goes first alternating from round to round and from
// size to size (so neither always runs on a warmer or a cooler GPU); each library's rounds give a median and a min–max
// spread; the ratio (NCCL's time / Canopy's: above 1, Canopy is faster; the busbw ratio) is the medians', and its range
// the spreads' extremes. A target ratio is met only when the whole range clears it. Pure, tested on any CPU.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace canopy {

// Whether Canopy goes first in round `round` (from 0) of the `size_index`-th size (from 0).
bool canopy_first(std::size_t size_index, int round);

// A library's rounds at one size.
struct Spread {
  double median = 0;
  double min = 0;
  double max = 0;
};
// The median (of an even count: the mean of the middle two), min and max of `values` (none: all 0).
Spread spread_of(std::vector<double> values);

// NCCL's time over Canopy's at one size.
struct PairedRatio {
  double median = 0;  // nccl.median / canopy.median
  double low = 0;     // nccl.min / canopy.max: the least the rounds allow
  double high = 0;    // nccl.max / canopy.min: the most
};
PairedRatio paired_ratio(const Spread& canopy, const Spread& nccl);

enum class TargetVerdict {
  met,       // low >= target: every pairing of the rounds clears it
  missed,    // high < target: none does
  overlaps,  // the range straddles it: not met, and more rounds or a quieter machine may tell
};
TargetVerdict verdict(const PairedRatio& ratio, double target);
const char* to_string(TargetVerdict v);  // "met", "missed", "overlaps"

// "0.97–1.04" as the table prints a range.
std::string range_text(double low, double high);

}  // namespace canopy
