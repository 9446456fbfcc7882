# What ddp_check.py and fsdp_check.py share (issue 32; docs/nccl-api.md "Checking it with PyTorch"): the model, each
# rank's batches, the one-process reference they are compared with, and the comparison.
#
# Every rank trains on its own batch of each step; the reference trains the same model (same seed, same SGD and
# learning rate) in one process on the ranks' batches concatenated in rank order. The loss is a mean over the
# batch, so the reference's gradient (mean over N x B samples) is the average of the ranks' gradients (means over B
# samples each), which is what DDP and FSDP's reduce-scatter (AVG) compute: the parameters must stay equal up to
# float32 rounding.
import torch
import torch.nn as nn
import torch.nn.functional as F

IN, HIDDEN, OUT, BATCH, LR, SEED = 24, 40, 10, 16, 0.05, 1234
LIMIT = 1e-5  # max abs difference allowed between the trained parameters and the reference's (float32)


def exact_float32():
    """float32 matmuls as float32 (no TF32), so that the comparison is one of summation order alone."""
    torch.set_float32_matmul_precision("highest")


def make_model(device):
    """The small MLP, initialised from SEED: the same on every rank and in the reference. Odd widths (24, 40, 10)
    make FSDP pad its shards when the ranks do not divide them."""
    torch.manual_seed(SEED)
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(),
                          nn.Linear(HIDDEN, OUT))
    return model.to(device)


def batch(step, rank, device):
    """Rank `rank`'s batch of step `step`: inputs and regression targets, drawn on the host from a seed."""
    g = torch.Generator().manual_seed(SEED * 7919 + step * 1009 + rank)
    x = torch.randn(BATCH, IN, generator=g)
    y = torch.randn(BATCH, OUT, generator=g)
    return x.to(device), y.to(device)


def train_step(model, optimizer, x, y):
    optimizer.zero_grad(set_to_none=True)
    loss = F.mse_loss(model(x), y)  # a mean over the batch
    loss.backward()
    optimizer.step()
    return loss.item()


def reference(world, steps, device):
    """The model trained in one process on every rank's batches concatenated: {name: parameter}."""
    model = make_model(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(steps):
        xs, ys = zip(*(batch(step, r, device) for r in range(world)))
        train_step(model, optimizer, torch.cat(xs), torch.cat(ys))
    return {name: p.detach() for name, p in model.named_parameters()}


def max_difference(trained, expected):
    """The largest |trained - expected| over every parameter (both {name: tensor} with the same names)."""
    if trained.keys() != expected.keys():
        raise SystemExit(f"parameter names differ: {sorted(trained)} vs {sorted(expected)}")
    return max(float((trained[n].float() - expected[n].float()).abs().max()) for n in expected)


def initial_distance(trained, device):
    """How far training moved the parameters from their initial values (a check that it did something)."""
    start = {name: p.detach() for name, p in make_model(device).named_parameters()}
    return max_difference(trained, start)


def verdict(check, rank, world, steps, trained, device):
    """Compares this rank's trained parameters with the one-process reference, prints them and the ranks' worst
    difference (agreed through torchrun's store), ends the process group; 1 when over LIMIT (or NaN), else 0."""
    import torch_setup  # beside this file
    expected = reference(world, steps, device)
    diff = max_difference(trained, expected)
    moved = initial_distance(trained, device)
    print(f"{check}: rank {rank}: max abs diff {diff:.3e} from the one-process reference "
          f"(training moved the parameters by up to {moved:.3e})", flush=True)
    worst = max(torch_setup.gather_from_ranks(check, rank, world, diff))
    over = not worst <= LIMIT  # NaN is over
    if rank == 0:
        print(f"{check}: {world} ranks, {steps} steps, max abs diff {worst:.3e} (limit {LIMIT})"
              f"{': OVER' if over else ''}", flush=True)
    torch_setup.finish()
    return 1 if over else 0
