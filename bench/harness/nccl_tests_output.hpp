// parse_nccl_tests_output: the stdout of NVIDIA's nccl-tests (all_reduce_perf, all_gather_perf, ...) -> its runs
// (header lines, data rows, footer), plus the lines that are not nccl-tests' own (mpirun banners, Open MPI's signal
// reports, "Test NCCL failure" lines, NCCL_DEBUG output), kept with their line numbers so a caller can report them.
// A log may hold several runs (outputs appended, or one per process): each "# nccl-tests version" or
// "# Collective test starting" line after a run's first starts the next. Inside a table (after the column header
// "#  size  count  type  redop  root  time ..."), a line whose first word is a number is a data row and must have
// nccl-tests' 13 columns: size count type redop root, then time algbw busbw #wrong out of place and again in place;
// anything else there (a row cut off, two processes' output on one line) throws canopy::Error naming the line.
// Pure: reads text, never files; used by `canopy nccl-tests-compare` (tools/nccl_tests_compare_command.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace canopy {

// One layout's columns of a data row: time(us) algbw(GB/s) busbw(GB/s) #wrong.
struct NcclTestsTiming {
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::optional<std::int64_t> wrong;  // nullopt: "N/A" (nccl-tests ran without its check, -c 0)
};

struct NcclTestsRow {
  std::uint64_t bytes = 0;  // nccl-tests' size S (allgather: the output, reduce-scatter: the input)
  std::uint64_t count = 0;  // elements
  std::string type;         // nccl-tests' names: int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 ...
  std::string redop;        // sum prod max min avg mulsum, or none
  int root = -1;            // -1: no root
  NcclTestsTiming out_of_place;
  NcclTestsTiming in_place;
  int line = 0;  // 1-based, in the text parsed
};

// One run of one nccl-tests binary: its header, rows and footer (each absent where the output stopped before it).
struct NcclTestsRun {
  int first_line = 0;
  std::string version_line;          // "nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22803"
  std::string version;               // "2.19.6"
  std::string nccl_headers;          // "22809" (NCCL_VERSION_CODE of the headers it was built with)
  std::string nccl_library;          // "22803" (ncclGetVersion of the library it ran with: 2.28.3)
  std::string collective;            // "all_reduce_perf", from "# Collective test starting: all_reduce_perf"
  std::string parameters;            // "nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 4(factor) ..."
  std::optional<int> iters;          // the parameters' "iters: N" (-n: timed calls a loop; not "warmup iters")
  std::optional<int> threads;        // the parameters' "nThread N" (-t: threads a process)
  std::vector<std::string> devices;  // "Rank  0 Group  0 Pid  17809 on  vm device  0 [0000:00:06] NVIDIA H100 ..."
  std::vector<NcclTestsRow> rows;
  std::optional<std::int64_t> out_of_bounds;  // "# Out of bounds values : 0 OK": 0
  bool out_of_bounds_ok = false;              // its verdict said OK
  std::optional<double> avg_busbw_gbps;       // "# Avg bus bandwidth    : 11655.2"
  bool concluded = false;                     // "# Collective test concluded: ..." was reached

  int ranks() const { return static_cast<int>(devices.size()); }  // one "Rank" line per rank
  // The timers whose times nccl-tests combines into each row's: its processes (the distinct "Pid"s of the device
  // lines, at least 1) times its threads a process. nccl-tests reports their mean unless run with -a (3: the
  // slowest), which its output does not record.
  int timers() const;
};

// A line that is not nccl-tests' own header, row or footer.
struct NcclTestsNote {
  int line = 0;
  std::string text;  // the line without its trailing blanks
};

struct NcclTestsOutput {
  std::vector<NcclTestsRun> runs;
  // Lines saying something failed: nccl-tests' "Test NCCL failure", "Test CUDA failure" and "Test failure",
  // Open MPI's "Segmentation fault" / "received signal" / "exited on signal" / "non-zero status" reports,
  // NCCL's "NCCL WARN" lines, "Aborted", "core dumped".
  std::vector<NcclTestsNote> failures;
  std::vector<NcclTestsNote> skipped;  // every other line that is not nccl-tests' own
};

// Throws canopy::Error "SOURCE:LINE: error: ..." for a malformed data row; `source` names the text in messages.
NcclTestsOutput parse_nccl_tests_output(std::string_view text, const std::string& source);

// Whether `line` (one line of a log) reports a failure, as NcclTestsOutput::failures lists them.
bool is_nccl_tests_failure_line(std::string_view line);

}  // namespace canopy
