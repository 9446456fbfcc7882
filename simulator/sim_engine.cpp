// simulate_transfers (see sim_engine.hpp): events are starts, last bytes sent and arrivals; between events every
// active transfer flows at a constant rate from max-min fair sharing (progressive filling) of the links.
#include "simulator/sim_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>

#include "core/error.hpp"

namespace canopy {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
double bytes_per_us(double gbps) { return gbps * 1e3; }

using TimedQueue = std::priority_queue<std::pair<double, int>, std::vector<std::pair<double, int>>, std::greater<>>;

// Weighted max-min fair rates (bytes/us) of the active transfers: repeatedly the link with the smallest share per
// unit of weight fixes the rate (that share x weight) of every unfixed transfer crossing it.
void fair_rates(const std::vector<SimLink>& links, const std::vector<SimTransfer>& transfers,
                const std::vector<int>& active, std::vector<double>& rate) {
  std::vector<double> left(links.size());
  std::vector<double> unfixed(links.size(), 0);  // weight of the unfixed transfers on each link
  std::vector<std::vector<int>> users(links.size());
  for (std::size_t l = 0; l < links.size(); ++l) left[l] = bytes_per_us(links[l].gbps);
  std::vector<char> fixed(transfers.size(), 0);
  int open = 0;
  for (int t : active) {
    if (transfers[t].links.empty()) {
      rate[t] = kInf;
      continue;
    }
    ++open;
    for (int l : transfers[t].links) unfixed[l] += transfers[t].weight, users[l].push_back(t);
  }
  while (open > 0) {
    int best = -1;
    double share = kInf;
    for (std::size_t l = 0; l < links.size(); ++l)
      if (unfixed[l] > 1e-12 && left[l] / unfixed[l] < share) share = left[l] / unfixed[l], best = static_cast<int>(l);
    if (best < 0) break;
    for (int t : users[best]) {
      if (fixed[t]) continue;
      fixed[t] = 1;
      const double w = transfers[t].weight;
      rate[t] = std::max(share * w, 0.0);
      --open;
      for (int l : transfers[t].links) left[l] -= share * w, unfixed[l] -= w;
    }
    unfixed[best] = 0;
  }
}

void check_input(const std::vector<SimLink>& links, const std::vector<SimTransfer>& transfers) {
  for (const SimLink& l : links)
    if (!(l.gbps > 0) || !std::isfinite(l.gbps))
      throw Error(
          fmt::format("simulated link {} -> {} has capacity {} GB/s: "
                      "it must be finite and > 0",
                      l.from, l.to, l.gbps));
  const int n = static_cast<int>(transfers.size());
  for (int t = 0; t < n; ++t) {
    const SimTransfer& x = transfers[t];
    if (!(x.bytes >= 0) || !(x.latency_us >= 0) || !(x.start_cost_us >= 0) || !(x.weight > 0))
      throw Error(
          fmt::format("simulated transfer {} has negative bytes, "
                      "latency or cost, or a weight not above 0",
                      t));
    for (int l : x.links)
      if (l < 0 || l >= static_cast<int>(links.size()))
        throw Error(fmt::format("simulated transfer {} crosses link {}, which does not exist", t, l));
    for (const auto* deps : {&x.after_arrived, &x.after_sent})
      for (int d : *deps)
        if (d < 0 || d >= n || d == t)
          throw Error(fmt::format("simulated transfer {} depends on {}: no such other transfer", t, d));
  }
}

}  // namespace

SimRun simulate_transfers(const std::vector<SimLink>& links, const std::vector<SimTransfer>& transfers) {
  check_input(links, transfers);
  const int n = static_cast<int>(transfers.size());
  std::vector<std::vector<int>> on_arrival(n), on_sent(n);
  std::vector<int> waiting(n, 0);
  for (int t = 0; t < n; ++t) {
    for (int d : transfers[t].after_arrived) on_arrival[d].push_back(t);
    for (int d : transfers[t].after_sent) on_sent[d].push_back(t);
    waiting[t] = static_cast<int>(transfers[t].after_arrived.size() + transfers[t].after_sent.size());
  }
  SimRun run;
  run.arrived_us.assign(n, -1);
  run.links.assign(links.size(), {});
  std::vector<double> ready_at(n, 0), remaining(n), rate(n, 0);
  for (int t = 0; t < n; ++t) remaining[t] = transfers[t].bytes;
  TimedQueue starts, arrivals;
  for (int t = 0; t < n; ++t)
    if (waiting[t] == 0) starts.push({transfers[t].start_cost_us, t});
  std::vector<int> active;
  double now = 0;
  int arrived = 0;
  bool changed = true;
  auto resolve = [&](const std::vector<int>& dependents, double at) {
    for (int x : dependents) {
      ready_at[x] = std::max(ready_at[x], at);
      if (--waiting[x] == 0) starts.push({ready_at[x] + transfers[x].start_cost_us, x});
    }
  };
  for (;;) {
    // Admit everything due now, then settle rates.
    while (!starts.empty() && starts.top().first <= now) {
      active.push_back(starts.top().second);
      starts.pop();
      changed = true;
    }
    if (changed) fair_rates(links, transfers, active, rate), changed = false;
    double next = kInf;
    if (!starts.empty()) next = std::min(next, starts.top().first);
    if (!arrivals.empty()) next = std::min(next, arrivals.top().first);
    for (int t : active)
      next = std::min(next, rate[t] == kInf ? now : now + (rate[t] > 0 ? remaining[t] / rate[t] : kInf));
    if (next == kInf) break;
    // Flow until `next`, recording each link's busy share.
    const double dt = next - now;
    if (dt > 0) {
      std::vector<double> used(links.size(), 0);
      for (int t : active) {
        if (rate[t] == kInf) continue;
        remaining[t] -= rate[t] * dt;
        for (int l : transfers[t].links) used[l] += rate[t];
      }
      for (std::size_t l = 0; l < links.size(); ++l) {
        const double u = std::min(1.0, used[l] / bytes_per_us(links[l].gbps));
        LinkTimeline& tl = run.links[l];
        tl.busy_bytes += used[l] * dt;
        if (!tl.segments.empty() && tl.segments.back().end_us == now &&
            std::abs(tl.segments.back().utilisation - u) < 1e-9)
          tl.segments.back().end_us = next;
        else
          tl.segments.push_back({now, next, u});
      }
    }
    now = next;
    // Transfers whose last byte left: none remains, or what remains would take less than the clock can tell from
    // now (a tree with a tiny fraction late in a long run: `now` would never move, and the loop never end).
    for (std::size_t k = 0; k < active.size();) {
      const int t = active[k];
      if (rate[t] == kInf || remaining[t] <= 1e-9 * std::max(1.0, transfers[t].bytes) ||
          (rate[t] > 0 && now + remaining[t] / rate[t] <= now)) {
        arrivals.push({now + transfers[t].latency_us, t});
        resolve(on_sent[t], now);
        active[k] = active.back();
        active.pop_back();
        changed = true;
      } else {
        ++k;
      }
    }
    while (!arrivals.empty() && arrivals.top().first <= now) {
      const int t = arrivals.top().second;
      arrivals.pop();
      run.arrived_us[t] = now;
      run.time_us = std::max(run.time_us, now);
      ++arrived;
      resolve(on_arrival[t], now);
    }
  }
  if (arrived < n) {
    for (int t = 0; t < n; ++t)
      if (run.arrived_us[t] < 0)
        throw Error(
            fmt::format("simulated transfers never start: transfer {} "
                        "waits in a dependency cycle",
                        t));
  }
  return run;
}

}  // namespace canopy
