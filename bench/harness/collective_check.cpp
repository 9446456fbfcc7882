// check_output and the host reference (see collective_check.hpp).
#include "bench/harness/collective_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>

#include "dsl/algorithm_check.hpp"
#include "runtime/call/collective_call.hpp"
#include "bench/harness/float_tolerance.hpp"
#include "bench/harness/test_pattern.hpp"

namespace canopy {

namespace {

// Integer reductions wrap at the type's width, as the GPU's arithmetic does (the result as int64 bits: u64's top half
// reads negative).
std::int64_t wrap(std::int64_t v, DataType t) {
  switch (t) {
    case DataType::i32: return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
    case DataType::u8: return static_cast<std::uint8_t>(v);
    case DataType::i8: return static_cast<std::int8_t>(static_cast<std::uint8_t>(v));
    case DataType::u32: return static_cast<std::uint32_t>(v);
    default: return v;
  }
}

// avg of integers: the wrapped sum divided by the ranks, truncating, signed or unsigned as the type is.
std::int64_t divide_wrapped(std::int64_t sum, int ranks, DataType t) {
  if (is_unsigned(t)) return static_cast<std::int64_t>(static_cast<std::uint64_t>(sum) / ranks);
  return sum / ranks;
}

double integer_value(std::int64_t exact, DataType t) {
  return is_unsigned(t) ? static_cast<double>(static_cast<std::uint64_t>(exact)) : static_cast<double>(exact);
}

struct Acc {
  double value = 0;
  double magnitude = 0;  // sum of |inputs| (sum) or |product| (prod): what the tolerance scales
  double growth = 1;     // prod: the product of max(1, |input|) (float_tolerance.hpp)
  std::int64_t int_value = 0;
  bool first = true;
};

// Integers' min and max compare as their type does (u64's values may pass 2^63).
std::int64_t integer_min(std::int64_t a, std::int64_t b, DataType t) {
  if (!is_unsigned(t)) return std::min(a, b);
  return static_cast<std::int64_t>(std::min(static_cast<std::uint64_t>(a), static_cast<std::uint64_t>(b)));
}
std::int64_t integer_max(std::int64_t a, std::int64_t b, DataType t) {
  if (!is_unsigned(t)) return std::max(a, b);
  return static_cast<std::int64_t>(std::max(static_cast<std::uint64_t>(a), static_cast<std::uint64_t>(b)));
}

void combine(Acc& a, double x, const CheckSpec& s) {
  const bool integer = !is_floating(s.dtype);
  if (s.op == ReduceOp::prod) a.growth *= std::max(1.0, std::fabs(x));
  if (a.first) {
    a.value = x;
    a.int_value = static_cast<std::int64_t>(x);  // every pattern value is below 2^53: exact
    a.magnitude = std::fabs(x);
    a.first = false;
    return;
  }
  switch (s.op) {
    case ReduceOp::avg:  // a sum here; reference_of divides
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
      a.int_value = integer_min(a.int_value, static_cast<std::int64_t>(x), s.dtype);
      break;
    case ReduceOp::max:
      a.value = std::max(a.value, x);
      a.int_value = integer_max(a.int_value, static_cast<std::int64_t>(x), s.dtype);
      break;
  }
}

}  // namespace

ProgramOutputs::ProgramOutputs(algo::Program p) : program(std::move(p)) {
  const std::vector<std::vector<algo::Contents>> contents = algo::output_contents(program);
  sources.resize(program.ranks());
  for (int r = 0; r < program.ranks(); ++r)
    for (int c = 0; c < program.buffer_chunks(algo::Buffer::output); ++c) {
      if (!algo::expected_output(program, r, c)) {
        sources[r].push_back(std::nullopt);
        continue;
      }
      std::vector<std::pair<int, int>> from;
      for (const auto& [input, times] : contents[r][c])
        for (int t = 0; t < times; ++t) from.push_back(input);
      sources[r].push_back(std::move(from));
    }
}

bool combines(const CheckSpec& s) { return s.program ? s.program->program.reduces() : reduces(s.collective); }

std::uint64_t input_elements(const CheckSpec& s, int rank) {
  if (s.program) return s.count / s.program->program.chunks() * s.program->program.buffer_chunks(algo::Buffer::input);
  return send_elements(s.collective, s.count, s.ranks, rank, s.root);
}

std::uint64_t output_elements(const CheckSpec& s, int rank) {
  if (s.program) return s.count / s.program->program.chunks() * s.program->program.buffer_chunks(algo::Buffer::output);
  return recv_elements(s.collective, s.count, s.ranks, rank, s.root);
}

bool same_output_on_every_rank(const CheckSpec& s) {
  if (!s.program) return s.collective != Collective::reduce && s.collective != Collective::reducescatter;
  const bool exact = !is_floating(s.dtype) || s.op == ReduceOp::min || s.op == ReduceOp::max;
  const auto& sources = s.program->sources;
  for (std::size_t c = 0; c < sources[0].size(); ++c) {
    if (!sources[0][c]) return false;
    std::vector<std::pair<int, int>> first = *sources[0][c];
    if (first.size() > 1 && !exact) return false;
    std::sort(first.begin(), first.end());
    for (std::size_t r = 1; r < sources.size(); ++r) {
      if (!sources[r][c]) return false;
      std::vector<std::pair<int, int>> other = *sources[r][c];
      std::sort(other.begin(), other.end());
      if (other != first) return false;
    }
  }
  return true;
}

namespace {

// The inputs (rank, input element) combined into output element j of `rank` of a program's call; null where the
// goal leaves that element free.
const std::vector<std::pair<int, int>>* program_sources(const CheckSpec& s, int rank, std::uint64_t j,
                                                        std::uint64_t* offset) {
  const std::uint64_t unit = s.count / s.program->program.chunks();
  *offset = j % unit;
  const auto& from = s.program->sources[rank][j / unit];
  return from ? &*from : nullptr;
}

}  // namespace

namespace {
// A reduction's expected value from its accumulator of `inputs` values: integers exact (wrapping at the type's
// width), floats with reduction_tolerance for sums and products.
// avg divides the sum by `ranks` (integers truncating the wrapped sum, as the GPU does; floats one more rounding in the
// arithmetic type and one storing: average_tolerance).
double reference_of(const Acc& acc, int inputs, const CheckSpec& s, double* tolerance, std::int64_t* exact,
                    int ranks) {
  const bool average = s.op == ReduceOp::avg;
  if (!is_floating(s.dtype)) {
    const std::int64_t wrapped = wrap(acc.int_value, s.dtype);
    const std::int64_t v = average ? divide_wrapped(wrapped, ranks, s.dtype) : wrapped;
    if (exact) *exact = v;
    return integer_value(v, s.dtype);
  }
  const double value = average ? acc.value / ranks : acc.value;
  const double sum_tolerance = reduction_tolerance(s.dtype, inputs)(acc.magnitude, acc.growth);
  if (tolerance && (s.op == ReduceOp::sum || s.op == ReduceOp::prod)) *tolerance = sum_tolerance;
  if (tolerance && average) *tolerance = average_tolerance(s.dtype, sum_tolerance, value, ranks);
  if (exact) *exact = static_cast<std::int64_t>(value);
  return value;
}
}  // namespace

double expected_value(const CheckSpec& s, int rank, std::uint64_t j, double* tolerance, std::int64_t* exact) {
  if (tolerance) *tolerance = 0;
  const ReduceOp input_op = combines(s) ? s.op : ReduceOp::sum;
  if (s.program) {
    std::uint64_t offset = 0;
    const std::vector<std::pair<int, int>>* from = program_sources(s, rank, j, &offset);
    if (!from || from->empty()) return 0;  // free, or never written
    const std::uint64_t unit = s.count / s.program->program.chunks();
    Acc acc;
    for (const auto& [q, c] : *from) combine(acc, pattern_value(s.seed, q, c * unit + offset, s.dtype, input_op), s);
    return reference_of(acc, static_cast<int>(from->size()), s, tolerance, exact, 1);
  }
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
  return reference_of(acc, s.ranks, s, tolerance, exact, s.ranks);
}

CheckResult check_output(const CheckSpec& s, int rank, const void* output, unsigned threads) {
  return check_outputs_part(s, {rank}, {output}, 0, output_elements(s, rank), threads);
}

namespace {

// The reference of one output element: pattern values combined with Op in double precision (integers exactly,
// wrapping at T's width), and its tolerance.
struct Reference {
  double want = 0, tol = 0;
  std::int64_t exact = 0;
};

// Combines an element's pattern values one at a time, in the order given, and gives its Reference.
template <DataType T, ReduceOp Op>
struct Accumulation {
  static constexpr bool kProd = Op == ReduceOp::prod;
  double acc = 0, mag = 0, growth = 1;
  std::uint64_t int_acc = 0;

