#!/usr/bin/env python3
# The verdict on tests/torch/train_bench.py's runs (issue 32's performance acceptance; docs/nccl-api.md "Checking it
# with PyTorch; issue 70's honest comparisons): given the runs' JSON files in the order they ran (real NCCL and
# Canopy alternating, which goes first alternating too, ROUNDS times each for DDP and for FSDP2),
#
#   python3 tests/torch/train_compare.py ddp-real-1.json ddp-canopy-1.json ddp-real-2.json ddp-canopy-2.json \
#       fsdp-real-1.json fsdp-canopy-1.json fsdp-real-2.json fsdp-canopy-2.json
#
# prints a table (run, mode, library, median and mean step time, the lower quartile and the fastest step, how many
# steps took at least SLOW x the fastest, the communication share of a step and the exposed part of it), then for
# each mode the ratio Canopy / real NCCL of the median step time, each Canopy run against its neighbouring real run
# (the one before it among that mode's runs, else the one after) and overall (the median of Canopy's run medians over
# the real NCCL's, and the range the runs allow: Canopy's fastest over the real NCCL's slowest to Canopy's slowest over
# the real NCCL's fastest), and whether the target, Canopy's step time <= the real NCCL's, is met: only where the
# whole range is at most 1 (fewer than ROUNDS runs of a library are noted as too few to quote); for information,
# the same overall ratio of the runs' lower quartiles (the target stays on the medians) and how many slow steps were
# waits for another rank; and the largest relative difference between the loss curves of a mode's runs.
#
# Why the quartile: runs have had whole spells of steps ~2 x as long, in either library (one real NCCL run had a median
# of 15.45 ms where its neighbours had 9.0-9.1), so a median can say as much about the run as about the library. The
# lower quartile and the slow steps' count show which of the two moved. Those spells were rank 0 waiting inside its
# steps for a rank that had started them later (train_bench.py drew each batch between steps then): a slow step that
# does not lengthen the loop's cycle (step_start_unix, one start to the next) is such a wait, and the information
# line counts them.
#
# Exit 1 when the loss curves differ by more than float32 noise (--loss-rtol), when a curve has a NaN, or when runs
# of one mode were made with different settings (their times and losses would not be comparable); exit 3 when the
# target is missed and --require-target asks for it to count; else 0. The runs of a mode must have the same model,
# batch, seed, optimizer and step counts; any number of runs and libraries is read (gloo runs, a self-test on the
# CPU, have no pair to compare and get the loss check alone).
import argparse
import json
import math
import os
import statistics
import sys

# The loss curves' bound: float32 noise, not bitwise equality. The libraries sum each gradient element's N
# contributions in different orders (ring, tree, one-shot), which changes the sum by a few units of float32's
# rounding (2^-24 ~ 6e-8 relative) per addition: up to ~(N-1) x 6e-8 on the averaged gradient. Training feeds that
# perturbation into every later step; a stable run (loss falling, no divergence) carries it forward roughly
# linearly, so after T steps the loss moves by ~T x (N-1) x 6e-8 times a modest amplification: 60 steps on 8 ranks
# give ~2.5e-5, on 2 ranks ~4e-6. 1e-4 leaves a factor 4 (25 for 2 ranks) over that. A wrong collective (a rank's
# contribution missing or doubled, a stale chunk) changes the gradient by tens of per cent and the loss, which falls
# by 0.5 to 5 % a step here, by far more than 1e-4 within a step or two.
LOSS_RTOL = 1e-4
SAME = ("world", "params", "device", "torch")  # besides "config": what must match for runs to be compared
SLOW = 1.25  # a step this many times the run's fastest counts as slow
ROUNDS = 5  # runs of each library a verdict to quote needs


