#!/usr/bin/env python3
# Every c10d collective of torch's NCCL backend against values computed on the host (issue 32's PyTorch
# acceptance; docs/nccl-api.md "Checking it with PyTorch"). Run under torchrun, all ranks on GPU 0:
#
#   LD_PRELOAD=build/libcanopy_nccl.so CANOPY_LOG=info \
#     torchrun --standalone --nproc_per_node 4 tests/torch/c10d_check.py
#
# Checked, for float32, bfloat16, float16, int64 and uint8 at odd element counts (1 7 1023 65537 1000003 unless
# --sizes): all_reduce with SUM, AVG, MAX, MIN, PRODUCT and PREMUL_SUM (a float factor and a device tensor factor);
# broadcast and reduce from the first and the last rank; all_gather_into_tensor; reduce_scatter_tensor with each
# op; all_gather and reduce_scatter of lists, of equal and of uneven sizes; barrier; async_op=True works waited
# on; coalesced calls (_coalescing_manager, sync and async, and the deprecated all_reduce_coalesced).
#
# Each rank draws its inputs from a seed made of the case's name and its rank, so every rank can draw every other
# rank's inputs and compute the expected result on the host (float64 or int64). The values are chosen so that the
# result is exact: small integers for sums (|x| <= 8 for floats: exact in bfloat16; 0 .. 255/N for uint8 so no sum
# wraps; |x| <= 2^62/N for int64), {-2,-1,1,2} (floats), -3..3 (int64) or 0..2 (uint8) for products, any value
# for max, min and the copies. One uint8 case sums full-range bytes and expects them wrapped mod 256, as NCCL
# does. AVG is exact where N is a power of two (else 2 ulp are allowed); PREMUL_SUM's factors are powers of two, and a
# bfloat16 PREMUL_SUM expects what NCCL computes from what torch hands it (nccl_factor: torch passes a float).
# AVG on integers is NCCL's: the sum divided by N, truncated toward zero. Skipped with their reason: PREMUL_SUM on
# integers (c10d raises: "PreMulSum Data type must be half, float, bfloat16 or double").
#
# Rank 0 prints a line per case; any rank prints its own wrong results; the ranks agree on the verdict through
# torchrun's store (not through the library under test). Ends with `c10d_check: N cases, W wrong`; exit 1 on any
# wrong result or exception. --backend gloo runs the same on the CPU (the ops gloo lacks are skipped): a self-test
# of this script on a machine without a GPU.
import argparse
import struct
import sys
import traceback
import warnings
import zlib

import torch
import torch.distributed as dist

sys.dont_write_bytecode = True  # importing the helpers beside it leaves no __pycache__ in the tree
import torch_setup  # noqa: E402 (after the line above)

FLOATS = (torch.float32, torch.bfloat16, torch.float16)
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "int64": torch.int64,
          "uint8": torch.uint8}
DEFAULT_SIZES = "1,7,1023,65537,1000003"
POISON = 77  # what outputs hold before a collective writes them: a collective that writes nothing fails


def short(dtype):
    return str(dtype).replace("torch.", "")


