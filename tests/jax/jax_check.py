#!/usr/bin/env python3
# JAX through libcanopy_nccl.so (issue 68; docs/nccl-api.md "Checking it with JAX"): N processes, each with one device,
# joined by jax.distributed, run shard_map programs over a mesh of the N devices: jax.lax.ppermute (NCCL send/recv in
# a group: a ring and pair swaps), jax.lax.all_to_all (grouped send/recv or ncclAlltoAll), beside psum, all_gather and
# psum_scatter; each for float32, bfloat16 and int32 at several sizes, and a psum of 1 Mi floats after every case.
# Every process checks its own shard element by element against numpy; the parent gathers the verdicts.
#
#   LD_PRELOAD=build/libcanopy_nccl.so CANOPY_LOG=info python3 tests/jax/jax_check.py --procs 2
#
# The parent starts the N workers (this script with --worker K) on GPU 0 (every process shares it, as the torch checks
# do; XLA_PYTHON_CLIENT_PREALLOCATE=false so that N processes fit), waits for them (--timeout seconds) and prints a
# line per case, then `jax_check: C cases, W wrong` (exit 1 when W > 0 or a worker failed). A case is wrong when any
# element of any process's result is wrong or its psum after it is. Values are small integers, exact in bfloat16.
# --platform cpu runs the same programs on JAX's CPU backend (gloo between the processes): a self-test of this
# script's logic on a machine without a GPU, never a check of the NCCL library.
import argparse
import json
import os
import socket
import subprocess
import sys
import time

TYPES = ["float32", "bfloat16", "int32"]
BLOCKS = [1, 7, 1028, 65540]  # elements of one process's block (all_to_all and psum_scatter split N blocks)
AFTER_COUNT = 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parent(args):
    port = args.port or free_port()
    env = dict(os.environ)
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    env.setdefault("NCCL_NVLS_ENABLE", "0")
    workers = []
    for k in range(args.procs):
        command = [sys.executable, os.path.abspath(__file__), "--worker", str(k), "--procs", str(args.procs),
                   "--port", str(port), "--platform", args.platform]
        workers.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True))
    deadline = time.monotonic() + args.timeout
    outputs, codes = [], []
    for k, worker in enumerate(workers):
        try:
            out, _ = worker.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for w in workers:
                w.kill()
            out, _ = worker.communicate()
            out += f"\njax_check: worker {k} still running after {args.timeout} s: killed\n"
        outputs.append(out)
        codes.append(worker.returncode)
    verdicts = []
    for k, out in enumerate(outputs):
        mine = {}
        for line in out.splitlines():
            if line.startswith("RESULT "):
                case = json.loads(line[len("RESULT "):])
                mine[case["name"]] = case
            elif line.startswith("canopy "):  # CANOPY_LOG's lines: to standard error, whole (who served each call)
                print(line, file=sys.stderr, flush=True)
            else:
                print(f"[{k}] {line}", flush=True)
        verdicts.append(mine)
    names = []
    for mine in verdicts:
        names += [n for n in mine if n not in names]
    wrong = 0
    for name in names:
        each = [mine.get(name) for mine in verdicts]
        ok = all(c is not None and c["wrong"] == 0 and c["after_wrong"] == 0 for c in each)
        wrong += 0 if ok else 1
        ranks = ", ".join("missing" if c is None else ("right" if c["wrong"] == 0 else f"{c['wrong']} wrong of "
                                                       f"{c['elements']}") for c in each)
        after = sum(c["after_wrong"] for c in each if c is not None)
        print(f"{'ok   ' if ok else 'WRONG'} {name:34s} ranks: {ranks}; psum after: {after} wrong", flush=True)
    failed = [k for k, code in enumerate(codes) if code != 0]
    expected = len(CASES) * len(TYPES) * len(BLOCKS) - (0 if args.procs % 2 == 0 else len(TYPES) * len(BLOCKS))
    if len(names) < expected:
        print(f"jax_check: only {len(names)} of {expected} cases reported (a worker stopped early)", flush=True)
        wrong += expected - len(names)
    print(f"jax_check: {args.procs} processes on {args.platform}, {len(names)} cases, {wrong} wrong"
          + (f"; workers {failed} exited non-zero ({[codes[k] for k in failed]})" if failed else ""), flush=True)
    return 1 if wrong or failed else 0


# Each case: (name, needs an even N, program over one block of `m`, host expectation). x_of(r) is process r's input.
def values(np, r, n, dtype):
    return ((np.arange(n) * 3 + r * 17) % 101).astype(dtype)


def summands(np, r, n, dtype):
    return ((np.arange(n) + r) % 31).astype(dtype)  # sums of 8 stay below 256: exact in bfloat16


CASES = [
    "ppermute ring", "ppermute pairs", "all_to_all", "psum", "all_gather", "psum_scatter",
]


