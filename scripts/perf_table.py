#!/usr/bin/env python3
"""Side-by-side table of an attnprof fa-bench sweep and the PyTorch SDPA anchors of the same device call.

usage: python3 scripts/perf_table.py RESULTS.json SDPA_ANCHOR.json [MORE_ANCHORS.json ...] > table.md

One row per (dtype, hdim, causal, seq): TFLOP/s (FlashAttention's convention, as the anchors count)
of every attnprof kernel that ran (fused kernels,
then the reference), PyTorch's FlashAttention-2 (`flash`), cuDNN (`cudnn`) and naive attention, the
ratios the performance targets name, each fused kernel's P50/P99, its DRAM bytes over the analytic
minimum, its max error against float64, and the verdicts. Every figure is read from the files.

With several anchor files (runs of `scripts/device/anchor.py fa-bench` in the same call, e.g. before and after the sweep),
each PyTorch figure is the best of the runs, so every ratio is taken against PyTorch's fastest run;
the `flash runs` column lists each run's figure. Below the table, one line per fused kernel counts the
points at seq >= 1024 where it reaches flash.
"""
import json
import math
import sys

DTYPES = {"bfloat16": "bf16", "float16": "fp16"}


def number(v):
    return v if isinstance(v, (int, float)) and math.isfinite(v) else None


def fmt(v, digits=0):
    v = number(v)
    return "-" if v is None else f"{v:.{digits}f}"


def ratio(a, b):
    a, b = number(a), number(b)
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def tflops_of(r):
    """TFLOP/s of a results record that ran ok, else None, under FlashAttention's FLOP convention (dense,
    halved when causal), the one its benchmarks and the PyTorch anchors use: `tflops_fa_convention`
    (results schema 1.5), or `tflops`, which was that convention in older files."""
    if not r or r["status"] != "ok":
        return None
    return number(r.get("tflops_fa_convention", r.get("tflops")))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    results = json.load(open(sys.argv[1]))
    runs = [json.load(open(path)) for path in sys.argv[2:]]
    anchors, flash_runs = {}, {}
    for run in runs:
        for row in run:
            key = (DTYPES.get(row["dtype"], row["dtype"]), row["hdim"], bool(row["causal"]), row["seq"])
            best = anchors.setdefault(key, {})
            for name, value in row.items():
                if name.endswith("_tflops") and number(value) is not None:
                    best[name] = max(value, best.get(name, value))
            flash_runs.setdefault(key, []).append(row.get("flash_tflops"))

    points, kernels = {}, []
    for r in results["records"]:
        s = r["shape"]
        key = (s["dtype"], s["hdim"], bool(s["causal"]), s["seq_q"])
        points.setdefault(key, {})[r["kernel"]] = r
        if r["kernel"] not in kernels:
            kernels.append(r["kernel"])
    fused = [k for k in kernels if k != "reference"]

    head = ["dtype", "hdim", "causal", "seq"]
    head += [k for k in fused] + ["flash", "cudnn"]
    if len(runs) > 1:
        head += ["flash runs"]
    for k in fused:
        head += [f"{k}/flash", f"{k}/cudnn"]
    head += ["reference", "naive", "ref/naive"]
    for k in fused:
        head += [f"{k} P50/P99 us", f"{k} DRAM/min", f"{k} err"]
    head += ["verdicts"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))

    for key in sorted(points):
        dtype, hdim, causal, seq = key
        by_kernel = points[key]
        anchor = anchors.get(key, {})

        def tflops(k):
            return tflops_of(by_kernel.get(k))

        cells = [dtype, str(hdim), "yes" if causal else "no", str(seq)]
        cells += [fmt(tflops(k)) for k in fused]
        cells += [fmt(anchor.get("flash_tflops"), 1), fmt(anchor.get("cudnn_tflops"), 1)]
        if len(runs) > 1:
            cells += [" / ".join(fmt(v, 1) for v in flash_runs.get(key, []))]
        for k in fused:
            cells += [ratio(tflops(k), anchor.get("flash_tflops")), ratio(tflops(k), anchor.get("cudnn_tflops"))]
        cells += [fmt(tflops("reference"), 1), fmt(anchor.get("naive_tflops"), 1),
                  ratio(tflops("reference"), anchor.get("naive_tflops"))]
        for k in fused:
            r = by_kernel.get(k)
            if not r or r["status"] != "ok":
                cells += [r["status"] if r else "-", "-", "-"]
                continue
            lat = r["latency"]
            metrics = (r.get("diagnosis") or {}).get("metrics", {})
            cells += [f"{fmt(lat.get('p50_us'))} / {fmt(lat.get('p99_us'))}",
                      fmt(metrics.get("excess_traffic_ratio"), 2),
                      "-" if number(r["verification"].get("o_max_abs_err")) is None
                      else f"{r['verification']['o_max_abs_err']:.1e}"]
        verdicts = []
        for k in fused + ["reference"]:
            r = by_kernel.get(k)
            d = (r or {}).get("diagnosis") or {}
            if d.get("verdict"):
                verdicts.append(d["verdict"])
        cells.append(" / ".join(verdicts) or "-")
        print("| " + " | ".join(cells) + " |")

    print()
    for k in fused:
        measured = [(key, tflops_of(points[key].get(k)), number(anchors.get(key, {}).get("flash_tflops")))
                    for key in sorted(points) if key[3] >= 1024]
        ratios = [(key, t / f) for key, t, f in measured if t is not None and f]
        if not ratios:
            continue
        below = [f"{d} d{h} {'causal' if c else 'non-causal'} s{n} {r:.3f}" for (d, h, c, n), r in ratios if r < 1]
        print(f"- `{k}` >= flash at {len(ratios) - len(below)} of {len(ratios)} points with seq >= 1024 "
              f"(ratios {min(r for _, r in ratios):.3f}-{max(r for _, r in ratios):.3f})"
              + (f"; below: {', '.join(below)}" if below else ""))



if __name__ == "__main__":
    main()