class Op:
    """A reduction: its c10d ReduceOp, the host's expected result, the values that keep the result exact."""

    def __init__(self, name, values, factor=None, tensor_factor=False):
        self.name, self.values, self.factor, self.tensor_factor = name, values, factor, tensor_factor

    def skip_reason(self, dtype, backend):
        if self.name.startswith("PREMUL_SUM") and dtype not in FLOATS:
            return "c10d's NCCL backend has PREMUL_SUM for half, float, bfloat16 and double only"
        if backend == "gloo" and (self.name == "AVG" or self.name.startswith("PREMUL_SUM")):
            return "gloo has no AVG or PREMUL_SUM"
        return None

    def reduce_op(self, dtype, device):
        if self.name.startswith("PREMUL_SUM"):
            if self.tensor_factor:  # c10d reads the factor as the input's type (float for bfloat16), on the device
                factor_type = torch.float32 if dtype == torch.bfloat16 else dtype
                return dist._make_nccl_premul_sum(torch.tensor(self.factor, dtype=factor_type, device=device))
            return dist._make_nccl_premul_sum(self.factor)
        return getattr(dist.ReduceOp, self.name)

    def expect(self, inputs, dtype):
        """The result over every rank's inputs (host values: float64 or int64), in dtype."""
        stacked = torch.stack(inputs)
        if self.name == "SUM" or self.name.startswith("PREMUL_SUM"):
            result = stacked.sum(0)
            if self.factor is not None:
                result = result * nccl_factor(self.factor, dtype)
        elif self.name == "AVG" and dtype not in FLOATS:
            # c10d passes ncclAvg through; NCCL's integer average divides the sum and truncates toward zero
            result = torch.div(stacked.sum(0), len(inputs), rounding_mode="trunc")
        elif self.name == "AVG":
            result = stacked.sum(0) / len(inputs)
        elif self.name == "PRODUCT":
            result = stacked.prod(0)
        elif self.name == "MAX":
            result = stacked.amax(0)
        else:
            result = stacked.amin(0)
        if dtype == torch.uint8:
            result = result & 0xFF  # unsigned bytes wrap, as NCCL's uint8 arithmetic does
        return result.to(dtype)

    def relative_tolerance(self, dtype, world):
        # Division by a power of two is exact; an average over 3 ranks rounds once (NCCL may scale before summing).
        if self.name == "AVG" and world & (world - 1):
            return 2 * torch.finfo(dtype).eps
        return 0.0


OPS = [Op("SUM", "sum"), Op("AVG", "sum"), Op("MAX", "any"), Op("MIN", "any"), Op("PRODUCT", "product"),
       Op("PREMUL_SUM(0.5)", "sum", factor=0.5), Op("PREMUL_SUM(tensor 0.25)", "sum", factor=0.25, tensor_factor=True)]
SUM, MAX, MIN = OPS[0], OPS[2], OPS[3]
WRAPPING_SUM = Op("SUM", "bytes")  # uint8 only: full-range bytes, the sum wrapped mod 256


def nccl_factor(factor, dtype):
    """The PREMUL_SUM factor NCCL multiplies by. torch 2.11 hands NCCL a bfloat16 factor as a C float (its
    unpackPreMulSum<float, ncclBfloat16>, for the host scalar and for the device tensor, which must be float32), and
    NCCL reads the 2 bytes of a bfloat16 there: the float's low half. So the real NCCL, and Canopy as NCCL, multiply
    by that (0 for 0.5 and 0.25, whose low halves are zero); other types get the factor itself."""
    if dtype != torch.bfloat16:
        return factor
    low_half = struct.unpack("<I", struct.pack("<f", factor))[0] & 0xFFFF
    return struct.unpack("<f", struct.pack("<I", low_half << 16))[0]


def draw(name, rank, count, dtype, values, world):
    """Rank `rank`'s inputs of case `name`: host values (float64 for floats, int64 for integers) that dtype holds
    exactly, from a seed of the name and the rank."""
    g = torch.Generator().manual_seed(zlib.crc32(f"{name}/rank {rank}".encode()))
    floating = dtype in FLOATS

    def integers(low, high):  # low .. high inclusive
        return torch.randint(low, high + 1, (count,), generator=g, dtype=torch.int64)

    if values == "any":
        if floating:
            return torch.randn(count, generator=g, dtype=torch.float64).to(dtype).to(torch.float64)
        if dtype == torch.int64:
            return integers(-2**63, 2**63 - 2)
        return integers(0, 255)
    if values == "sum":
        if floating:
            return integers(-8, 8).to(torch.float64)
        if dtype == torch.int64:
            bound = 2**62 // world
            return integers(-bound, bound)
        return integers(0, 255 // world)
    if values == "product":
        if floating:
            return torch.tensor([-2.0, -1.0, 1.0, 2.0], dtype=torch.float64)[integers(0, 3)]
        if dtype == torch.int64:
            return integers(-3, 3)
        return integers(0, 2 if 2**world < 256 else 1)
    assert values == "bytes" and dtype == torch.uint8, values
    return integers(0, 255)


def device_tensor(host, dtype, device):
    # Always a copy: the collective writes it, and the host values stay the reference (on the CPU, int64 to int64
    # would otherwise be the same tensor).
    return host.to(device=device, dtype=dtype, copy=True)


def poisoned(count, dtype, device):
    return torch.full((count,), POISON, dtype=dtype, device=device)


def compare(got, want, relative_tolerance=0.0, what="result"):
    """None when equal (within the tolerance, floats), else a line naming the first difference."""
    got = got.cpu()
    if got.shape != want.shape:
        return f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}"
    if want.dtype in FLOATS:
        g, w = got.to(torch.float64), want.to(torch.float64)
        bad = ~((g - w).abs() <= relative_tolerance * w.abs())  # NaN counts as wrong
    else:
        g, w = got, want
        bad = g != w
    wrong = int(bad.sum())
    if wrong == 0:
        return None
    first = int(bad.nonzero()[0, 0])
    return f"{what}: {wrong} of {w.numel()} elements wrong, first [{first}] = {g[first].item()}, want {w[first].item()}"


