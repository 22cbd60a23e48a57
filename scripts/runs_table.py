#!/usr/bin/env python3
"""TFLOP/s per (hdim, causal, seq, batch) and run, from one attnprof sweep per run: ROOT/<run>/results.json
for each run named (a run is one process, e.g. one tile variant through ATTNPROF_FUSED_CONFIG or one
fused-sm90 schedule; a run whose verified records come from several kernels gets one column per kernel,
`<run>:<kernel>`).
Only verified ("ok", verification passed) records count; a missing point prints nan. With --ratio-to
COLUMN, a second table gives every other column over that one. With --decode the rows are (heads,
batch, seq_k) and the figures P50 in us (decode shapes that differ only there, e.g. decode's shared-memory
layouts through ATTNPROF_DECODE_CONFIG).

usage: python3 scripts/runs_table.py ROOT RUN [RUN ...] [--ratio-to COLUMN] [--decode]
"""
import argparse
import json
import math
import os
import sys


# What a table shows: its row key and header, the figure of a record, how it prints, and its unit.
PREFILL = {"key": lambda s: (s["hdim"], int(bool(s["causal"])), s["seq_q"], s["batch"]),
           "header": "hdim causal   seq batch", "row": "{:4d} {:6d} {:5d} {:5d}",
           "value": lambda r: r["cost"]["flops"] / r["latency"]["p50_us"] / 1e6, "digits": 0, "unit": "TFLOP/s"}
DECODE = {"key": lambda s: (s["heads"], s["batch"], s["seq_k"]), "header": "heads batch     KV", "row": "{:5d} {:5d} {:6d}",
          "value": lambda r: r["latency"]["p50_us"], "digits": 1, "unit": "P50 us"}


def load(root, runs, view=PREFILL):
    """{row key: {column: figure}} and the columns in the order the runs give them."""
    table, columns = {}, []
    for run in runs:
        records = [r for r in json.load(open(os.path.join(root, run, "results.json")))["records"]
                   if r["status"] == "ok" and r.get("verification", {}).get("passed", True)]
        kernels = {r["kernel"] for r in records}
        for r in records:
            column = run if len(kernels) == 1 else f"{run}:{r['kernel']}"
            if column not in columns:
                columns.append(column)
            table.setdefault(view["key"](r["shape"]), {})[column] = view["value"](r)
    return table, columns


def render(table, columns, ratio_to=None, view=PREFILL):
    width = max([8] + [len(c) for c in columns])
    lines = [view["header"] + "  " + "  ".join(f"{c:>{width}s}" for c in columns) + f"   ({view['unit']})"]
    for key in sorted(table):
        lines.append(view["row"].format(*key) + "  " +
                     "  ".join(f"{table[key].get(col, math.nan):{width}.{view['digits']}f}" for col in columns))
    if ratio_to:
        others = [c for c in columns if c != ratio_to]
        lines.append("")
        lines.append(view["header"] + "  " + "  ".join(f"{c:>{width}s}" for c in others) + f"   (/ {ratio_to})")
        for key in sorted(table):
            base = table[key].get(ratio_to, math.nan)
            lines.append(view["row"].format(*key) + "  " +
                         "  ".join(f"{table[key].get(col, math.nan) / base:{width}.3f}" for col in others))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--ratio-to", help="a column every other column is divided by")
    parser.add_argument("--decode", action="store_true", help="rows (batch, seq_k), figures P50 in us")
    args = parser.parse_args()
    view = DECODE if args.decode else PREFILL
    table, columns = load(args.root, args.runs, view)
    if args.ratio_to and args.ratio_to not in columns:
        sys.exit(f"runs_table.py: --ratio-to {args.ratio_to} is not one of {', '.join(columns)}")
    print(render(table, columns, args.ratio_to, view))


if __name__ == "__main__":
    main()
