#!/usr/bin/env python3
"""The small tables and filters the GPU-machine scripts run, on made-up inputs: scripts/device/
ncu_csv_table.py (decode.sh's Nsight Compute L2 table), scripts/device/decode_table.py (decode.sh's
decode-beside-PyTorch table) and scripts/fa_bench_subset.py (sample_report.sh's fa-bench sample).

usage: device_tables_test.py SOURCE_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys
import unittest

SOURCE = os.path.abspath(sys.argv.pop(1))
WORK = os.path.abspath(sys.argv.pop(1))
sys.path.insert(0, os.path.join(SOURCE, "scripts", "device"))
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
import decode_table  # noqa: E402
import fa_bench_subset  # noqa: E402
import ncu_csv_table  # noqa: E402


def write(name, text):
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def record(kernel, heads, batch, seq_k, p50_us, dram_read=None, passed=True, seq_q=1):
    rec = {"kernel": kernel, "status": "ok", "latency": {"p50_us": p50_us},
           "shape": {"heads": heads, "batch": batch, "seq_k": seq_k, "seq_q": seq_q},
           "verification": {"checked": True, "passed": passed}}
    if dram_read is not None:
        rec["counters"] = {"total": {"dram__bytes_read.sum": dram_read}}
    return rec


def results(name, records, context=None):
    return write(name, json.dumps({"schema_version": "1.10", "context": context or {}, "records": records}))


class NcuCsvTable(unittest.TestCase):
    def test_skips_the_program_output_and_lists_each_metric(self):
        path = write("ncu.csv", 'program output\n==PROF== done\n'
                     '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'
                     '"0","decode_split_kernel<bf16, d128, m1>","lts__t_requests.sum","request","16777216"\n'
                     '"0","decode_split_kernel<bf16, d128, m1>","lts__t_sectors.sum","sector","67108864"\n')
        lines = ncu_csv_table.table(path)
        self.assertEqual(lines[0], f"== {path}: ['decode_split_kernel<bf16, d128, m1>']")
        self.assertEqual(len(lines), 3)
        self.assertTrue(lines[1].split() == ["lts__t_requests.sum", "request", "16777216"])

    def test_a_file_without_csv_is_an_empty_table(self):
        path = write("empty.csv", "==ERROR== no kernels were profiled\n")
        self.assertEqual(ncu_csv_table.table(path), [f"== {path}: []"])


class DecodeTable(unittest.TestCase):
    def test_ratios_paged_cost_and_read_bandwidth(self):
        side = results("side.json", [
            record("decode", 32, 16, 8192, 125.0, dram_read=537.5e6),
            record("torch:flash", 32, 16, 8192, 131.25),
            record("torch:cudnn", 32, 16, 8192, 137.5),
            record("decode", 32, 1, 1024, 9.0, passed=False),
            record("torch:cudnn", 32, 1, 1024, 10.0),
        ])
        paged = results("paged.json", [record("decode", 32, 16, 8192, 127.5), record("decode", 32, 1, 1024, 9.2)])
        lines = decode_table.lines(decode_table.load(side), decode_table.load(paged))
        self.assertEqual(len(lines), 3)
        verified, unverified = lines[2], lines[1]  # sorted by (heads, batch, KV)
        self.assertIn("1.05x", verified)      # flash 131.25 / decode 125.0
        self.assertIn("+2.0%", verified)      # paged 127.5 against 125.0
        self.assertTrue(verified.endswith("| 4.30 / -"))  # 537.5 MB / 125 us; the paged sweep has no counters
        self.assertIn("nan", unverified)      # an unverified decode point has no P50 to compare
        self.assertIn("DRAM read TB/s by counters", lines[0])

    def test_command_line(self):
        side = results("side1.json", [record("decode", 64, 1, 8192, 17.8, dram_read=33.6e6)])
        out = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "device", "decode_table.py"), side, side],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(len(out.stdout.splitlines()), 2)
        bad = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "device", "decode_table.py"), side],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(bad.returncode, 2)


class FaBenchSubset(unittest.TestCase):
    def test_keeps_attnprofs_prefill_points_and_says_where_they_come_from(self):
        side = results("side-sweep.json", [
            record("fused", 32, 32, 512, 247.6, seq_q=512),
            record("fused-sm90", 32, 32, 512, 190.0, seq_q=512),
            record("reference", 32, 32, 512, 900.0, seq_q=512),
            record("torch:flash", 32, 32, 512, 260.0, seq_q=512),
            record("decode", 32, 16, 8192, 125.0),
            record("fused", 32, 16, 8192, 2000.0),
        ], context={"git_revision": "abc", "notices": ["earlier"]})
        out = os.path.join(WORK, "fa-bench.json")
        run = subprocess.run([sys.executable, os.path.join(SOURCE, "scripts", "fa_bench_subset.py"), side, out],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("3 fa-bench points", run.stdout)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual([r["kernel"] for r in doc["records"]], ["fused", "fused-sm90", "reference"])
        self.assertEqual(doc["context"]["git_revision"], "abc")
        self.assertEqual(doc["context"]["notices"], ["earlier", fa_bench_subset.NOTICE])
        self.assertEqual(doc["schema_version"], "1.10")


if __name__ == "__main__":
    unittest.main(verbosity=1)