def first_error(*errors):
    for error in errors:
        if error:
            return error
    return None


class Checker:
    """Runs the cases, prints them (rank 0: every case; other ranks: their wrong ones) and counts."""

    def __init__(self, rank, world, device, backend):
        self.rank, self.world, self.device, self.backend = rank, world, device, backend
        self.cases, self.wrong, self.skipped = [], [], 0

    def run(self, name, check):
        self.cases.append(name)
        try:
            error = check(name)
        except Exception as exception:  # a raised error is a wrong case too; the next cases still run
            lines = traceback.format_exception_only(type(exception), exception)
            error = "raised " + " ".join(line.strip() for line in lines)[:600]
            # A _coalescing_manager that raised leaves the group marked as coalescing, and c10d would then only
            # record every later all_reduce, never issue it: clear the mark so that one failure stays one case.
            dist.distributed_c10d._world.pg_coalesce_state.clear()
        if error:
            self.wrong.append(name)
            print(f"{name:58s} WRONG on rank {self.rank}: {error}", flush=True)
        elif self.rank == 0:
            print(f"{name:58s} ok", flush=True)

    def skip(self, name, reason):
        self.skipped += 1
        if self.rank == 0:
            print(f"{name:58s} skipped: {reason}", flush=True)


def inputs_of(name, count, dtype, values, world):
    return [draw(name, r, count, dtype, values, world) for r in range(world)]


def check_all_reduce(c, dtype, count, op):
    def check(name):
        inputs = inputs_of(name, count, dtype, op.values, c.world)
        t = device_tensor(inputs[c.rank], dtype, c.device)
        dist.all_reduce(t, op=op.reduce_op(dtype, c.device))
        return compare(t, op.expect(inputs, dtype), op.relative_tolerance(dtype, c.world))
    return check


def check_broadcast(c, dtype, count, root):
    def check(name):
        data = draw(name, root, count, dtype, "any", c.world)
        t = device_tensor(data, dtype, c.device) if c.rank == root else poisoned(count, dtype, c.device)
        dist.broadcast(t, src=root)
        return compare(t, data.to(dtype))
    return check


def check_reduce(c, dtype, count, root, op):
    def check(name):
        inputs = inputs_of(name, count, dtype, op.values, c.world)
        t = device_tensor(inputs[c.rank], dtype, c.device)
        dist.reduce(t, dst=root, op=op.reduce_op(dtype, c.device))
        if c.rank == root:
            return compare(t, op.expect(inputs, dtype), op.relative_tolerance(dtype, c.world))
        if c.backend == "gloo":
            return None  # gloo uses the other ranks' tensors as scratch
        # c10d passes the tensor as NCCL's receive buffer on every rank; NCCL writes it on the root only.
        return compare(t, inputs[c.rank].to(dtype), what="non-root tensor (NCCL leaves it as it was)")
    return check


def check_all_gather_into_tensor(c, dtype, count):
    def check(name):
        inputs = inputs_of(name, count, dtype, "any", c.world)
        out = poisoned(c.world * count, dtype, c.device)
        dist.all_gather_into_tensor(out, device_tensor(inputs[c.rank], dtype, c.device))
        return compare(out, torch.cat(inputs).to(dtype))
    return check