  [[gnu::always_inline]] static double value(std::uint64_t seed, int rank, std::uint64_t index) {
    return pattern_value_of<T, kProd>(pattern_hash(seed, rank, index));
  }
  [[gnu::always_inline]] void add(bool first, double v) {
    if constexpr (is_floating(T)) {
      if constexpr (kProd) growth *= std::max(1.0, std::fabs(v));
      if (first)
        acc = v, mag = std::fabs(v);
      else if constexpr (Op == ReduceOp::sum || Op == ReduceOp::avg)
        acc += v, mag += std::fabs(v);
      else if constexpr (Op == ReduceOp::prod)
        acc *= v, mag = std::fabs(acc);
      else if constexpr (Op == ReduceOp::min)
        acc = std::min(acc, v);
      else
        acc = std::max(acc, v);
    } else {
      // Pattern values are below 2^53 in magnitude: exact through int64; unsigned types compare as unsigned.
      const std::uint64_t u = static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
      if (first)
        int_acc = u;
      else if constexpr (Op == ReduceOp::sum || Op == ReduceOp::avg)
        int_acc += u;
      else if constexpr (Op == ReduceOp::prod)
        int_acc *= u;
      else if constexpr (is_unsigned(T))
        int_acc = Op == ReduceOp::min ? std::min(int_acc, u) : std::max(int_acc, u);
      else if constexpr (Op == ReduceOp::min)
        int_acc = static_cast<std::uint64_t>(std::min(static_cast<std::int64_t>(int_acc), static_cast<std::int64_t>(u)));
      else
        int_acc = static_cast<std::uint64_t>(std::max(static_cast<std::int64_t>(int_acc), static_cast<std::int64_t>(u)));
    }
  }
  // `tolerance`: that of a reduction of n inputs (reduction_tolerance); null for a copy or one input (exact).
  [[gnu::always_inline]] Reference finish(int n, const ReductionTolerance* tolerance) const {
    Reference r;
    if constexpr (is_floating(T)) {
      r.want = Op == ReduceOp::avg ? acc / n : acc;
      if (tolerance && (Op == ReduceOp::sum || Op == ReduceOp::prod)) r.tol = (*tolerance)(mag, growth);
      if constexpr (Op == ReduceOp::avg)
        if (tolerance) r.tol = average_tolerance(T, (*tolerance)(mag), r.want, n);
    } else {
      const std::int64_t wrapped = wrap(static_cast<std::int64_t>(int_acc), T);
      r.exact = Op == ReduceOp::avg ? divide_wrapped(wrapped, n, T) : wrapped;
      r.want = integer_value(r.exact, T);
    }
    return r;
  }
};

// The Reference of the inputs `at(0) .. at(n - 1)` ((rank, index) pairs).
template <DataType T, ReduceOp Op, typename At>
[[gnu::always_inline]] inline Reference reduce_reference(std::uint64_t seed, int n, const ReductionTolerance* tolerance, At at) {
  Accumulation<T, Op> a;
  for (int q = 0; q < n; ++q) {
    const auto [rank, index] = at(q);
    a.add(q == 0, Accumulation<T, Op>::value(seed, rank, index));
  }
  return a.finish(n, tolerance);
}

// Counts a wrong element and keeps the first few as examples (apart, so that judge stays small enough to inline).
[[gnu::noinline]] void report_wrong(double got, const Reference& ref, int rank, std::uint64_t element,
                                    std::uint64_t& wrong, std::vector<std::string>& examples) {
  if (++wrong <= 5)
    examples.push_back(fmt::format("rank {} element {}: got {}, expected {}{}", rank, element, got, ref.want,
                                   ref.tol > 0 ? fmt::format(" (tolerance {:.3g})", ref.tol) : ""));
}

// Compares output element `element` of `rank` (at p) with its reference.
template <DataType T>
[[gnu::always_inline]] inline void judge(const void* p, const Reference& ref, int rank, std::uint64_t element, std::uint64_t& wrong,
                  std::vector<std::string>& examples) {
  if constexpr (T == DataType::i64 || T == DataType::u64) {  // 64 bits: compared exactly, not through a double
    std::int64_t g;
    std::memcpy(&g, p, 8);
    if (g != ref.exact) report_wrong(integer_value(g, T), ref, rank, element, wrong, examples);
  } else {
    const double got = element_value(p, T);
    if (!(std::fabs(got - ref.want) <= ref.tol)) report_wrong(got, ref, rank, element, wrong, examples);  // NaN too
  }
}

// A planned reduction's elements [begin, end) of one rank's output, a block at a time: each input rank's values of
// the whole block in turn, so that the elements' chains of combines run side by side instead of one after another
// (the same combines, in the same order, as reduce_reference).
template <DataType T, ReduceOp Op>
void check_reduction_blocks(const CheckSpec& s, int rank, const void* output, std::uint64_t first,
                            std::uint64_t begin, std::uint64_t end, std::uint64_t& wrong,
                            std::vector<std::string>& examples) {
  constexpr std::uint64_t kBlock = 256;
  const ReductionTolerance tolerance = reduction_tolerance(T, s.ranks);
  const std::uint64_t size = static_cast<std::uint64_t>(size_of(T));
  const std::uint64_t base = s.collective == Collective::reducescatter ? static_cast<std::uint64_t>(rank) * s.count : 0;
  Accumulation<T, Op> block[kBlock];
  for (std::uint64_t b = begin; b < end; b += kBlock) {
    const std::uint64_t m = std::min(kBlock, end - b);
    const std::uint64_t index = base + first + b;
    for (int q = 0; q < s.ranks; ++q)
      for (std::uint64_t i = 0; i < m; ++i) block[i].add(q == 0, Accumulation<T, Op>::value(s.seed, q, index + i));
    for (std::uint64_t i = 0; i < m; ++i)
      judge<T>(static_cast<const char*>(output) + (b + i) * size, block[i].finish(s.ranks, &tolerance), rank,
               first + b + i, wrong, examples);
  }
}

// Checks outputs[k][j] (rank ranks[k], element first + j) for j in [begin, end); a program's free elements are
// skipped (the caller does not count them).
template <DataType T, ReduceOp Op>
void check_range(const CheckSpec& s, const std::vector<int>& ranks, const std::vector<const void*>& outputs,
                 std::uint64_t first, std::uint64_t begin, std::uint64_t end, std::uint64_t& wrong,
                 std::vector<std::string>& examples) {
  const bool reduction = combines(s);
  if (!s.program && reduction && ranks.size() == 1)
    return check_reduction_blocks<T, Op>(s, ranks[0], outputs[0], first, begin, end, wrong, examples);
  const bool same_for_all = !s.program && s.collective != Collective::reducescatter;
  const std::uint64_t size = static_cast<std::uint64_t>(size_of(T));
  const ReductionTolerance tolerance = reduction_tolerance(T, s.ranks);
  const std::uint64_t unit = s.program ? s.count / s.program->program.chunks() : 0;
  // A program's tolerance depends on how many inputs an element combines; computing it (log1p, expm1) per element
  // cost more than the rest of the check, so the last one is kept.
  int tolerance_inputs = -1;
  ReductionTolerance tolerance_of_inputs;
  for (std::uint64_t j = begin; j < end; ++j) {
    Reference ref;
    for (std::size_t k = 0; k < ranks.size(); ++k) {
      if (k == 0 || !same_for_all) {
        const std::uint64_t e = first + j;
        if (s.program) {
          std::uint64_t offset = 0;
          const std::vector<std::pair<int, int>>* from = program_sources(s, ranks[k], e, &offset);
          if (!from) continue;
          const int n = static_cast<int>(from->size());
          if (n > 1 && n != tolerance_inputs) tolerance_of_inputs = reduction_tolerance(T, n), tolerance_inputs = n;
          ref = reduce_reference<T, Op>(s.seed, n, n > 1 ? &tolerance_of_inputs : nullptr, [&](int q) {
            return std::pair{(*from)[q].first, (*from)[q].second * unit + offset};
          });
        } else if (!reduction) {
          const int from = s.collective == Collective::broadcast ? s.root : static_cast<int>(e / s.count);
          const std::uint64_t index = s.collective == Collective::broadcast ? e : e % s.count;
          ref = reduce_reference<T, ReduceOp::sum>(s.seed, 1, nullptr, [&](int) { return std::pair{from, index}; });
        } else {
          const std::uint64_t index =
              s.collective == Collective::reducescatter ? static_cast<std::uint64_t>(ranks[k]) * s.count + e : e;
          ref = reduce_reference<T, Op>(s.seed, s.ranks, &tolerance, [&](int q) { return std::pair{q, index}; });
        }
      }
      judge<T>(static_cast<const char*>(outputs[k]) + j * size, ref, ranks[k], first + j, wrong, examples);
    }
  }
}

using RangeChecker = void (*)(const CheckSpec&, const std::vector<int>&, const std::vector<const void*>&,
                              std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t&, std::vector<std::string>&);

template <DataType T>
RangeChecker checker_for_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return check_range<T, ReduceOp::sum>;
    case ReduceOp::prod: return check_range<T, ReduceOp::prod>;
    case ReduceOp::min: return check_range<T, ReduceOp::min>;
    case ReduceOp::max: return check_range<T, ReduceOp::max>;
    case ReduceOp::avg: return check_range<T, ReduceOp::avg>;
  }
  return check_range<T, ReduceOp::sum>;
}

