#!/usr/bin/env python3
"""scripts/device/checks.py on small fixtures (tests/scripts/fixtures): every check passes on good input
and fails on input that breaks what it checks; the command line's exit codes.

usage: checks_test.py SOURCE_DIR
"""
import copy
import json
import os
import subprocess
import sys
import unittest

SOURCE = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
FIXTURES = os.path.join(SOURCE, "tests", "scripts", "fixtures")
SCRIPT = os.path.join(SOURCE, "scripts", "device", "checks.py")
sys.path.insert(0, os.path.join(SOURCE, "scripts", "device"))
import checks  # noqa: E402


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return json.load(f) if name.endswith(".json") else f.read()


class Fields(unittest.TestCase):
    def test_complete_sweep_passes(self):
        lines, ok = checks.check_fields(fixture("run_a.json"))
        self.assertTrue(ok, lines)
        self.assertIn("points with every field: 3 of 3", lines)
        self.assertTrue(any(l.startswith("DRAM written + L2 tail / analytic: 1.0000-1.8485") for l in lines), lines)

    def test_each_missing_field_is_named(self):
        doc = fixture("run_a.json")
        del doc["records"][0]["counters"]["dram_write_tail_bytes"]
        doc["records"][1]["diagnosis"] = None
        doc["records"][2]["stages"] = doc["records"][2]["stages"][:2]  # the reference has three stages
        lines, ok = checks.check_fields(doc)
        self.assertFalse(ok)
        self.assertIn("points with every field: 0 of 3", lines)
        self.assertTrue(any("MISSING" in l and "'L2 tail'" in l for l in lines), lines)
        self.assertTrue(any("MISSING" in l and "'diagnosis'" in l for l in lines), lines)
        self.assertTrue(any("MISSING" in l and "'stages'" in l for l in lines), lines)

    def test_samples_must_match_n(self):
        doc = fixture("run_a.json")
        doc["records"][0]["samples_us"].pop()
        self.assertEqual(checks.missing_fields(doc["records"][0]), ["raw samples"])

    def test_empty_sweep_fails(self):
        doc = fixture("run_a.json")
        doc["records"] = []
        self.assertFalse(checks.check_fields(doc)[1])


class OneSweep(unittest.TestCase):
    def test_reference_stages(self):
        lines, ok = checks.check_reference_stages(fixture("run_a.json"))
        self.assertTrue(ok)
        self.assertIn("    gemm 33% 2.00 TB/s compute 40.0 memory 60.0 memory-bound", lines)
        doc = fixture("run_a.json")
        doc["records"][2]["status"] = "failed"
        self.assertFalse(checks.check_reference_stages(doc)[1])

    def test_sessions(self):
        lines, ok = checks.check_sessions(fixture("run_a.json"))
        self.assertTrue(ok)
        self.assertEqual(sum(l.startswith("  session:") for l in lines), 1)  # one session shared by all
        self.assertTrue(any("write     16.00 MB + tail    0.50 MB =  1.000 x min write" in l for l in lines), lines)
        doc = fixture("run_a.json")
        doc["records"][1]["counters"]["status"] = "unavailable"
        self.assertFalse(checks.check_sessions(doc)[1])

    def test_clock(self):
        lines, ok = checks.check_clock(fixture("run_a.json"))
        self.assertTrue(ok)
        self.assertTrue(any("first 12 batches (us @ MHz): [(100, 1790), (100, 1810)]" in l for l in lines), lines)
        doc = fixture("run_a.json")
        doc["records"][0]["clock"]["sm_mhz_batches"] = []
        lines, ok = checks.check_clock(doc)
        self.assertFalse(ok)
        self.assertIn("  no clock batches", lines)

    def test_statuses(self):
        lines, ok = checks.check_statuses(fixture("run_a.json"))
        self.assertTrue(ok)
        self.assertIn("verified: 3 of 3 points that ran", lines)
        doc = fixture("run_a.json")
        doc["records"][0]["verification"]["passed"] = False
        doc["records"][1].update(status="unsupported", reason="PyTorch refuses it")
        lines, ok = checks.check_statuses(doc)
        self.assertFalse(ok)
        self.assertIn("verified: 1 of 2 points that ran", lines)
        self.assertTrue(any("fused: 1x PyTorch refuses it" in l for l in lines), lines)

    def test_plugin(self):
        lines, ok = checks.check_plugin(fixture("run_a.json"), "fused")
        self.assertTrue(ok)
        self.assertEqual(sum("verified=True" in l for l in lines), 2)
        self.assertFalse(checks.check_plugin(fixture("run_a.json"), "my-attention")[1])  # no points
        doc = fixture("run_a.json")
        doc["records"][0]["counters"]["status"] = "unavailable"
        self.assertFalse(checks.check_plugin(doc, "fused")[1])

    def test_metric_names(self):
        lines, ok = checks.metric_names(fixture("run_a.json"))
        self.assertTrue(ok)
        names = lines[0].split(",")
        self.assertIn("dram__bytes_read.sum", names)
        self.assertEqual(names, sorted(names))