def check_reduce_scatter_tensor(c, dtype, count, op):
    def check(name):
        inputs = inputs_of(name, c.world * count, dtype, op.values, c.world)
        out = poisoned(count, dtype, c.device)
        dist.reduce_scatter_tensor(out, device_tensor(inputs[c.rank], dtype, c.device),
                                   op=op.reduce_op(dtype, c.device))
        mine = [x[c.rank * count:(c.rank + 1) * count] for x in inputs]
        return compare(out, op.expect(mine, dtype), op.relative_tolerance(dtype, c.world))
    return check


def check_all_gather_list(c, dtype, count, uneven):
    """all_gather into a list; uneven: rank r gives count + r elements (c10d then broadcasts from each rank)."""
    def check(name):
        counts = [count + (r if uneven else 0) for r in range(c.world)]
        inputs = [draw(name, r, counts[r], dtype, "any", c.world) for r in range(c.world)]
        outs = [poisoned(n, dtype, c.device) for n in counts]
        dist.all_gather(outs, device_tensor(inputs[c.rank], dtype, c.device))
        return first_error(*(compare(outs[r], inputs[r].to(dtype), what=f"piece from rank {r}")
                             for r in range(c.world)))
    return check


def check_reduce_scatter_list(c, dtype, count, uneven):
    """reduce_scatter of a list with SUM; uneven: piece r has count + r elements (c10d then reduces to each)."""
    def check(name):
        counts = [count + (r if uneven else 0) for r in range(c.world)]
        # Rank s's piece j: its own draw of counts[j] values.
        pieces = [[draw(f"{name}/piece {j}", s, counts[j], dtype, SUM.values, c.world) for j in range(c.world)]
                  for s in range(c.world)]
        out = poisoned(counts[c.rank], dtype, c.device)
        dist.reduce_scatter(out, [device_tensor(p, dtype, c.device) for p in pieces[c.rank]], op=dist.ReduceOp.SUM)
        return compare(out, SUM.expect([pieces[s][c.rank] for s in range(c.world)], dtype))
    return check


def check_barrier(c, async_op):
    def check(name):
        work = dist.barrier(async_op=async_op)
        if async_op:
            work.wait()
        return None
    return check


def check_async(c, dtype, count):
    """Several collectives issued with async_op=True before any wait, then waited on in turn."""
    def check(name):
        reduced = [inputs_of(f"{name}/all_reduce {i}", count, dtype, SUM.values, c.world) for i in range(3)]
        gathered = inputs_of(f"{name}/all_gather", count, dtype, "any", c.world)
        root = c.world - 1
        sent = draw(f"{name}/broadcast", root, count, dtype, "any", c.world)
        scattered = inputs_of(f"{name}/reduce_scatter", c.world * count, dtype, MAX.values, c.world)
        sums = [device_tensor(x[c.rank], dtype, c.device) for x in reduced]
        gather_out = poisoned(c.world * count, dtype, c.device)
        bcast = device_tensor(sent, dtype, c.device) if c.rank == root else poisoned(count, dtype, c.device)
        scatter_out = poisoned(count, dtype, c.device)
        works = [dist.all_reduce(t, op=dist.ReduceOp.SUM, async_op=True) for t in sums]
        works.append(dist.all_gather_into_tensor(gather_out, device_tensor(gathered[c.rank], dtype, c.device),
                                                 async_op=True))
        works.append(dist.broadcast(bcast, src=root, async_op=True))
        works.append(dist.reduce_scatter_tensor(scatter_out, device_tensor(scattered[c.rank], dtype, c.device),
                                                op=dist.ReduceOp.MAX, async_op=True))
        for work in works:
            work.wait()
        mine = [x[c.rank * count:(c.rank + 1) * count] for x in scattered]
        return first_error(*(compare(t, SUM.expect(x, dtype), what=f"all_reduce {i}")
                             for i, (t, x) in enumerate(zip(sums, reduced))),
                           compare(gather_out, torch.cat(gathered).to(dtype), what="all_gather_into_tensor"),
                           compare(bcast, sent.to(dtype), what="broadcast"),
                           compare(scatter_out, MAX.expect(mine, dtype), what="reduce_scatter_tensor"))
    return check


