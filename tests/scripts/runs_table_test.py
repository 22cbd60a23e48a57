#!/usr/bin/env python3
"""scripts/runs_table.py on made-up sweeps: one column per run (per run and kernel when a run swept
several), rows per (hdim, causal, seq, batch), TFLOP/s from cost.flops / P50, unverified and failed
records left out (nan), the ratio table against the chosen column, an unknown --ratio-to refused, and
--decode's (batch, seq_k) rows of P50.

usage: runs_table_test.py SOURCE_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys


def record(kernel, hdim, causal, seq, p50_us, status="ok", passed=True, batch=16):
    return {"kernel": kernel, "status": status, "verification": {"passed": passed},
            "shape": {"hdim": hdim, "causal": causal, "seq_q": seq, "batch": batch},
            "cost": {"flops": 2e12}, "latency": {"p50_us": p50_us}}


def main():
    source, work = sys.argv[1:3]
    runs = {
        "fast": [record("fused", 256, False, 1024, 8000.0), record("fused", 256, True, 1024, 10000.0)],
        "m64n64": [record("fused", 256, False, 1024, 6250.0),
                   record("fused", 256, True, 1024, 1.0, passed=False)],  # fast but wrong: left out
        "flash": [record("torch:flash", 256, False, 1024, 5000.0), record("torch:flash", 256, True, 1024, 6400.0),
                  record("torch:cudnn", 256, False, 1024, 2500.0, status="failed")],
        "both": [record("torch:flash", 256, False, 1024, 5000.0), record("torch:cudnn", 256, False, 1024, 4000.0)],
        # Two token counts with the same seq: one row each, not the last one over the first.
        "tokens": [record("fused", 256, True, 1024, 10000.0, batch=16),
                   record("fused", 256, True, 1024, 2000.0, batch=4)],
    }
    for run, records in runs.items():
        os.makedirs(os.path.join(work, run), exist_ok=True)
        json.dump({"records": records}, open(os.path.join(work, run, "results.json"), "w"))
    script = os.path.join(source, "scripts", "runs_table.py")
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    out = subprocess.run([sys.executable, script, work, "flash", "fast", "m64n64", "--ratio-to", "flash"],
                         capture_output=True, text=True, timeout=60)
    check(out.returncode == 0, f"exit {out.returncode}: {out.stderr}")
    lines = out.stdout.splitlines()
    check(lines[0].split()[4:7] == ["flash", "fast", "m64n64"], f"header: {lines[0]}")
    # 2e12 FLOPs in 5000 us: 400 TFLOP/s; 8000 us: 250; 6250 us: 320. Causal: 312.5 (prints 312), 200, nan.
    check(lines[1].split() == ["256", "0", "1024", "16", "400", "250", "320"], f"non-causal row: {lines[1]}")
    check(lines[2].split() == ["256", "1", "1024", "16", "312", "200", "nan"], f"causal row: {lines[2]}")
    check(lines[4].split()[4:7] == ["fast", "m64n64", "(/"], f"ratio header: {lines[4]}")
    check(lines[5].split() == ["256", "0", "1024", "16", "0.625", "0.800"], f"ratio row: {lines[5]}")
    check(lines[6].split() == ["256", "1", "1024", "16", "0.640", "nan"], f"causal ratio row: {lines[6]}")

    out = subprocess.run([sys.executable, script, work, "tokens"], capture_output=True, text=True, timeout=60)
    rows = out.stdout.splitlines()[1:]
    check(out.returncode == 0 and [r.split() for r in rows] == [["256", "1", "1024", "4", "1000"],
                                                                  ["256", "1", "1024", "16", "200"]],
          f"two batches of one seq: {out.stdout}")

    out = subprocess.run([sys.executable, script, work, "both"], capture_output=True, text=True, timeout=60)
    check(out.returncode == 0, f"exit {out.returncode}: {out.stderr}")
    check(out.stdout.splitlines()[0].split()[4:6] == ["both:torch:flash", "both:torch:cudnn"],
          f"a run of two kernels: {out.stdout}")
    check(out.stdout.splitlines()[1].split() == ["256", "0", "1024", "16", "400", "500"],
          f"two kernels' row: {out.stdout}")

    out = subprocess.run([sys.executable, script, work, "fast", "--ratio-to", "nope"], capture_output=True,
                         text=True, timeout=60)
    check(out.returncode != 0 and "nope" in out.stderr, f"unknown --ratio-to: exit {out.returncode} {out.stderr}")

    def decode_record(batch, seq_k, p50_us, passed=True):
        return {"kernel": "decode", "status": "ok", "verification": {"passed": passed},
                "shape": {"batch": batch, "heads": 32, "seq_k": seq_k, "hdim": 128, "causal": False, "seq_q": 1},
                "cost": {"flops": 1e9}, "latency": {"p50_us": p50_us}}
    for run, records in {"padded": [decode_record(16, 8192, 133.5), decode_record(1, 32768, 45.5)],
                         "swizzled": [decode_record(16, 8192, 120.15), decode_record(1, 32768, 1.0, passed=False)]}.items():
        os.makedirs(os.path.join(work, run), exist_ok=True)
        json.dump({"records": records}, open(os.path.join(work, run, "results.json"), "w"))
    out = subprocess.run([sys.executable, script, work, "padded", "swizzled", "--decode", "--ratio-to", "padded"],
                         capture_output=True, text=True, timeout=60)
    check(out.returncode == 0, f"--decode: exit {out.returncode}: {out.stderr}")
    lines = out.stdout.splitlines()
    check(lines[0].split()[:5] == ["heads", "batch", "KV", "padded", "swizzled"] and "(P50 us)" in lines[0],
          f"--decode header: {lines[0]}")
    check(lines[1].split() == ["32", "1", "32768", "45.5", "nan"], f"--decode first row (batch 1): {lines[1]}")
    check(lines[2].split() == ["32", "16", "8192", "133.5", "120.2"], f"--decode second row: {lines[2]}")
    check(lines[5].split() == ["32", "1", "32768", "nan"] and lines[6].split() == ["32", "16", "8192", "0.900"],
          f"--decode ratio rows: {lines[5:7]}")

    for f in failures:
        print("FAILED:", f)
    print(f"runs_table_test: {'ok' if not failures else f'{len(failures)} failures'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