def worker(args):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax

    if args.platform == "cpu":
        jax.config.update("jax_platforms", "cpu")
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(f"127.0.0.1:{args.port}", num_processes=args.procs, process_id=args.worker)
    else:
        jax.distributed.initialize(f"127.0.0.1:{args.port}", num_processes=args.procs, process_id=args.worker,
                                   local_device_ids=[0])
    import jax.numpy as jnp
    import ml_dtypes
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:
        from jax.experimental.shard_map import shard_map
    n, r = args.procs, args.worker
    mesh = Mesh(np.array(jax.devices()), ("x",))
    mine_device = jax.local_devices()[0]
    spec = P("x")

    def global_array(local):
        placed = jax.device_put(local, mine_device)
        return jax.make_array_from_single_device_arrays((n * local.shape[0],), NamedSharding(mesh, spec), [placed])

    def run(body, local):
        f = jax.jit(shard_map(body, mesh=mesh, in_specs=spec, out_specs=spec))
        return fetch(f(global_array(local)))

    def fetch(out):
        return np.asarray(out.addressable_shards[0].data)

    np_type = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "int32": np.int32}
    ring = [(j, (j + 1) % n) for j in range(n)]
    pairs = [(j, j ^ 1) for j in range(n)]

    def case(name, dtype, m):
        t = np_type[dtype]
        if name == "ppermute ring":
            got = run(lambda x: jax.lax.ppermute(x, "x", ring), values(np, r, m, t))
            return got, values(np, (r - 1) % n, m, t)
        if name == "ppermute pairs":
            got = run(lambda x: jax.lax.ppermute(x, "x", pairs), values(np, r, m, t))
            return got, values(np, r ^ 1, m, t)
        if name == "all_to_all":  # block j of process r's result is block r of process j's input
            got = run(lambda x: jax.lax.all_to_all(x, "x", 0, 0, tiled=True), values(np, r, n * m, t))
            return got, np.concatenate([values(np, j, n * m, t)[r * m:(r + 1) * m] for j in range(n)])
        if name == "psum":
            got = run(lambda x: jax.lax.psum(x, "x"), summands(np, r, m, t))
            return got, sum(summands(np, j, m, np.int64) for j in range(n)).astype(t)
        if name == "all_gather":
            got = run(lambda x: jax.lax.all_gather(x, "x", tiled=True), values(np, r, m, t))
            return got, np.concatenate([values(np, j, m, t) for j in range(n)])
        if name == "psum_scatter":
            got = run(lambda x: jax.lax.psum_scatter(x, "x", scatter_dimension=0, tiled=True),
                      summands(np, r, n * m, t))
            total = sum(summands(np, j, n * m, np.int64) for j in range(n))
            return got, total[r * m:(r + 1) * m].astype(t)
        raise ValueError(name)

    psum_all = jax.jit(shard_map(lambda v: jax.lax.psum(v, "x"), mesh=mesh, in_specs=spec, out_specs=spec))

    def psum_after(number):
        x = np.full((AFTER_COUNT,), float(r + 1 + number % 7), np.float32)
        got = fetch(psum_all(global_array(x)))
        return int((got != float(n * (n + 1) // 2 + n * (number % 7))).sum())

    number = 0
    for name in CASES:
        if name == "ppermute pairs" and n % 2:
            continue
        for dtype in TYPES:
            for m in BLOCKS:
                label = f"{name} {dtype} x{m}"
                try:
                    got, expect = case(name, dtype, m)
                    bad = int((got.astype(np.float64) != expect.astype(np.float64)).sum()) if got.shape == \
                        expect.shape else int(expect.size)
                    detail = "" if got.shape == expect.shape else f"shape {got.shape}, expected {expect.shape}"
                except Exception as error:  # noqa: BLE001 (a raised case is this case's outcome)
                    bad, detail = -1, f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}"
                    expect = np.zeros(0)
                after = psum_after(number)
                print("RESULT " + json.dumps({"name": label, "wrong": bad, "elements": int(expect.size),
                                              "after_wrong": after, "detail": detail}), flush=True)
                if detail:
                    print(f"{label}: {detail}", flush=True)
                number += 1
    jax.distributed.shutdown()
    return 0


def main():
    parser = argparse.ArgumentParser(description="JAX's collectives (ppermute, all_to_all beside psum, all_gather, "
                                                 "psum_scatter) across N processes on GPU 0, each result checked "
                                                 "element by element; run with LD_PRELOAD=libcanopy_nccl.so.")
    parser.add_argument("--procs", type=int, default=2, help="processes (one device each); default 2")
    parser.add_argument("--platform", default="gpu", choices=["gpu", "cpu"],
                        help="cpu: JAX's CPU backend with gloo, a self-test of this script without a GPU")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before the workers are killed")
    parser.add_argument("--port", type=int, default=0, help="the coordinator's port (default: a free one)")
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.procs < 2:
        parser.error(f"--procs {args.procs}: needs at least 2 processes (the collectives join them)")
    return worker(args) if args.worker is not None else parent(args)


if __name__ == "__main__":
    sys.exit(main())
