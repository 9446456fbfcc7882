// read_bench_rows_json: canopy bench's JSON rows back into BenchRow (see the header).
#include "bench/harness/bench_json_reader.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "bench/harness/exchange_calls.hpp"

namespace canopy {

std::vector<BenchRow> read_bench_rows_json(std::string_view text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(
        fmt::format("{}: error: not JSON ({}): give the file `canopy bench --json FILE` wrote", source, e.what()));
  }
  if (!j.is_array())
    throw Error(fmt::format("{}: error: canopy bench --json writes a list of rows; this file holds a JSON {}", source,
                            j.type_name()));
  std::vector<BenchRow> rows;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& r = j[i];
    const auto field = [&](const char* name) -> const nlohmann::json& {
      if (!r.is_object() || !r.contains(name))
        throw Error(
            fmt::format("{}: error: row {} has no \"{}\": is this `canopy bench --json` output?", source, i, name));
      return r.at(name);
    };
    const auto text_of = [&](const char* name) {
      const nlohmann::json& v = field(name);
      if (!v.is_string()) throw Error(fmt::format("{}: error: row {}: \"{}\" is not a string", source, i, name));
      return v.get<std::string>();
    };
    const auto number_of = [&](const char* name, bool nullable) {
      const nlohmann::json& v = field(name);
      if (nullable && v.is_null()) return 0.0;
      if (!v.is_number()) throw Error(fmt::format("{}: error: row {}: \"{}\" is not a number", source, i, name));
      return v.get<double>();
    };
    BenchRow row;
    const std::string collective = text_of("collective");
    if (r.contains("algorithm") && r["algorithm"].is_string()) row.algorithm = r["algorithm"].get<std::string>();
    if (const auto c = parse_collective(collective)) {
      row.collective = *c;
    } else if (!row.algorithm.empty()) {
      row.goal = collective;  // a program whose goal is no NCCL collective (alltoall, custom)
    } else if (exchange_call_named(collective)) {
      row.goal = collective;  // canopy bench -c sendrecv|alltoall|gather|scatter
    } else {
      throw Error(
          fmt::format("{}: error: row {}: collective \"{}\" is none of broadcast, reduce, allreduce, "
                      "allgather, reducescatter, sendrecv, alltoall, gather, scatter",
                      source, i, collective));
    }
    const std::string dtype = text_of("dtype"), op = text_of("op");
    const auto t = parse_data_type(dtype);
    if (!t)
      throw Error(fmt::format("{}: error: row {}: dtype \"{}\" is none of {}", source, i, dtype, data_type_choices()));
    const auto o = parse_reduce_op(op);
    if (!o) throw Error(fmt::format("{}: error: row {}: op \"{}\" is none of sum prod min max avg", source, i, op));
    row.dtype = *t;
    row.op = *o;
    const double bytes = number_of("bytes", false), ranks = number_of("ranks", false);
    if (bytes < 0 || ranks < 1)
      throw Error(
          fmt::format("{}: error: row {}: bytes {} and ranks {} must be >= 0 and >= 1", source, i, bytes, ranks));
    row.bytes = static_cast<std::uint64_t>(bytes);
    row.ranks = static_cast<int>(ranks);
    if (r.contains("procs") && r["procs"].is_number()) row.procs = r["procs"].get<int>();
    if (r.contains("iters") && r["iters"].is_number_integer() && r["iters"].get<int>() > 0)
      row.iters = r["iters"].get<int>();
    row.time_us = number_of("time_us", false);
    row.algbw_gbps = number_of("algbw_GBps", false);
    row.busbw_gbps = number_of("busbw_GBps", false);
    row.errors = static_cast<std::int64_t>(number_of("errors", false));
    row.nccl_time_us = number_of("nccl_time_us", true);
    row.nccl_busbw_gbps = number_of("nccl_busbw_GBps", true);
    // Rounds (canopy bench --rounds): the medians above, the extremes here; one round: the time itself.
    row.time_min_us = row.time_max_us = row.time_us;
    row.nccl_time_min_us = row.nccl_time_max_us = row.nccl_time_us;
    if (r.contains("rounds")) {
      const double rounds = number_of("rounds", false);
      if (rounds < 1 || rounds != static_cast<double>(static_cast<int>(rounds)))
        throw Error(fmt::format("{}: error: row {}: rounds {} must be a whole number >= 1", source, i, rounds));
      row.rounds = static_cast<int>(rounds);
      row.time_min_us = number_of("time_us_min", false);
      row.time_max_us = number_of("time_us_max", false);
      if (row.nccl_time_us > 0) {
        row.nccl_time_min_us = number_of("nccl_time_us_min", false);
        row.nccl_time_max_us = number_of("nccl_time_us_max", false);
      }
    }
    if (r.contains("launch_us")) {  // canopy bench --host-time: the host's time per call and the launch floor
      row.host_us = number_of("host_us", false);
      row.launch_us = number_of("launch_us", false);
    }
    if (r.contains("device") && r["device"].is_string()) row.device = r["device"].get<std::string>();
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace canopy
