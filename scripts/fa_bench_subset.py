#!/usr/bin/env python3
"""The fa-bench points of attnprof's own kernels (fused, fused-sm90, reference; seq_q > 16) of a
side-by-side sweep, as a results file of their own: the sweep's context with a notice naming where
they come from, every other record dropped. scripts/sample_report.sh writes
reports/h200-fa-bench/results.json with it.

usage: fa_bench_subset.py SIDE/results.json OUT.json
"""
import json
import sys

OURS = ("fused", "fused-sm90", "reference")
NOTICE = ("the fa-bench points of fused, fused-sm90 and reference from a side-by-side sweep (same run; "
          "that sweep has every kernel and the decode shapes)")


def subset(doc):
    doc = dict(doc)
    doc["records"] = [r for r in doc["records"] if r["kernel"] in OURS and r["shape"]["seq_q"] > 16]
    context = dict(doc["context"])
    context["notices"] = list(context.get("notices", [])) + [NOTICE]
    doc["context"] = context
    return doc


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        doc = subset(json.load(f))
    with open(argv[1], "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"fa_bench_subset: {len(doc['records'])} fa-bench points")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
