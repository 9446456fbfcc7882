# bench/device-run step `before`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   before    a refactor's before and after in one call (issue 67's constraint): the source of an earlier commit,
#             carried as a tar (make it with `mkdir -p .before && git archive COMMIT > .before/COMMIT.tar`, pass
#             carry .before; CANOPY_BEFORE names the tar, default the only one there), is built beside this tree the
#             same way (/tmp/build-before); then, with CANOPY_BEFORE_TESTS=1, its `gpu-quick` tier as step `tests`
#             runs it; then `canopy bench -t h200x2 -c CANOPY_BEFORE_COLLECTIVES (allreduce,broadcast) --sizes
#             CANOPY_BEFORE_SIZES (8:64K) --host-time` of each build in turn, which goes first alternating, for
#             CANOPY_BEFORE_ROUNDS rounds (5); per collective and size the medians of time and host time a call, with
#             their spread        -> before-build.log, gpu-tests-before.log, before-*.json, before.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, deps, nccl_include: bench/device-run
step "before and after"
before_tar="${CANOPY_BEFORE:-$(ls "$root"/.before/*.tar 2>/dev/null | head -1)}"
[ -f "$before_tar" ] || { echo "before: no source tar (CANOPY_BEFORE, or .before/COMMIT.tar carried)"; return; }
before_src=/tmp/before-src before_build=/tmp/build-before
rm -rf "$before_src" && mkdir -p "$before_src" && tar -xf "$before_tar" -C "$before_src"
{ cmake -S "$before_src" -B "$before_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCANOPY_WITH_CLANG=OFF \
    -DCANOPY_UNITY_BUILD=OFF "${nccl_include[@]}" -DCMAKE_PREFIX_PATH="$deps/usr" \
    -DBoost_INCLUDE_DIR="$deps/usr/include" -DOPENSSL_ROOT_DIR="$deps/usr" &&
  cmake --build "$before_build" --parallel "$(nproc)"; } >"$out/before-build.log" 2>&1 ||
  { echo "before: the build of $(basename "$before_tar") failed:"; grep -B2 -A8 'error' "$out/before-build.log" | head -40; return; }
echo "before: $(basename "$before_tar") built"
if [ "${CANOPY_BEFORE_TESTS:-0}" = 1 ]; then
  build_after="$build"
  build="$before_build" gpu_tier_log=gpu-tests-before.log
  # shellcheck source=bench/device-steps/tests.sh
  source "$root/bench/device-steps/tests.sh"
  build="$build_after"
  unset gpu_tier_log
fi
rounds="${CANOPY_BEFORE_ROUNDS:-5}"
before_run() {  # NAME CANOPY ROUND: one bench run, its rows in before-NAME-ROUND.json
  timeout 200 "$2" bench -t h200x2 -c "${CANOPY_BEFORE_COLLECTIVES:-allreduce,broadcast}" \
    --sizes "${CANOPY_BEFORE_SIZES:-8:64K}" --host-time --json "$out/before-$1-$3.json" >/dev/null 2>&1 ||
    echo "before: the $1 bench of round $3 failed"
}
{
  for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ]; then before_run before "$before_build/bin/canopy" "$r"; before_run after "$canopy" "$r"
    else before_run after "$canopy" "$r"; before_run before "$before_build/bin/canopy" "$r"; fi
  done
  python3 - "$out" "$rounds" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}  # (collective, bytes, which) -> [(time, host)]
for which in ("before", "after"):
    for r in range(1, rounds + 1):
        path = os.path.join(out, f"before-{which}-{r}.json")
        if not os.path.exists(path):
            continue
        for row in json.load(open(path)):
            rows.setdefault((row["collective"], row["bytes"], which), []).append((row["time_us"], row.get("host_us")))
def fig(v):
    return f"{statistics.median(v):7.2f} [{min(v):6.2f}, {max(v):6.2f}]" if v else "      -"
print("before/after: median [min, max] over the rounds, us per call")
print(f"{'collective':12s} {'bytes':>6s}  {'time before':>24s}  {'time after':>24s}  {'host before':>24s}  {'host after':>24s}")
for c, b in sorted({(c, b) for c, b, _ in rows}, key=lambda k: (k[0], k[1])):
    bt = [t for t, _ in rows.get((c, b, "before"), [])]; at = [t for t, _ in rows.get((c, b, "after"), [])]
    bh = [h for _, h in rows.get((c, b, "before"), []) if h is not None]
    ah = [h for _, h in rows.get((c, b, "after"), []) if h is not None]
    print(f"{c:12s} {b:>6d}  {fig(bt):>24s}  {fig(at):>24s}  {fig(bh):>24s}  {fig(ah):>24s}")
PY
} 2>&1 | tee "$out/before.log"
