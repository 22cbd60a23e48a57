#!/usr/bin/env python3
"""scripts/device/anchor.py's parts that need no GPU: the fa-bench shapes (attnprof's preset), shapes
from a results file, attnprof's bottom-right causal semantics, the FLOP count, the P50 and the
sampling stop rule, the output rows as perf_table.py and gap_table.py read them, and --list.

usage: anchor_test.py SOURCE_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys
import unittest

SOURCE = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
WORK = sys.argv.pop(1) if len(sys.argv) > 1 else "/tmp/anchor-test"
SCRIPT = os.path.join(SOURCE, "scripts", "device", "anchor.py")
sys.path.insert(0, os.path.join(SOURCE, "scripts", "device"))
import anchor  # noqa: E402


class Shapes(unittest.TestCase):
    def test_fa_bench_is_attnprofs_preset(self):
        shapes = anchor.fa_bench_shapes()
        self.assertEqual(len(shapes), 2 * 2 * 2 * 6)  # dtype, hdim, causal, seq 512-16384
        first = shapes[0]
        self.assertEqual(first, {"batch": 32, "heads": 32, "kv_heads": 32, "seq_q": 512, "seq_k": 512, "hdim": 64,
                                 "causal": False, "dtype": "bf16"})
        for s in shapes:
            self.assertEqual(s["batch"] * s["seq_q"], 16384)
            self.assertEqual(s["heads"] * s["hdim"], 2048)

    def test_load_shapes_from_results_spec_and_list(self):
        rec = {"batch": 16, "heads": 32, "kv_heads": 8, "seq_q": 1, "seq_k": 4096, "hdim": 128, "causal": False,
               "dtype": "bf16"}
        results = {"records": [{"shape": rec}, {"shape": rec}, {"shape": dict(rec, seq_k=16384)}]}
        self.assertEqual(anchor.load_shapes(results), [rec, dict(rec, seq_k=16384)])  # each once, in order
        self.assertEqual(anchor.load_shapes({"shapes": [rec]}), [rec])
        # sdpa_anchor's own spelling: seq for both, the dtype's torch name, no kv_heads
        self.assertEqual(anchor.load_shapes([{"batch": 2, "heads": 4, "seq": 64, "hdim": 64, "causal": 1,
                                              "dtype": "bfloat16"}])[0],
                         {"batch": 2, "heads": 4, "kv_heads": 4, "seq_q": 64, "seq_k": 64, "hdim": 64, "causal": True,
                          "dtype": "bf16"})
        for bad in ({"nothing": []}, [dict(rec, kv_heads=3)], [dict(rec, dtype="fp32")], [dict(rec, batch=0)]):
            with self.assertRaises(ValueError):
                anchor.load_shapes(bad)


class Semantics(unittest.TestCase):
    def shape(self, sq, sk, causal=True):
        return anchor.normalise({"batch": 1, "heads": 8, "seq_q": sq, "seq_k": sk, "hdim": 64, "causal": causal,
                                 "dtype": "bf16"})

    def test_bottom_right_causal(self):
        self.assertEqual(anchor.mask_plan(self.shape(256, 256, causal=False)), "none")
        self.assertEqual(anchor.mask_plan(self.shape(256, 256)), "is_causal")
        self.assertEqual(anchor.mask_plan(self.shape(1, 4096)), "none")  # one row sees every key
        self.assertEqual(anchor.mask_plan(self.shape(128, 1024)), "lower_right")
        with self.assertRaises(anchor.Unsupported):
            anchor.mask_plan(self.shape(512, 256))

    def test_flops_as_the_cost_model(self):
        s = anchor.normalise({"batch": 2, "heads": 4, "seq_q": 128, "seq_k": 256, "hdim": 64, "causal": False,
                              "dtype": "fp16"})
        self.assertEqual(anchor.flops(s), 4 * 2 * 4 * 128 * 256 * 64)
        self.assertEqual(anchor.flops(dict(s, causal=True)), 2 * 2 * 4 * 128 * 256 * 64)

    def test_naive_refuses_scores_that_do_not_fit(self):
        self.assertEqual(anchor.naive_refusal(self.shape(8192, 8192)), "")
        self.assertIn("GiB", anchor.naive_refusal(anchor.normalise(
            {"batch": 1, "heads": 32, "seq": 16384, "hdim": 128, "dtype": "bf16"})))

    def test_refusal_reason_is_one_line_without_source_locations(self):
        why = anchor.refusal_reason(RuntimeError("No available kernel.\nAborting execution."),
                                    ["Flash attention requires\nthe same heads (Triggered internally at /x/y.cpp:12.)"])
        self.assertEqual(why, "Flash attention requires the same heads No available kernel. Aborting execution.")


class Statistics(unittest.TestCase):
    def test_p50_interpolates(self):
        self.assertEqual(anchor.p50([4.0, 1.0, 3.0, 2.0]), 2.5)
        self.assertEqual(anchor.p50([3.0, 1.0, 2.0]), 2.0)

    def test_stop_rule(self):
        steady = [1.0 + 0.0001 * (i % 3) for i in range(40)]
        self.assertFalse(anchor.converged(steady[:29]))  # the batch interval needs 3 samples per batch
        self.assertTrue(anchor.converged(steady))
        stepped = [1.0 if i < 20 else 1.2 for i in range(40)]  # the clock stepped halfway
        self.assertFalse(anchor.converged(stepped))
        self.assertFalse(anchor.stop_sampling(steady, 0.1, 10, 0.25, 1.0))  # under the minimum time
        self.assertTrue(anchor.stop_sampling(steady, 0.3, 10, 0.25, 1.0))
        self.assertFalse(anchor.stop_sampling(stepped, 0.3, 10, 0.25, 1.0))
        self.assertTrue(anchor.stop_sampling(stepped, 1.0, 10, 0.25, 1.0))  # the budget ends it
        self.assertFalse(anchor.stop_sampling(steady[:5], 0.5, 10, 0.25, 1.0))  # under the minimum count

    def test_row_as_the_tables_read_it(self):
        s = anchor.fa_bench_shapes(seqs=(1024,), hdims=(128,), dtypes=("bf16",))[0]
        row = anchor.row_for(s, {"flash": [1.0, 2.0, 3.0], "efficient": "refused"})
        self.assertEqual(row["seq"], 1024)
        self.assertEqual(row["flash_ms"], 2.0)
        self.assertEqual(row["flash_samples"], 3)
        self.assertAlmostEqual(row["flash_tflops"], round(anchor.flops(s) / 2e-3 / 1e12, 2))
        self.assertEqual((row["efficient_ms"], row["efficient_tflops"], row["efficient_err"]), (None, None, "refused"))


class Tables(unittest.TestCase):
    """anchor.py's rows feed perf_table.py (fa-bench) and gap_table.py (shapes)."""

    def test_rows_in_both_tables(self):
        os.makedirs(WORK, exist_ok=True)
        shapes = anchor.fa_bench_shapes(seqs=(1024,), hdims=(128,), dtypes=("bf16",))[:1]
        shapes.append(anchor.normalise({"batch": 16, "heads": 32, "kv_heads": 8, "seq_q": 1, "seq_k": 4096,
                                        "hdim": 128, "dtype": "bf16"}))
        rows = [anchor.row_for(shapes[0], {"flash": [0.5], "cudnn": [0.25], "naive": [2.0]}),
                anchor.row_for(shapes[1], {"flash": [0.02]})]
        records = []
        for s, kernel, p50 in ((shapes[0], "fused", 1000.0), (shapes[1], "torch:flash", 21.0)):
            records.append({"key": kernel, "kernel": kernel, "status": "ok", "shape": s, "tflops": anchor.flops(s) / 1e-3 / 1e12,
                            "latency": {"p50_us": p50, "p99_us": p50}, "verification": {"passed": True, "o_max_abs_err": 1e-3},
                            "cost": {"flops": anchor.flops(s), "min_bytes_read": 1e6}, "diagnosis": None})
        paths = {n: os.path.join(WORK, n) for n in ("results.json", "anchor.json")}
        with open(paths["results.json"], "w") as f:
            json.dump({"context": {"git_revision": "x", "device": {"name": "GPU"}, "date_utc": "d", "command_line": "c"},
                       "records": records}, f)
        with open(paths["anchor.json"], "w") as f:
            json.dump(rows, f)
        perf = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "perf_table.py"), paths["results.json"],
                               paths["anchor.json"]], capture_output=True, text=True, timeout=60)
        self.assertEqual(perf.returncode, 0, perf.stderr)
        # fused 0.5x flash's TFLOP/s (1 ms against 0.5 ms), 0.25x cuDNN's
        self.assertIn(f"| bf16 | 128 | no | 1024 | {anchor.flops(shapes[0]) / 1e9:.0f} | - | "
                      f"{rows[0]['flash_tflops']:.1f} | {rows[0]['cudnn_tflops']:.1f} | 0.50 | 0.25 |", perf.stdout)
        self.assertIn(f"| {rows[0]['naive_tflops']:.1f} |", perf.stdout)
        gap = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "gap_table.py"), paths["results.json"],
                              paths["anchor.json"]], capture_output=True, text=True, timeout=60)
        self.assertEqual(gap.returncode, 0, gap.stderr)
        self.assertIn("| 21.0 / 20.0 |", gap.stdout)  # attnprof's torch:flash P50 beside anchor.py's


class CommandLine(unittest.TestCase):
    def test_list_needs_no_torch(self):
        out = subprocess.run([sys.executable, SCRIPT, "fa-bench", "--seqs", "2048", "--hdims", "64", "--dtypes", "fp16",
                              "--list"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual([json.loads(l)["causal"] for l in out.stdout.splitlines()], [False, True])

    def test_bad_arguments(self):
        for args in (["fa-bench", "--backends", "flash,nope", "--list"], ["fa-bench"],
                     ["shapes", os.path.join(WORK, "no-such.json"), "--list"]):
            out = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 2, (args, out.stdout, out.stderr))


if __name__ == "__main__":
    unittest.main(verbosity=1)
