#!/usr/bin/env python3
"""TFLOP/s per (hdim, causal, seq) and run, from one attnprof sweep per run: ROOT/<run>/results.json for
each run named (a run is one process, e.g. one tile variant through ATTNPROF_FUSED_CONFIG or one
fused-sm90 schedule; a run whose verified records come from several kernels gets one column per kernel,
`<run>:<kernel>`).
Only verified ("ok", verification passed) records count; a missing point prints nan. With --ratio-to
COLUMN, a second table gives every other column over that one.

usage: python3 scripts/runs_table.py ROOT RUN [RUN ...] [--ratio-to COLUMN]
"""
import argparse
import json
import math
import os
import sys


def load(root, runs):
    """{(hdim, causal, seq_q): {column: TFLOP/s}} and the columns in the order the runs give them."""
    table, columns = {}, []
    for run in runs:
        records = [r for r in json.load(open(os.path.join(root, run, "results.json")))["records"]
                   if r["status"] == "ok" and r.get("verification", {}).get("passed", True)]
        kernels = {r["kernel"] for r in records}
        for r in records:
            column = run if len(kernels) == 1 else f"{run}:{r['kernel']}"
            if column not in columns:
                columns.append(column)
            s = r["shape"]
            table.setdefault((s["hdim"], bool(s["causal"]), s["seq_q"]), {})[column] = (
                r["cost"]["flops"] / r["latency"]["p50_us"] / 1e6)
    return table, columns


def render(table, columns, ratio_to=None):
    width = max([8] + [len(c) for c in columns])
    lines = ["hdim causal   seq  " + "  ".join(f"{c:>{width}s}" for c in columns) + "   (TFLOP/s)"]
    for key in sorted(table):
        h, c, q = key
        lines.append(f"{h:4d} {int(c):6d} {q:5d}  " +
                     "  ".join(f"{table[key].get(col, math.nan):{width}.0f}" for col in columns))
    if ratio_to:
        others = [c for c in columns if c != ratio_to]
        lines.append("")
        lines.append("hdim causal   seq  " + "  ".join(f"{c:>{width}s}" for c in others) + f"   (/ {ratio_to})")
        for key in sorted(table):
            h, c, q = key
            base = table[key].get(ratio_to, math.nan)
            lines.append(f"{h:4d} {int(c):6d} {q:5d}  " +
                         "  ".join(f"{table[key].get(col, math.nan) / base:{width}.3f}" for col in others))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--ratio-to", help="a column every other column is divided by")
    args = parser.parse_args()
    table, columns = load(args.root, args.runs)
    if args.ratio_to and args.ratio_to not in columns:
        sys.exit(f"runs_table.py: --ratio-to {args.ratio_to} is not one of {', '.join(columns)}")
    print(render(table, columns, args.ratio_to))


if __name__ == "__main__":
    main()
