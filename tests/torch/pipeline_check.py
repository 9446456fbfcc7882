#!/usr/bin/env python3
# A two-stage pipeline-parallel toy model through libcanopy_nccl.so (issue 68; docs/nccl-api.md "Checking it with
# PyTorch"): ranks pair up (0 and 1, 2 and 3, ...), the even rank of a pair holding the first stage and the odd rank the
# second. Each step sends the first stage's activations forward with dist.send, the second stage's input gradients
# back with dist.recv's partner, micro-batches in turn (isend/irecv, as GPipe-style schedules issue them), then every
# rank's gradients are averaged over the pipelines with all_reduce (data parallelism across the pairs). Every rank also
# runs the same model in one piece on its own, and the losses and weights after the steps must agree to 1e-5.
# Run under torchrun, all ranks on GPU 0:
#
#   LD_PRELOAD=build/libcanopy_nccl.so torchrun --standalone --nproc_per_node 2 tests/torch/pipeline_check.py
#
# Ends with `pipeline_check: N cases, W wrong`; exit 1 on any wrong case.
import argparse
import sys

import torch
import torch.distributed as dist

sys.dont_write_bytecode = True  # importing the helpers beside it leaves no __pycache__ in the tree
import torch_setup  # noqa: E402 (after the line above)

WIDTH, HIDDEN, MICRO, BATCH, STEPS = 64, 256, 4, 32, 5


def make_model(device):
    torch.manual_seed(1234)
    first = torch.nn.Sequential(torch.nn.Linear(WIDTH, HIDDEN), torch.nn.Tanh()).to(device)
    second = torch.nn.Sequential(torch.nn.Linear(HIDDEN, WIDTH)).to(device)
    return first, second


def batch(pipeline, step, device):
    g = torch.Generator(device="cpu").manual_seed(1000 * pipeline + step)
    x = torch.randn(BATCH, WIDTH, generator=g)
    return x.to(device), (x.flip(1) * 0.5).to(device)


def average_gradients(params, group_size):
    for p in params:
        dist.all_reduce(p.grad)
        p.grad /= group_size


def pipelined_step(rank, pipelines, stage, step, device):
    """One step of this rank's stage: micro-batches forward (activations sent on), then backward (gradients back)."""
    first, second = stage
    pipeline, even = rank // 2, rank % 2 == 0
    x, y = batch(pipeline, step, device)
    xs, ys = x.chunk(MICRO), y.chunk(MICRO)
    partner = rank + 1 if even else rank - 1
    losses = []
    if even:
        outs = [first(m) for m in xs]
        for o in outs:
            dist.send(o.detach().contiguous(), partner)
        grads = [torch.empty_like(o) for o in outs]
        works = [dist.irecv(g, partner) for g in grads]
        for w in works:
            w.wait()
        for o, g in zip(outs, grads):
            o.backward(g)
        params = list(first.parameters())
    else:
        ins = [torch.empty(m.shape[0], HIDDEN, device=device) for m in xs]
        for i in ins:
            dist.recv(i, partner)
        sends = []
        for i, target in zip(ins, ys):
            i.requires_grad_(True)
            loss = torch.nn.functional.mse_loss(second(i), target) / MICRO
            loss.backward()
            losses.append(loss.item())
            sends.append(dist.isend(i.grad.contiguous(), partner))
        for w in sends:
            w.wait()
        params = list(second.parameters())
    # Data parallel across the pipelines: both stages average their gradients over the world (the other stage's ranks
    # pass zeros for it, so one all_reduce per tensor keeps every rank in the same call).
    return params, sum(losses)


def reference(pipelines, device):
    """The same steps in one piece on this rank: the losses per step and the final weights of both stages."""
    first, second = make_model(device)
    opt = torch.optim.SGD(list(first.parameters()) + list(second.parameters()), lr=0.1)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        total = 0.0
        for pipeline in range(pipelines):
            x, y = batch(pipeline, step, device)
            for mx, my in zip(x.chunk(MICRO), y.chunk(MICRO)):
                loss = torch.nn.functional.mse_loss(second(first(mx)), my) / MICRO / pipelines
                loss.backward()
                total += loss.item() * pipelines
        losses.append(total / pipelines)
        opt.step()
    return losses, [p.detach().clone() for p in list(first.parameters()) + list(second.parameters())]


def main():
    parser = argparse.ArgumentParser(description="A two-stage pipeline-parallel toy model: send/recv between the "
                                                 "stages, all_reduce across the pipelines, checked against the "
                                                 "model in one piece.")
    parser.add_argument("--backend", default="nccl", choices=["nccl", "gloo"])
    args = parser.parse_args()
    rank, world, device = torch_setup.start(args.backend)
    if world % 2 != 0:
        raise SystemExit(f"pipeline_check: needs an even number of ranks (two stages a pipeline), got {world}")
    pipelines = world // 2
    if rank == 0:
        print(f"pipeline_check: {torch_setup.describe(args.backend, world, device)}; {pipelines} pipeline(s) of two "
              f"stages, {MICRO} micro-batches, {STEPS} steps", flush=True)
    first, second = make_model(device)
    opt = torch.optim.SGD(list(first.parameters()) + list(second.parameters()), lr=0.1)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        for p in list(first.parameters()) + list(second.parameters()):
            p.grad = torch.zeros_like(p)
        _, loss = pipelined_step(rank, pipelines, (first, second), step, device)
        average_gradients(list(first.parameters()) + list(second.parameters()), pipelines)
        # The stage a rank does not hold has all-reduced gradients of the others' holders: the same on every rank.
        opt.step()
        losses.append(loss)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    want_losses, want_weights = reference(pipelines, device)
    got_weights = [p.detach() for p in list(first.parameters()) + list(second.parameters())]
    weight_error = max(float((g - w).abs().max()) for g, w in zip(got_weights, want_weights))
    mine = {"losses": losses, "weight_error": weight_error}
    everyone = torch_setup.gather_from_ranks("pipeline", rank, world, mine)
    wrong = 0
    if rank == 0:
        # Each step's loss: the mean over the pipelines of the second stages' (odd ranks') sums.
        for step in range(STEPS):
            got = sum(everyone[r]["losses"][step] for r in range(1, world, 2)) / pipelines
            ok = abs(got - want_losses[step]) <= 1e-5 * max(1.0, abs(want_losses[step]))
            wrong += 0 if ok else 1
            print(f"{'ok   ' if ok else 'WRONG'} step {step}: loss {got:.6f}, in one piece {want_losses[step]:.6f}",
                  flush=True)
        worst = max(r["weight_error"] for r in everyone)
        ok = worst <= 1e-5
        wrong += 0 if ok else 1
        print(f"{'ok   ' if ok else 'WRONG'} weights after {STEPS} steps: largest difference {worst:.2e} on any rank",
              flush=True)
        print(f"pipeline_check: {STEPS + 1} cases, {wrong} wrong", flush=True)
    verdict = torch_setup.gather_from_ranks("pipeline/verdict", rank, world, wrong)
    torch_setup.finish()
    return 1 if verdict[0] else 0


if __name__ == "__main__":
    sys.exit(main())
