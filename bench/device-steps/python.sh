# bench/device-run step `python`, sourced by it inside its loop over the steps (`return` ends the step). What it
# runs, its settings and its logs:
#   python    the Python package on the GPU (docs/python.md): the wheel built by pip from this tree (build
#             dependencies from the carried .deps/python/, bench/device-deps; no Clang passes, as the build above),
#             installed into a folder put on PYTHONPATH of the image's python3 (whose torch a virtual environment
#             does not see); then
#             `python -m canopy.torchrun --nproc_per_node 2 tests/torch/c10d_check.py` (both ranks on GPU 0) and
#             python/tests/torch_status_check.py under canopy.torchrun (canopy.torch.status() must say Canopy serves);
#             each run cut at CANOPY_TORCH_TIMEOUT seconds (900)                   -> python-*.log, python.log
# shellcheck shell=bash disable=SC2154  # root, build, out, deps, step: bench/device-run
step python
{
  venv=/tmp/canopy-venv    # builds the wheel (pip's isolated build takes its dependencies from .deps/python/)
  wheels=/tmp/canopy-wheel
  site=/tmp/canopy-site    # the installed package, on PYTHONPATH of the python3 that has torch
  rm -rf "$venv" "$wheels" "$site"
  python3 -m venv "$venv"
  include=()
  [ -f /usr/local/cuda/include/nccl.h ] || include=(-C "cmake.define.CANOPY_NCCL_INCLUDE_DIR=$(python3 -c \
    'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "include"))')")
  start=$(date +%s)
  if "$venv/bin/python" -m pip wheel --no-index --find-links "$root/.deps/python" --no-deps -w "$wheels" "$root" \
    -C cmake.define.CANOPY_WITH_CLANG=OFF -C "cmake.define.CMAKE_PREFIX_PATH=$deps/usr" \
    -C "cmake.define.Boost_INCLUDE_DIR=$deps/usr/include" -C "cmake.define.OPENSSL_ROOT_DIR=$deps/usr" \
    -C build-dir=/tmp/canopy-wheel-build "${include[@]}" >"$out/python-wheel.log" 2>&1; then
    echo "wheel: $(ls "$wheels") $(du -k "$wheels"/*.whl | cut -f1) KiB, built in $(( $(date +%s) - start )) s"
    "$venv/bin/python" -m pip install -q --no-index --no-deps --target "$site" "$wheels"/*.whl
    for check in "c10d $root/tests/torch/c10d_check.py" "status $root/python/tests/torch_status_check.py"; do
      read -r name script <<<"$check"
      echo "-- python -m canopy.torchrun --standalone --nproc_per_node 2 $script ($(date +%T))"
      (cd /tmp && timeout "${CANOPY_TORCH_TIMEOUT:-900}" env CANOPY_LOG=info PYTHONPATH="$site" python3 -m canopy.torchrun \
        --standalone --nproc_per_node 2 "$script" >"$out/python-$name.log" 2>&1)
      rc=$?
      grep -E '^(c10d_check|torch_status_check): |^(ok|WRONG) |WRONG|^wrong:|Error|serving' "$out/python-$name.log" |
        grep -v '^ok ' | tail -n 25
      echo "   exit $rc; $(grep -ciE 'canopy.*served' "$out/python-$name.log") log lines served by Canopy"
    done
  else
    echo "python: the wheel did not build:"
    grep -B2 -A8 -i 'error' "$out/python-wheel.log" | head -60
  fi
} 2>&1 | tee "$out/python.log"
