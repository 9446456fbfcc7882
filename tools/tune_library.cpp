// `canopy tune --vs-nccl` (tune_library.hpp).
#include "tools/tune_library.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "bench/harness/benchmark.hpp"
#include "bench/harness/nccl_baseline.hpp"
#include "bench/harness/rounds_text.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/tune/library_choices.hpp"
#include "runtime/tune/tuning_file.hpp"
#include "tools/bench_procs.hpp"
#include "tools/commands.hpp"

namespace canopy::cli {

void tune_library(const LibraryTuneRequest& q) {
  int launched = 0;
  const std::unique_ptr<Communicator> comm = command_communicator(q.procs, q.communicator, &launched);
  if (!comm) {  // the launcher of --procs: its copies measured
    if (launched != 0) throw CLI::RuntimeError(launched);
    return;
  }
  const std::unique_ptr<NcclBaseline> nccl = nccl_beside(*comm);
  const bool speaks = !comm->multi_process() || comm->first_own_rank() == 0;
  TuningFile file(comm->tuning_path());
  if (speaks) {
    fmt::print("# canopy tune --vs-nccl: topology {} ({}), {} ranks, {}; choices to {}\n", comm->topology().name(),
               comm->topology_source(), comm->ranks(), to_string(q.dtype),
               q.dry_run ? "nowhere (--dry-run)" : comm->tuning_path().string());
    fmt::print("{}{}", nccl_context_line(nccl->version(), nccl->path(), std::getenv("NCCL_NVLS_ENABLE")),
               rounds_header(q.rounds, 1.0));
  }
  BenchOptions o;
  o.collectives = q.collectives;
  o.sizes = q.sizes;
  o.dtype = q.dtype;
  o.op = q.op;
  o.warmup = q.warmup;
  o.iters = q.iters;
  o.repeats = q.repeats;
  o.rounds = q.rounds;
  std::int64_t wrong = 0;
  const Status s = run_benchmark(*comm, o, nccl.get(), [&](const BenchRow& r) {
    wrong += std::max<std::int64_t>(r.errors, 0);
    const LibraryEntry e = library_entry(comm->topology().name(), r.rounds, r.time_us, r.time_min_us, r.time_max_us,
                                         r.nccl_time_us, r.nccl_time_min_us, r.nccl_time_max_us, nccl->version());
    file.set_library({comm->machine_key(), r.collective, r.dtype, tuning_bucket(r.bytes)}, e);
    if (speaks)
      fmt::print("{:<14} {:>6}: Canopy {:>9.2f} us, NCCL {:>9.2f} us{}: {}\n", to_string(r.collective),
                 bench_size_text(r.bytes), r.time_us, r.nccl_time_us, nccl_columns(r, 1.0),
                 e.library == Library::nccl ? "the real NCCL" : "Canopy");
  });
  if (!s.ok()) throw Error(s.message() + "; nothing was written");
  if (wrong > 0) throw Error(fmt::format("{} output elements were wrong; nothing was written", wrong));
  if (q.dry_run || !speaks) return;
  file.save();
  fmt::print("# wrote {} ({} library choices)\n", file.path().string(), file.libraries().size());
}

}  // namespace canopy::cli
