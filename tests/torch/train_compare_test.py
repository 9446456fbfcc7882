#!/usr/bin/env python3
# Unit tests of tests/torch/train_compare.py (ctest torch.train_compare, label cpu; needs python3, not torch): its
# table's step statistics, the target's verdict on the medians alone, the lower quartiles printed beside it, the
# slow steps that were waits for another rank, and its refusals. The runs are written here in train_bench.py's JSON
# shape (train_compare reads our own benchmark's output, not another tool's), with step times chosen so that every
# printed number can be worked out by hand.
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_compare.py")
CONFIG = {"width": 64, "layers": 2, "batch": 8, "optimizer": "sgd", "lr": 0.01, "seed": 1, "warmup": 2, "steps": 8}
LOSSES = [0.6, 0.5, 0.45, 0.41, 0.38, 0.36, 0.35, 0.34, 0.335, 0.33]


def run_json(library, steps, losses=LOSSES, mode="ddp", **extra):
    ordered = sorted(steps)
    median = (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2
    run = {"mode": mode, "world": 2, "params": 8448, "device": "cpu", "torch": "test", "library": library,
           "config": dict(CONFIG), "losses": list(losses), "step_ms": list(steps), "median_step_ms": median,
           "mean_step_ms": sum(steps) / len(steps)}
    run.update(extra)
    return run


class TrainCompare(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def compare(self, runs, *args):
        paths = []
        for n, run in enumerate(runs):
            path = os.path.join(self.dir.name, f"{n}-{run['library'].replace(' ', '')}.json")
            with open(path, "w") as f:
                json.dump(run, f)
            paths.append(path)
        done = subprocess.run([sys.executable, SCRIPT, *paths, *args], capture_output=True, text=True)
        return done.returncode, done.stdout + done.stderr

    def test_table_shows_quartile_fastest_and_slow_steps(self):
        # 8 steps: sorted 9, 9, 9, 9, 9, 20, 20, 20: lower quartile (index 2) 9, fastest 9, 3 steps >= 1.25 x 9.
        code, out = self.compare([run_json("real NCCL", [9, 9, 20, 9, 20, 9, 20, 9])])
        self.assertEqual(code, 0, out)
        self.assertIn("p25 ms best ms slow", out)
        row = next(line for line in out.splitlines() if "real NCCL" in line and ".json" in line)
        self.assertRegex(row, r"\s9\.00\s+9\.00\s+3\s")

    def test_verdict_stays_on_the_medians_and_quartiles_are_for_information(self):
        # Canopy: median 10, lower quartile 8, 5 steps >= 1.25 x 8 = 10; real NCCL: median 9, lower quartile 9. The
        # target (medians) is missed though Canopy's quartile is lower.
        canopy = run_json("canopy", [8, 8, 8, 10, 10, 10, 12, 12])
        real = run_json("real NCCL", [9, 9, 9, 9, 9, 9, 9, 9])
        code, out = self.compare([real, canopy], "--require-target")
        self.assertEqual(code, 3, out)
        self.assertIn("overall: Canopy 10.00 ms / real NCCL 9.00 ms = 1.111", out)
        self.assertIn("target Canopy <= real NCCL NOT MET", out)
        self.assertIn("lower quartiles Canopy 8.00 ms / real NCCL 9.00 ms = 0.889", out)
        self.assertIn("steps >= 1.25 x their run's fastest: Canopy 5, real NCCL 0", out)
        self.assertIn("target missed", out)

    def test_slow_steps_that_kept_the_cycle_count_as_waits(self):
        # Both runs: steps 9, 9, 20, 9, 20, 9, 20, 9 (slow: the three 20s). Canopy's starts come every 45 ms whatever
        # the step took (rank 0 waited inside its slow steps): 3 waits of 3. The real NCCL's cycle is 36 ms plus the
        # step (its slow steps lengthened the loop by their whole 11 ms): 0 of 3.
        steps = [9, 9, 20, 9, 20, 9, 20, 9]
        kept = [i * 0.045 for i in range(8)]
        grew = [sum(36 + t for t in steps[:i]) / 1e3 for i in range(8)]
        code, out = self.compare([run_json("real NCCL", steps, step_start_unix=grew),
                                  run_json("canopy", steps, step_start_unix=kept)])
        self.assertEqual(code, 0, out)
        self.assertIn("did not lengthen the loop's cycle, rank 0 waiting inside them for a rank that started them "
                      "later: Canopy 3 of 3, real NCCL 0 of 3", out)
        code, out = self.compare([run_json("real NCCL", steps), run_json("canopy", steps, step_start_unix=kept)])
        self.assertNotIn("did not lengthen", out)  # a run without start times: no count

    def test_five_rounds_each_the_target_is_met_only_where_the_whole_range_clears_it(self):
        # Run medians: Canopy 8, 8.5, 9, 9.5, 10 (median 9); real NCCL 9.5, 10, 10.5, 11, 11.5 (median 10.5). The
        # medians' ratio is 0.857, but Canopy's slowest run (10) is slower than the real NCCL's fastest (9.5): the
        # range 8/11.5 .. 10/9.5 = 0.696 .. 1.053 overlaps 1, so the target is not met.
        runs = []
        for k, (ours, theirs) in enumerate(zip([8, 8.5, 9, 9.5, 10], [9.5, 10, 10.5, 11, 11.5])):
            pair = [run_json("canopy", [ours] * 8), run_json("real NCCL", [theirs] * 8)]
            runs += pair if k % 2 else pair[::-1]
        code, out = self.compare(runs, "--require-target")
        self.assertEqual(code, 3, out)
        self.assertIn("overall: Canopy 9.00 ms / real NCCL 10.50 ms = 0.857 (median of the runs' medians; range "
                      "0.696-1.053 over Canopy's 8.00-10.00 ms in 5 runs and the real NCCL's 9.50-11.50 ms in 5)", out)
        self.assertIn("target Canopy <= real NCCL NOT MET (the runs' ranges overlap 1)", out)
        self.assertNotIn("note:", out)
        # Canopy's slowest run faster than the real NCCL's fastest: met.
        runs = [run_json("real NCCL", [10 + k] * 8) if n % 2 else run_json("canopy", [8 + k * 0.25] * 8)
                for k in range(5) for n in ((0, 1) if k % 2 else (1, 0))]
        code, out = self.compare(runs, "--require-target")
        self.assertEqual(code, 0, out)
        self.assertIn("target Canopy <= real NCCL met", out)

    def test_fewer_than_five_runs_are_noted(self):
        code, out = self.compare([run_json("real NCCL", [9] * 8), run_json("canopy", [8] * 8)])
        self.assertEqual(code, 0, out)
        self.assertIn("note: 1 run(s) of a library; a verdict to quote needs at least 5 of each, alternating", out)

    def test_runs_without_step_times_show_dashes_and_no_quartile_line(self):
        old = run_json("canopy", [9] * 8)
        del old["step_ms"]
        code, out = self.compare([run_json("real NCCL", [9] * 8), old])
        self.assertEqual(code, 0, out)
        row = next(line for line in out.splitlines() if "canopy" in line and ".json" in line)
        self.assertRegex(row, r"\s-\s+-\s+-\s")
        self.assertNotIn("lower quartiles", out)
        self.assertIn("target Canopy <= real NCCL met", out)

    def test_loss_curves_apart_fail(self):
        apart = [x * 1.01 for x in LOSSES]
        code, out = self.compare([run_json("real NCCL", [9] * 8), run_json("canopy", [9] * 8, losses=apart)])
        self.assertEqual(code, 1, out)
        self.assertIn("OVER", out)

    def test_runs_made_differently_are_not_compared(self):
        other = run_json("canopy", [9] * 8)
        other["config"]["batch"] = 16
        code, out = self.compare([run_json("real NCCL", [9] * 8), other])
        self.assertEqual(code, 1, out)
        self.assertIn("batch: 8 vs 16", out)
        self.assertIn("NOT COMPARABLE", out)

    def test_a_file_that_is_not_a_run_is_named(self):
        path = os.path.join(self.dir.name, "other.json")
        with open(path, "w") as f:
            json.dump({"rows": []}, f)
        done = subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("other.json is not a train_bench.py run", done.stderr)


if __name__ == "__main__":
    unittest.main()
