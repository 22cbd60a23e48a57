#!/usr/bin/env python3
"""The metrics of Nsight Compute `--csv` outputs as one aligned table per file: the kernel names each
file holds, then one line per (kernel launch, metric) with its unit and value. Text before ncu's CSV
header (the profiled program's own output) is skipped. decode.sh runs it on its `decode` and cuDNN
L2-traffic profiles.

usage: ncu_csv_table.py NCU.csv [NCU.csv ...] > table.txt
"""
import csv
import io
import sys


def rows(path):
    """The CSV rows of an `ncu --csv` output; [] when it holds no CSV header."""
    with open(path, errors="replace") as f:
        text = f.read()
    start = text.find('"ID"')
    return list(csv.DictReader(io.StringIO(text[start:]))) if start >= 0 else []


def table(path):
    found = rows(path)
    names = sorted({r["Kernel Name"][:90] for r in found})
    lines = [f"== {path}: {names}"]
    for r in found:
        lines.append(f"  {r['Metric Name']:<70s} {r['Metric Unit']:>10s} {r['Metric Value']:>18s}")
    return lines


def main(paths):
    for path in paths:
        print("\n".join(table(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
