# bench/device-run step `embed`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   embed     examples/embed built against this build installed into /tmp/canopy-prefix, run -> embed.log
# shellcheck shell=bash disable=SC2154  # root, build, out, canopy, jobs, step, mps_*, bench_args: bench/device-run
# examples/embed built against this build installed into a prefix (find_package(Canopy)), run on the GPU
step examples/embed
prefix=/tmp/canopy-prefix
rm -rf "$prefix" /tmp/canopy-embed
if cmake --install "$build" --prefix "$prefix" >"$out/embed.log" 2>&1 &&
  cmake -S "$root/examples/embed" -B /tmp/canopy-embed -DCMAKE_PREFIX_PATH="$prefix" >>"$out/embed.log" 2>&1 &&
  cmake --build /tmp/canopy-embed >>"$out/embed.log" 2>&1; then
  /tmp/canopy-embed/embed_allreduce 2>&1 | tee -a "$out/embed.log"
else
  tail -30 "$out/embed.log"; echo "FAILED: examples/embed"
fi