def step_stats(run):
    """(lower quartile, fastest, slow steps) of a run's timed steps, or Nones where it has no step_ms."""
    steps = sorted(run.get("step_ms") or [])
    if not steps:
        return None, None, None
    return steps[len(steps) // 4], steps[0], sum(1 for t in steps if t >= SLOW * steps[0])


def waited_steps(run):
    """(waits, slow steps) of a run: of its slow steps (but the last, which has no next start), how many did not
    lengthen the loop's cycle by half their own excess over the usual step, so that rank 0 spent that time waiting
    inside the step, not computing; None where the run has no step start times or no usual steps."""
    steps, starts = run.get("step_ms") or [], run.get("step_start_unix") or []
    if not steps or len(starts) != len(steps):
        return None
    fastest = min(steps)
    paired = [((b - a) * 1e3, t) for a, b, t in zip(starts, starts[1:], steps)]  # (cycle ms, step ms)
    usual = [(cycle, t) for cycle, t in paired if t < SLOW * fastest]
    if not usual:
        return None
    usual_cycle, usual_step = statistics.median(c for c, _ in usual), statistics.median(t for _, t in usual)
    slow = [(cycle, t) for cycle, t in paired if t >= SLOW * fastest]
    return sum(1 for cycle, t in slow if cycle - usual_cycle < (t - usual_step) / 2), len(slow)


def median(values):
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def number(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def relative_difference(a, b):
    """max over steps of |a - b| / max(|a|, |b|) (0 where both are 0); NaN if either has a NaN."""
    worst = 0.0
    for x, y in zip(a, b):
        if math.isnan(x) or math.isnan(y):
            return math.nan
        scale = max(abs(x), abs(y))
        worst = max(worst, abs(x - y) / scale if scale else 0.0)
    return worst


def percent(value):
    return "-" if value is None else f"{value * 100:.1f}"


def load(path):
    try:
        with open(path) as f:
            run = json.load(f)
    except (OSError, ValueError) as error:
        raise SystemExit(f"train_compare: cannot read {path}: {error}")
    missing = [k for k in ("mode", "library", "median_step_ms", "mean_step_ms", "losses", "config") if k not in run]
    if missing:
        raise SystemExit(f"train_compare: {path} is not a train_bench.py run (no {', '.join(missing)})")
    run["path"] = os.path.basename(path)  # what the table and the lines below name it by
    return run


def differences(a, b):
    """The settings in which two runs differ, as 'name: x vs y'."""
    out = [f"{k}: {a.get(k)} vs {b.get(k)}" for k in SAME if a.get(k) != b.get(k)]
    for k in sorted(set(a["config"]) | set(b["config"])):
        if a["config"].get(k) != b["config"].get(k):
            out.append(f"{k}: {a['config'].get(k)} vs {b['config'].get(k)}")
    return out


def neighbour(runs, i):
    """The real NCCL run next to runs[i]: the nearest before it, else the nearest after it, else None."""
    before = [j for j in range(i - 1, -1, -1) if runs[j]["library"] == "real NCCL"]
    after = [j for j in range(i + 1, len(runs)) if runs[j]["library"] == "real NCCL"]
    return runs[before[0]] if before else (runs[after[0]] if after else None)


def main():
    parser = argparse.ArgumentParser(description="compare train_bench.py runs: step times, target, loss curves")
    parser.add_argument("runs", nargs="+", help="train_bench.py --out files, in the order they ran")
    parser.add_argument("--loss-rtol", type=float, default=LOSS_RTOL,
                        help=f"largest relative difference allowed between loss curves (default {LOSS_RTOL})")
    parser.add_argument("--require-target", action="store_true", help="exit 3 when Canopy's step time > real NCCL's")
    args = parser.parse_args()
    runs = [load(p) for p in args.runs]

    print(f"{'#':>2} {'run':<28} {'mode':<5} {'library':<10} {'ranks':>5} {'params':>7} {'median ms':>10} "
          f"{'mean ms':>9} {'p25 ms':>7} {'best ms':>7} {'slow':>4} {'comm %':>7} {'exposed %':>9} {'no_sync %':>9}")
    for n, run in enumerate(runs, 1):
        comm = run.get("comm") or {}
        nosync = run.get("exposed_by_nosync") or {}
        quartile, best, slow = step_stats(run)
        print(f"{n:>2} {run['path'][:28]:<28} {run['mode']:<5} {run['library']:<10} {run.get('world', '?'):>5} "
              f"{run.get('params', 0) / 1e6:>6.1f}M {run['median_step_ms']:>10.2f} {run['mean_step_ms']:>9.2f} "
              f"{number(quartile):>7} {number(best):>7} {'-' if slow is None else slow:>4} "
              f"{percent(comm.get('comm_fraction')):>7} {percent(comm.get('exposed_fraction')):>9} "
              f"{percent(nosync.get('exposed_fraction')):>9}")

    failed, missed = False, False
    modes = list(dict.fromkeys(run["mode"] for run in runs))
    for mode in modes:
        mine = [run for run in runs if run["mode"] == mode]
        print(f"\n{mode}: {len(mine)} runs ({', '.join(run['library'] for run in mine)})")
        comparable = True
        for run in mine[1:]:
            unlike = differences(mine[0], run)
            if unlike:
                print(f"  {run['path']} was not run like {mine[0]['path']}: {'; '.join(unlike)}: NOT COMPARABLE")
                comparable = False
        if not comparable:
            failed = True
            continue

        canopy = [i for i, run in enumerate(mine) if run["library"] == "canopy"]
        real = [i for i, run in enumerate(mine) if run["library"] == "real NCCL"]
        for i in canopy:
            ref = neighbour(mine, i)
            if ref is not None:
                print(f"  {mine[i]['path']} / {ref['path']}: median {mine[i]['median_step_ms']:.2f} / "
                      f"{ref['median_step_ms']:.2f} ms = {mine[i]['median_step_ms'] / ref['median_step_ms']:.3f}")
        if canopy and real:
            ours = [mine[i]["median_step_ms"] for i in canopy]
            theirs = [mine[i]["median_step_ms"] for i in real]
            # Met only where the whole range clears the target: Canopy's slowest run at most the real NCCL's fastest.
            low, high = min(ours) / max(theirs), max(ours) / min(theirs)
            verdict = "met" if high <= 1 else ("NOT MET" if low > 1 else "NOT MET (the runs' ranges overlap 1)")
            missed |= verdict != "met"
            print(f"  overall: Canopy {median(ours):.2f} ms / real NCCL {median(theirs):.2f} ms = "
                  f"{median(ours) / median(theirs):.3f} (median of the runs' medians; range {low:.3f}-{high:.3f} over "
                  f"Canopy's {min(ours):.2f}-{max(ours):.2f} ms in {len(ours)} runs and the real NCCL's "
                  f"{min(theirs):.2f}-{max(theirs):.2f} ms in {len(theirs)}): target Canopy <= real NCCL {verdict}")
            if min(len(ours), len(theirs)) < ROUNDS:
                print(f"  note: {min(len(ours), len(theirs))} run(s) of a library; a verdict to quote needs at least "
                      f"{ROUNDS} of each, alternating")
            stats = [step_stats(run) for run in mine]  # (lower quartile, fastest, slow steps)
            if all(quartile is not None for quartile, _, _ in stats):
                ours = sum(stats[i][0] for i in canopy) / len(canopy)
                theirs = sum(stats[i][0] for i in real) / len(real)
                slow = [sum(stats[i][2] for i in side) for side in (canopy, real)]
                print(f"  for information: lower quartiles Canopy {ours:.2f} ms / real NCCL {theirs:.2f} ms = "
                      f"{ours / theirs:.3f}; steps >= {SLOW:g} x their run's fastest: Canopy {slow[0]}, real NCCL "
                      f"{slow[1]}")
            waits = [waited_steps(run) for run in mine]
            if any(slow for _, _, slow in stats) and all(w is not None for w in waits):
                counts = [[sum(waits[i][k] for i in side) for k in (0, 1)] for side in (canopy, real)]
                print(f"  for information: slow steps (but each run's last) that did not lengthen the loop's cycle, "
                      f"rank 0 waiting inside them for a rank that started them later: Canopy {counts[0][0]} of "
                      f"{counts[0][1]}, real NCCL {counts[1][0]} of {counts[1][1]}")
        else:
            print("  no Canopy and real NCCL runs to pair: no ratio")

        worst, against = 0.0, None
        for run in mine[1:]:
            if len(run["losses"]) != len(mine[0]["losses"]):
                print(f"  {run['path']}: {len(run['losses'])} losses, {mine[0]['path']} {len(mine[0]['losses'])}")
                failed = True
                continue
            diff = relative_difference(mine[0]["losses"], run["losses"])
            if not diff <= worst:  # NaN sticks
                worst, against = diff, run
        nan = any(math.isnan(x) for run in mine for x in run["losses"])
        over = nan or not worst <= args.loss_rtol
        failed |= over
        steps, first = len(mine[0]["losses"]), mine[0]["path"]
        most = f" ({against['path']} against {first})" if against else ""
        print(f"  loss curves ({steps} steps, {mine[0]['losses'][0]:.6g} -> {mine[0]['losses'][-1]:.6g}): max "
              f"relative difference {worst:.3e}{most}, limit {args.loss_rtol:g}{': a NaN' if nan else ''}"
              f"{': OVER' if over else ''}")

    ddp = next((run for run in runs if run["mode"] == "ddp"), None)
    fsdp = next((run for run in runs if run["mode"] == "fsdp"), None)
    if ddp and fsdp and not differences(ddp, fsdp) and len(ddp["losses"]) == len(fsdp["losses"]):
        diff = relative_difference(ddp["losses"], fsdp["losses"])
        print(f"\n(for information: DDP's and FSDP2's loss curves differ by {diff:.3e} relative: the same training, "
              f"the gradients averaged by all_reduce and by reduce_scatter)")

    verdict = "FAILED" if failed else ("target missed" if missed else "ok")
    print(f"\ntrain_compare: {len(runs)} runs of {', '.join(modes)}: {verdict}")
    if failed:
        return 1
    return 3 if (missed and args.require_target) else 0


if __name__ == "__main__":
    sys.exit(main())
