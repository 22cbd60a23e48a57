#!/usr/bin/env python3
"""scripts/perf_table.py on a small made-up sweep and two anchor runs: every PyTorch figure is the better
of the runs, the `flash runs` column lists both, the ratios are taken against the better run, and the
summary line counts the points at seq >= 1024 where each fused kernel reaches flash.

usage: perf_table_test.py SOURCE_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys


def record(kernel, seq, tflops, status="ok"):
    return {"kernel": kernel, "status": status, "tflops": tflops,
            "shape": {"dtype": "bf16", "hdim": 128, "causal": False, "seq_q": seq},
            "latency": {"p50_us": 100.0, "p99_us": 110.0},
            "verification": {"o_max_abs_err": 1e-3}, "diagnosis": {"verdict": "compute-bound",
                                                                 "metrics": {"excess_traffic_ratio": 1.0}}}


def anchor(seq, flash, cudnn, naive):
    return {"dtype": "bfloat16", "hdim": 128, "causal": False, "seq": seq, "flash_tflops": flash,
            "cudnn_tflops": cudnn, "naive_tflops": naive}


def main():
    source, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    paths = {name: os.path.join(work, name) for name in ("results.json", "before.json", "after.json")}
    json.dump({"records": [record("fused", 512, 250.0), record("fused", 1024, 300.0), record("fused", 2048, 330.0),
                           record("reference", 1024, 150.0)]}, open(paths["results.json"], "w"))
    json.dump([anchor(512, 260.0, 400.0, 50.0), anchor(1024, 290.0, 500.0, 60.0), anchor(2048, 320.0, 610.0, None)],
              open(paths["before.json"], "w"))
    json.dump([anchor(512, 240.0, 420.0, 55.0), anchor(1024, 310.0, 480.0, 59.0), anchor(2048, 330.0, 600.0, None)],
              open(paths["after.json"], "w"))
    script = os.path.join(source, "scripts", "perf_table.py")
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    one = subprocess.run([sys.executable, script, paths["results.json"], paths["before.json"]],
                         capture_output=True, text=True, timeout=60)
    check(one.returncode == 0, f"one anchor file: exit {one.returncode} {one.stderr}")
    check("flash runs" not in one.stdout, "a single anchor run has no `flash runs` column")
    check("| bf16 | 128 | no | 1024 | 300 | 290.0 | 500.0 | 1.03 |" in one.stdout, "one run: seq 1024 row")

    two = subprocess.run([sys.executable, script, paths["results.json"], paths["before.json"], paths["after.json"]],
                         capture_output=True, text=True, timeout=60)
    out = two.stdout
    check(two.returncode == 0, f"two anchor files: exit {two.returncode} {two.stderr}")
    check("| flash runs |" in out.splitlines()[0], "header has `flash runs`")
    # seq 1024: flash 310 (after) and cuDNN 500 (before) are the better runs; 300 / 310 = 0.97.
    check("| bf16 | 128 | no | 1024 | 300 | 310.0 | 500.0 | 290.0 / 310.0 | 0.97 | 0.60 | 150.0 | 60.0 | 2.50 |" in out,
          "two runs: seq 1024 row takes each backend's better run")
    check("- `fused` >= flash at 1 of 2 points with seq >= 1024 (ratios 0.968-1.000); below: "
          "bf16 d128 non-causal s1024 0.968" in out, "summary line")

    usage = subprocess.run([sys.executable, script, paths["results.json"]], capture_output=True, text=True, timeout=60)
    check(usage.returncode != 0 and "usage" in usage.stderr, "one argument: usage and a non-zero exit")

    for f in failures:
        print("FAIL:", f)
    if failures:
        print(out)
    print("perf_table test:", "ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