COALESCED_COUNTS = (1, 7, 1023, 65537)


def check_coalesced_all_reduce(c, dtype, op, async_ops):
    def check(name):
        inputs = [inputs_of(f"{name}/{n}", n, dtype, op.values, c.world) for n in COALESCED_COUNTS]
        ts = [device_tensor(x[c.rank], dtype, c.device) for x in inputs]
        with dist._coalescing_manager(async_ops=async_ops) as cm:
            for t in ts:
                dist.all_reduce(t, op=op.reduce_op(dtype, c.device))
        if async_ops:
            cm.wait()
        return first_error(*(compare(t, op.expect(x, dtype), what=f"tensor of {t.numel()}")
                             for t, x in zip(ts, inputs)))
    return check


def check_coalesced_all_gather(c, dtype):
    def check(name):
        inputs = [inputs_of(f"{name}/{n}", n, dtype, "any", c.world) for n in COALESCED_COUNTS]
        outs = [poisoned(c.world * n, dtype, c.device) for n in COALESCED_COUNTS]
        with dist._coalescing_manager():
            for out, x in zip(outs, inputs):
                dist.all_gather_into_tensor(out, device_tensor(x[c.rank], dtype, c.device))
        return first_error(*(compare(out, torch.cat(x).to(dtype), what=f"output of {out.numel()}")
                             for out, x in zip(outs, inputs)))
    return check


def check_coalesced_reduce_scatter(c, dtype):
    def check(name):
        inputs = [inputs_of(f"{name}/{n}", c.world * n, dtype, SUM.values, c.world) for n in COALESCED_COUNTS]
        outs = [poisoned(n, dtype, c.device) for n in COALESCED_COUNTS]
        with dist._coalescing_manager():
            for out, x in zip(outs, inputs):
                dist.reduce_scatter_tensor(out, device_tensor(x[c.rank], dtype, c.device), op=dist.ReduceOp.SUM)
        errors = []
        for n, out, x in zip(COALESCED_COUNTS, outs, inputs):
            mine = [v[c.rank * n:(c.rank + 1) * n] for v in x]
            errors.append(compare(out, SUM.expect(mine, dtype), what=f"output of {n}"))
        return first_error(*errors)
    return check


def check_coalesced_broadcasts(c, dtype):
    """Broadcasts from every rank in turn inside one coalescing block with a device (c10d's start/end coalescing:
    one NCCL group)."""
    def check(name):
        sent = [draw(f"{name}/{n}", i % c.world, n, dtype, "any", c.world) for i, n in enumerate(COALESCED_COUNTS)]
        ts = [device_tensor(x, dtype, c.device) if i % c.world == c.rank else poisoned(x.numel(), dtype, c.device)
              for i, x in enumerate(sent)]
        with dist._coalescing_manager(device=c.device):
            for i, t in enumerate(ts):
                dist.broadcast(t, src=i % c.world)
        return first_error(*(compare(t, x.to(dtype), what=f"broadcast {i} from rank {i % c.world}")
                             for i, (t, x) in enumerate(zip(ts, sent))))
    return check