RangeChecker checker_for(const CheckSpec& s) {
  const bool reduction = combines(s);
  const ReduceOp op = reduction ? s.op : ReduceOp::sum;
  switch (s.dtype) {
    case DataType::f32: return checker_for_op<DataType::f32>(op);
    case DataType::f16: return checker_for_op<DataType::f16>(op);
    case DataType::bf16: return checker_for_op<DataType::bf16>(op);
    case DataType::f64: return checker_for_op<DataType::f64>(op);
    case DataType::i32: return checker_for_op<DataType::i32>(op);
    case DataType::i64: return checker_for_op<DataType::i64>(op);
    case DataType::u8: return checker_for_op<DataType::u8>(op);
    case DataType::i8: return checker_for_op<DataType::i8>(op);
    case DataType::u32: return checker_for_op<DataType::u32>(op);
    case DataType::u64: return checker_for_op<DataType::u64>(op);
    case DataType::f8e4m3: return checker_for_op<DataType::f8e4m3>(op);
    case DataType::f8e5m2: return checker_for_op<DataType::f8e5m2>(op);
  }
  return checker_for_op<DataType::f32>(op);
}

}  // namespace

CheckResult check_outputs_part(const CheckSpec& s, const std::vector<int>& ranks,
                               const std::vector<const void*>& outputs, std::uint64_t first, std::uint64_t n,
                               unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::min(64u, std::thread::hardware_concurrency()));
  if (n * ranks.size() < 65536) threads = 1;
  const RangeChecker check = checker_for(s);
  CheckResult total;
  total.checked = n * ranks.size();
  if (s.program) {  // a program's free chunks are not checked
    const std::uint64_t unit = s.count / s.program->program.chunks();
    for (int r : ranks)
      for (std::uint64_t c = first / unit; unit > 0 && c * unit < first + n; ++c)
        if (!s.program->sources[r][c]) total.checked -= std::min(first + n, (c + 1) * unit) - std::max(first, c * unit);
  }
  std::mutex mutex;
  auto work = [&](std::uint64_t begin, std::uint64_t end) {
    std::uint64_t wrong = 0;
    std::vector<std::string> examples;
    check(s, ranks, outputs, first, begin, end, wrong, examples);
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