class TwoSweeps(unittest.TestCase):
    def test_aa(self):
        lines, ok = checks.check_aa(fixture("run_a.json"), fixture("run_b.json"), "t")
        self.assertTrue(ok)
        self.assertIn("t points 3", lines)
        self.assertIn("  P50 within 0.5%: 2/3 (66.7%)", lines)
        self.assertIn("  P50 within 2.0%: 3/3 (100.0%)", lines)
        self.assertTrue(lines[-1].startswith("  +1.52% P50"), lines)  # the largest difference last

    def test_aa_without_common_points_fails(self):
        b = fixture("run_b.json")
        for r in b["records"]:
            r["key"] += " other"
        self.assertFalse(checks.check_aa(fixture("run_a.json"), b)[1])

    def test_p50_pairs(self):
        lines, ok = checks.check_p50_pairs([fixture("run_a.json"), fixture("run_b.json"), fixture("run_a.json")])
        self.assertTrue(ok)
        self.assertEqual(lines[0], "runs 0 vs 1: 2/3 P50s within 1% (67%), worst 1.52%")
        self.assertEqual(lines[1], "runs 0 vs 2: 3/3 P50s within 1% (100%), worst 0.00%")
        self.assertFalse(checks.check_p50_pairs([fixture("run_a.json")])[1])

    def test_counters_batched(self):
        lines, ok = checks.check_counters_batched(fixture("run_a.json"), fixture("run_b.json"))
        self.assertTrue(ok, lines)
        self.assertIn("dram__bytes_read.sum: worst batched vs per point 0.50%", " ".join(lines))

    def test_counters_batched_failures(self):
        b = fixture("run_b.json")
        b["records"][0]["counters"]["total"]["dram__bytes_write.sum"] *= 1.03  # over 2%
        self.assertFalse(checks.check_counters_batched(fixture("run_a.json"), b)[1])
        b = fixture("run_b.json")
        b["records"][0]["counters"]["reason"] = "batched session not used: ranges not attributed"
        lines, ok = checks.check_counters_batched(fixture("run_a.json"), b)
        self.assertFalse(ok)
        self.assertTrue(any(l.startswith("fell back to a session per point") for l in lines))
        b = fixture("run_b.json")
        b["records"][2]["counters"]["per_kernel"][0]["kernel"] = "renamed"
        self.assertFalse(checks.check_counters_batched(fixture("run_a.json"), b)[1])
        b = fixture("run_b.json")
        b["records"][0]["counters"]["total"]["gpu__time_duration.sum"] *= 1.5  # durations are not judged
        self.assertTrue(checks.check_counters_batched(fixture("run_a.json"), b)[1])

    def test_devices(self):
        lines, ok = checks.check_devices(fixture("run_b.json"), fixture("run_a.json"), "fa")
        self.assertTrue(ok)
        self.assertIn("same set", lines[0])
        self.assertIn("{0: 2, 1: 1}", lines[2])
        two = fixture("run_b.json")
        two["records"].append(copy.deepcopy(two["records"][0]))  # a point measured twice
        self.assertFalse(checks.check_devices(two, fixture("run_a.json"), "fa")[1])