def check_all_reduce_coalesced(c, dtype):
    """The deprecated torch.distributed.all_reduce_coalesced (still in torch 2.11)."""
    def check(name):
        inputs = [inputs_of(f"{name}/{n}", n, dtype, SUM.values, c.world) for n in COALESCED_COUNTS]
        ts = [device_tensor(x[c.rank], dtype, c.device) for x in inputs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            dist.all_reduce_coalesced(ts, op=dist.ReduceOp.SUM)
        return first_error(*(compare(t, SUM.expect(x, dtype), what=f"tensor of {t.numel()}")
                             for t, x in zip(ts, inputs)))
    return check


def run_cases(c, dtypes, sizes):
    w = c.world
    gloo = c.backend == "gloo"
    for dtype in dtypes:
        d = short(dtype)
        for count in sizes:
            for op in OPS:
                name = f"all_reduce {op.name} {d} n={count}"
                reason = op.skip_reason(dtype, c.backend)
                c.skip(name, reason) if reason else c.run(name, check_all_reduce(c, dtype, count, op))
            if dtype == torch.uint8:
                c.run(f"all_reduce SUM wrapping mod 256 {d} n={count}",
                      check_all_reduce(c, dtype, count, WRAPPING_SUM))
            for root in sorted({0, w - 1}):
                c.run(f"broadcast from {root} {d} n={count}", check_broadcast(c, dtype, count, root))
            for root, op in sorted({(w - 1, SUM), (0, MIN)}, key=lambda pair: pair[0]):
                c.run(f"reduce {op.name} to {root} {d} n={count}", check_reduce(c, dtype, count, root, op))
            c.run(f"all_gather_into_tensor {d} n={count}", check_all_gather_into_tensor(c, dtype, count))
            for op in OPS:
                name = f"reduce_scatter_tensor {op.name} {d} n={count}"
                reason = op.skip_reason(dtype, c.backend)
                c.skip(name, reason) if reason else c.run(name, check_reduce_scatter_tensor(c, dtype, count, op))
            for uneven in (False, True):
                kind = "uneven list" if uneven else "list"
                name = f"all_gather {kind} {d} n={count}"
                if gloo and uneven:
                    c.skip(name, "gloo's all_gather wants equal sizes")
                else:
                    c.run(name, check_all_gather_list(c, dtype, count, uneven))
                name = f"reduce_scatter {kind} SUM {d} n={count}"
                if gloo:
                    c.skip(name, "gloo has no reduce_scatter")
                else:
                    c.run(name, check_reduce_scatter_list(c, dtype, count, uneven))
        for count in (7, 65537):
            c.run(f"async_op waits {d} n={count}", check_async(c, dtype, count))
        c.run(f"coalesced all_reduce SUM {d}", check_coalesced_all_reduce(c, dtype, SUM, False))
        c.run(f"coalesced all_reduce MAX async {d}", check_coalesced_all_reduce(c, dtype, MAX, True))
        c.run(f"coalesced all_gather_into_tensor {d}", check_coalesced_all_gather(c, dtype))
        c.run(f"coalesced reduce_scatter_tensor SUM {d}", check_coalesced_reduce_scatter(c, dtype))
        if gloo:
            c.skip(f"coalesced broadcasts {d}", "gloo has no start/end coalescing")
        else:
            c.run(f"coalesced broadcasts {d}", check_coalesced_broadcasts(c, dtype))
        c.run(f"all_reduce_coalesced SUM {d}", check_all_reduce_coalesced(c, dtype))
    c.run("barrier", check_barrier(c, False))
    c.run("barrier async_op", check_barrier(c, True))


def main():
    parser = argparse.ArgumentParser(description="Every c10d collective checked against the host (run under torchrun)")
    parser.add_argument("--backend", default="nccl", choices=("nccl", "gloo"),
                        help="nccl (default; the library under test); gloo: CPU self-test of this script")
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated, from " + ",".join(DTYPES))
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help=f"element counts, comma-separated ({DEFAULT_SIZES})")
    args = parser.parse_args()
    dtypes = [DTYPES[d] for d in args.dtypes.split(",") if d]
    sizes = [int(n) for n in args.sizes.split(",") if n]

    rank, world, device = torch_setup.start(args.backend)
    if rank == 0:
        print("c10d_check:", torch_setup.describe(args.backend, world, device), flush=True)
    c = Checker(rank, world, device, args.backend)
    run_cases(c, dtypes, sizes)

    wrong_by_rank = torch_setup.gather_from_ranks("c10d_check", rank, world, c.wrong)
    wrong = sorted({name for names in wrong_by_rank for name in names})
    if rank == 0:
        for name in wrong:
            ranks = [r for r, names in enumerate(wrong_by_rank) if name in names]
            print(f"wrong: {name} (ranks {', '.join(map(str, ranks))})")
        print(f"c10d_check: {c.skipped} skipped")
        print(f"c10d_check: {len(c.cases)} cases, {len(wrong)} wrong", flush=True)
    torch_setup.finish()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
