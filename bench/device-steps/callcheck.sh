# bench/device-run step `callcheck`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   callcheck what comparing every call's signature through the shared pages costs (the default since issue 66;
#             docs/multi-process.md "Failures"): `canopy bench --procs 2 -t h200x2 -c allreduce --sizes 8 --host-time`
#             (two processes on the one GPU, under an MPS daemon of its own where there is one, so their kernels run
#             at once) with CANOPY_CHECK_CALLS=0 (no check) and unset (the check), alternating which goes first, for
#             CANOPY_CALLCHECK_ROUNDS rounds (5); the time and host time a call of each run, and their medians
#             -> callcheck.log, callcheck-*.json
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
step call check cost
rounds="${CANOPY_CALLCHECK_ROUNDS:-5}"
mps=0; mps_start && mps=1
callcheck_run() {  # NAME SETTING: one bench run, its JSON in callcheck-NAME.json
  local name="$1" setting="$2"
  env ${setting:+"$setting"} timeout 200 "$canopy" bench --procs 2 -t h200x2 -c allreduce --sizes 8 --host-time \
    --json "$out/callcheck-$name.json" >"$out/callcheck-$name.txt" 2>&1 ||
    echo "callcheck: $name failed: $(tail -3 "$out/callcheck-$name.txt")"
  python3 - "$out/callcheck-$name.json" "$name" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
for r in rows:
    host, floor = r.get("host_us", float("nan")), r.get("launch_us", float("nan"))
    print(f"callcheck {sys.argv[2]:14s} {r['bytes']:>6} B  time {r['time_us']:7.2f} us  host {host:7.2f} us"
          f"  launch floor {floor:5.2f} us  errors {r['errors']}")
PY
}
{
  [ "$mps" = 1 ] && echo "callcheck: under MPS" || echo "callcheck: without MPS (time slices)"
  for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ]; then
      callcheck_run "off-$r" CANOPY_CHECK_CALLS=0; callcheck_run "on-$r" ""
    else
      callcheck_run "on-$r" ""; callcheck_run "off-$r" CANOPY_CHECK_CALLS=0
    fi
  done
  python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def series(kind, key):
    values = []
    for r in range(1, rounds + 1):
        try:
            values += [row[key] for row in json.load(open(f"{out}/callcheck-{kind}-{r}.json")) if key in row]
        except (OSError, ValueError):
            pass
    return values
for key in ("time_us", "host_us"):
    off, on = series("off", key), series("on", key)
    if off and on:
        print(f"callcheck {key}: off median {statistics.median(off):.2f} [{min(off):.2f}, {max(off):.2f}], "
              f"on median {statistics.median(on):.2f} [{min(on):.2f}, {max(on):.2f}], "
              f"on - off {statistics.median(on) - statistics.median(off):+.2f} us ({len(off)} and {len(on)} runs)")
PY
} 2>&1 | tee "$out/callcheck.log"
[ "$mps" = 1 ] && mps_stop