class NsightCompute(unittest.TestCase):
    def test_rows_skip_other_output_and_scale_units(self):
        rows = checks.ncu_rows(fixture("ncu_agreement.csv"))
        self.assertEqual(len(rows), 5)
        totals = checks.ncu_totals(rows)
        self.assertAlmostEqual(totals["dram__bytes_read.sum"], 50.02e6)
        self.assertAlmostEqual(totals["gpu__time_duration.sum"], 101e3)
        self.assertAlmostEqual(totals["sm__inst_executed_pipe_tensor_op_hmma.sum"], 1e6)
        self.assertAlmostEqual(totals["dram__bytes_write.sum"], 16.9e6 + 12.5e3)

    def test_rows_refuse_a_file_without_a_metric_table(self):
        with self.assertRaises(ValueError):
            checks.ncu_rows("==PROF== nothing profiled\n")

    def test_agreement(self):
        record = fixture("run_a.json")["records"][0]
        ncu = checks.ncu_totals(checks.ncu_rows(fixture("ncu_agreement.csv")))
        lines, ok = checks.check_ncu_agreement(record, ncu)
        self.assertTrue(ok, lines)
        self.assertTrue(any("dram__bytes_read.sum" in l and "-0.04%" in l for l in lines), lines)
        self.assertTrue(any(l.startswith("  tensor ops vs the dense FLOPs: +0.00%") for l in lines), lines)
        ncu["gpu__time_duration.sum"] *= 1.05  # attnprof 5% shorter than Nsight Compute
        self.assertFalse(checks.check_ncu_agreement(record, ncu)[1])
        ncu = checks.ncu_totals(checks.ncu_rows(fixture("ncu_agreement.csv")))
        ncu["dram__bytes_read.sum"] *= 1.02
        self.assertFalse(checks.check_ncu_agreement(record, ncu)[1])

    def test_launches(self):
        lines, ok = checks.check_ncu_launches(checks.ncu_rows(fixture("ncu_agreement.csv")), "x")
        self.assertTrue(ok)
        self.assertEqual(lines[0], "  ncu x: 2 launches")
        self.assertTrue(lines[1].startswith("      0 call  dram__bytes_read.sum 5.002e+07"), lines)
        self.assertEqual(lines[2], "      1 flush dram__bytes_write.sum 12500")

    def test_overhead(self):
        lines, ok = checks.check_overhead(5.0, 10.0, 2.5, 22.5)
        self.assertTrue(ok)
        self.assertIn("whole-run ratio ncu/batched 4.50", lines[1])
        self.assertIn("(ncu - none)/(batched - none) 8.00", lines[2])
        self.assertFalse(checks.check_overhead(30.0, 40.0, 2.5, 22.5)[1])


class BesidePyTorch(unittest.TestCase):
    def test_tiles(self):
        a, b = fixture("run_a.json"), fixture("run_b.json")
        for doc in (a, b):
            doc["records"] = [r for r in doc["records"] if r["kernel"] == "fused"]
        faster = copy.deepcopy(a)
        for r in faster["records"]:
            r["tflops"] = 330.0
        lines, ok = checks.check_tiles(fixture("anchor_flash.json"), {"fast": [a, b], "wide": [faster, faster]})
        self.assertTrue(ok)
        self.assertIn("fused bf16 128 0  1024  310.0        300/300        330/330   0.968  1.065 ", lines)
        self.assertIn("wide / fast fused: median 1.1000 range 1.1000-1.1000 over 2 points", lines)
        self.assertFalse(checks.check_tiles([], {"fast": [{"records": []}]})[1])

    def test_flash_pair(self):
        flash = fixture("anchor_flash.json")
        fused = fixture("run_a.json")
        lines, ok = checks.check_flash_pair([{"anchor": flash, "grid": flash}], [{"anchor": fused, "default": fused}])
        self.assertTrue(ok)
        row = next(l for l in lines if l.startswith("bf16 d128 n s1024"))
        # fused anchor / flash anchor = 300 / 310; default / steady: no steady run; default / grid 300 / 310.
        self.assertTrue(row.endswith("| 0.968 - 0.968 -"), row)
        self.assertIn("points where fused >= flash, of 2: anchor/anchor 1, default/steady 0, default/grid 1, warm/grid 0",
                      lines)
        lines, ok = checks.check_flash_pair([], [{"default": fused}])
        self.assertFalse(ok)
        self.assertTrue(any("flash not measured" in l for l in lines))


class CommandLine(unittest.TestCase):
    def run_checks(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=60)

    def test_exit_codes(self):
        a, b = os.path.join(FIXTURES, "run_a.json"), os.path.join(FIXTURES, "run_b.json")
        good = self.run_checks("fields", a)
        self.assertEqual(good.returncode, 0, good.stderr)
        self.assertIn("points with every field: 3 of 3", good.stdout)
        self.assertEqual(self.run_checks("aa", a, b, "--label", "x").returncode, 0)
        self.assertEqual(self.run_checks("overhead", "30", "40", "2.5", "22.5").returncode, 1)
        csv_file = os.path.join(FIXTURES, "ncu_agreement.csv")
        self.assertEqual(self.run_checks("ncu-agreement", a, csv_file).returncode, 0)
        missing = self.run_checks("fields", os.path.join(FIXTURES, "no-such.json"))
        self.assertEqual(missing.returncode, 2)
        self.assertIn("checks.py:", missing.stderr)
        self.assertEqual(self.run_checks("no-such-check").returncode, 2)
        self.assertEqual(self.run_checks("ncu-launches", a).returncode, 2)  # a JSON file is not ncu's CSV


if __name__ == "__main__":
    unittest.main(verbosity=1)
