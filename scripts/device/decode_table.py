#!/usr/bin/env python3
"""decode beside PyTorch, contiguous and paged, one line per decode shape, from two results files:
the side-by-side sweep (decode, torch:flash, torch:cudnn; contiguous KV) and decode's paged sweep.

Per shape (query heads, batch, KV tokens): the P50 of each kernel (`latency.p50_us`, verified points
only), the faster vendor over decode, paged decode's P50 and its difference to contiguous, and
decode's DRAM read bandwidth by its counters, contiguous and paged:
`counters.total["dram__bytes_read.sum"]` / `latency.p50_us` ("-" without counters).

usage: decode_table.py SIDE/results.json PAGED/results.json
"""
import json
import math
import sys


def load(path):
    """(heads, batch, seq_k, kernel) -> (P50 us or None when not verified, DRAM bytes read or None)."""
    with open(path) as f:
        records = json.load(f)["records"]
    out = {}
    for r in records:
        s = r["shape"]
        ok = r["status"] == "ok" and r.get("verification", {}).get("passed", False)
        dram = ((r.get("counters") or {}).get("total") or {}).get("dram__bytes_read.sum")
        out[(s["heads"], s["batch"], s["seq_k"], r["kernel"])] = (r["latency"]["p50_us"] if ok else None, dram)
    return out


def read_tbps(point):
    p50_us, dram_read = point
    return f"{dram_read / p50_us / 1e6:.2f}" if p50_us and dram_read else "-"


def lines(side, paged):
    out = ["heads batch     KV | decode   flash   cudnn (P50 us) | vendor/decode | paged64 us  paged/contig "
           "| DRAM read TB/s by counters, contig / paged"]
    fmt = lambda x: f"{x:7.1f}" if x else "      -"
    for h, b, k in sorted({(h, b, k) for (h, b, k, _) in side}):
        d, f, c = (side.get((h, b, k, n), (None, None))[0] for n in ("decode", "torch:flash", "torch:cudnn"))
        p = paged.get((h, b, k, "decode"), (None, None))[0]
        vendor = min(x for x in (f, c) if x) if (f or c) else None
        ratio = vendor / d if d and vendor else math.nan
        paged_cost = p / d - 1 if p and d else math.nan
        out.append(f"{h:5d} {b:5d} {k:6d} | {fmt(d)} {fmt(f)} {fmt(c)} | {ratio:12.2f}x | {fmt(p)} {paged_cost:+13.1%} | "
                   f"{read_tbps(side.get((h, b, k, 'decode'), (0, 0)))} / {read_tbps(paged.get((h, b, k, 'decode'), (0, 0)))}")
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    print("\n".join(lines(load(argv[0]), load(argv[1]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
