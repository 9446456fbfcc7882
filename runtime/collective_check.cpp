// check_output and the host reference (see collective_check.hpp).
#include "runtime/collective_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>

#include "runtime/test_pattern.hpp"

namespace canopy {

namespace {

double unit_roundoff(DataType t) {
  switch (t) {
    case DataType::f16: return std::ldexp(1.0, -11);
    case DataType::bf16: return std::ldexp(1.0, -8);
    case DataType::f32: return std::ldexp(1.0, -24);
    case DataType::f64: return std::ldexp(1.0, -53);
    default: return 0;  // integers: exact
  }
}

// Integer reductions wrap at the type's width, as the GPU's arithmetic does.
std::int64_t wrap(std::int64_t v, DataType t) {
  switch (t) {
    case DataType::i32: return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
    case DataType::u8: return static_cast<std::uint8_t>(v);
    default: return v;
  }
}

struct Acc {
  double value = 0;
  double magnitude = 0;  // sum of |inputs| (sum) or |product| (prod): what the tolerance scales
  std::int64_t int_value = 0;
  bool first = true;
};

void combine(Acc& a, double x, const CheckSpec& s) {
  const bool integer = unit_roundoff(s.dtype) == 0;
  if (a.first) {
    a.value = x;
    a.int_value = static_cast<std::int64_t>(x);
    a.magnitude = std::fabs(x);
    a.first = false;
    return;
  }
  switch (s.op) {
    case ReduceOp::sum:
      if (integer) a.int_value = static_cast<std::int64_t>(static_cast<std::uint64_t>(a.int_value) +
                                                           static_cast<std::uint64_t>(static_cast<std::int64_t>(x)));
      a.value += x;
      a.magnitude += std::fabs(x);
      break;
    case ReduceOp::prod:
      if (integer) a.int_value = static_cast<std::int64_t>(static_cast<std::uint64_t>(a.int_value) *
                                                           static_cast<std::uint64_t>(static_cast<std::int64_t>(x)));
      a.value *= x;
      a.magnitude = std::fabs(a.value);
      break;
    case ReduceOp::min:
      a.value = std::min(a.value, x);
      a.int_value = std::min(a.int_value, static_cast<std::int64_t>(x));
      break;
    case ReduceOp::max:
      a.value = std::max(a.value, x);
      a.int_value = std::max(a.int_value, static_cast<std::int64_t>(x));
      break;
  }
}

bool reduces(Collective c) {
  return c == Collective::reduce || c == Collective::allreduce || c == Collective::reducescatter;
}

}  // namespace

std::uint64_t output_elements(const CheckSpec& s, int rank) {
  switch (s.collective) {
    case Collective::reduce: return rank == s.root ? s.count : 0;
    case Collective::allgather: return s.count * static_cast<std::uint64_t>(s.ranks);
    default: return s.count;
  }
}

double expected_value(const CheckSpec& s, int rank, std::uint64_t j, double* tolerance, std::int64_t* exact) {
  if (tolerance) *tolerance = 0;
  const ReduceOp input_op = reduces(s.collective) ? s.op : ReduceOp::sum;
  switch (s.collective) {
    case Collective::broadcast:
    case Collective::allgather: {
      const double v = s.collective == Collective::broadcast
                           ? pattern_value(s.seed, s.root, j, s.dtype, input_op)
                           : pattern_value(s.seed, static_cast<int>(j / s.count), j % s.count, s.dtype, input_op);
      if (exact) *exact = static_cast<std::int64_t>(v);
      return v;
    }
    default: break;
  }
  const std::uint64_t k = s.collective == Collective::reducescatter ? static_cast<std::uint64_t>(rank) * s.count + j : j;
  Acc acc;
  for (int q = 0; q < s.ranks; ++q) combine(acc, pattern_value(s.seed, q, k, s.dtype, s.op), s);
  const double u = unit_roundoff(s.dtype);
  if (u == 0) {  // integers: exact, wrapping at the type's width
    const std::int64_t v = wrap(acc.int_value, s.dtype);
    if (exact) *exact = v;
    return static_cast<double>(v);
  }
  if (tolerance && (s.op == ReduceOp::sum || s.op == ReduceOp::prod))
    *tolerance = (s.ranks + 1) * u * acc.magnitude;
  return acc.value;
}

CheckResult check_output(const CheckSpec& s, int rank, const void* output, unsigned threads) {
  return check_output_part(s, rank, output, 0, output_elements(s, rank), threads);
}

CheckResult check_output_part(const CheckSpec& s, int rank, const void* output, std::uint64_t first,
                              std::uint64_t n, unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
  if (n < 65536) threads = 1;
  const int size = size_of(s.dtype);
  const bool i64 = s.dtype == DataType::i64;
  CheckResult total;
  total.checked = n;
  std::mutex mutex;
  auto work = [&](std::uint64_t begin, std::uint64_t end) {
    std::uint64_t wrong = 0;
    std::vector<std::string> examples;
    for (std::uint64_t j = begin; j < end; ++j) {
      const void* p = static_cast<const char*>(output) + j * size;
      double tol = 0;
      std::int64_t exact = 0;
      const double want = expected_value(s, rank, first + j, &tol, &exact);
      bool ok;
      double got;
      if (i64) {  // compare as integers: doubles lose the low bits of 48-bit values' sums
        std::int64_t g;
        std::memcpy(&g, p, 8);
        got = static_cast<double>(g);
        ok = g == exact;
      } else {
        got = element_value(p, s.dtype);
        ok = std::fabs(got - want) <= tol;  // false for NaN
      }
      if (!ok && ++wrong <= 5)
        examples.push_back(fmt::format("rank {} element {}: got {}, expected {}{}", rank, first + j, got, want,
                                       tol > 0 ? fmt::format(" (tolerance {:.3g})", tol) : ""));
    }
    std::lock_guard<std::mutex> lock(mutex);
    total.wrong += wrong;
    for (std::string& e : examples)
      if (total.examples.size() < 5) total.examples.push_back(std::move(e));
  };
  std::vector<std::thread> pool;
  const std::uint64_t per = (n + threads - 1) / threads;
  for (unsigned t = 1; t < threads; ++t) {
    const std::uint64_t b = std::min(n, t * per), e = std::min(n, (t + 1) * per);
    if (b < e) pool.emplace_back(work, b, e);
  }
  work(0, std::min(n, per));
  for (std::thread& t : pool) t.join();
  return total;
}

}  // namespace canopy
