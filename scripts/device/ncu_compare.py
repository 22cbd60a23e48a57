#!/usr/bin/env python3
"""Side by side: two kernels profiled by Nsight Compute (`--set full`), for `scripts/device/ncu_compare.sh`.

usage: python3 ncu_compare.py NAME_A DETAILS_A.csv SOURCE_A.csv NAME_B DETAILS_B.csv SOURCE_B.csv

DETAILS is `ncu -i REP --page details --csv`; SOURCE is `ncu -i REP --page source --csv --print-source sass`.
Prints every details metric whose values differ by more than 2% (or that is a stall, instruction or
launch figure), then each kernel's warp-stall samples per reason (the source page's stall_* columns),
then per SASS opcode the instructions executed and the warp-stall samples of each kernel: where one
kernel spends instructions or stalls that the other does not.
"""
import collections
import csv
import sys


def read_csv(path, columns):
    """Header and rows of an `ncu --csv` page; a one-line exit when the file is not one with `columns`."""
    try:
        with open(path) as f:
            # The source page starts with a "Kernel Name" line before its header.
            rows = list(csv.reader(line for line in f if line.startswith('"') and not line.startswith('"Kernel Name"')))
    except OSError as e:
        sys.exit(f"ncu_compare: cannot read {path}: {e.strerror}")
    if not rows or any(c not in rows[0] for c in columns):
        sys.exit(f"ncu_compare: {path} is not an Nsight Compute CSV page with the columns {', '.join(columns)}")
    return rows[0], rows[1:]


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def details(path):
    needed = ("Section Name", "Metric Name", "Metric Unit", "Metric Value")
    header, rows = read_csv(path, needed)
    sec, name, unit, value = (header.index(c) for c in needed)
    return {(r[sec], r[name]): (r[value], r[unit]) for r in rows}


def opcodes(header, rows):
    """Per SASS opcode: instructions executed and warp-stall samples, from a source page."""
    src = header.index("Source")
    columns = {c: header.index(c) for c in header if c in (
        "Instructions Executed", "Warp Stall Sampling (All Samples)", "Warp Stall Sampling (Not-issued Samples)")}
    table = collections.defaultdict(lambda: collections.Counter())
    for r in rows:
        words = [w for w in r[src].split() if not w.startswith("@")]
        if not words:
            continue
        op = words[0].split(".")[0]
        for c, i in columns.items():
            table[op][c] += number(r[i]) or 0
    return table, list(columns)


def stall_reasons(header, rows):
    """Warp-stall samples per reason (stall_wait, stall_short_sb, ...) summed over a source page's instructions."""
    reasons = {c: i for i, c in enumerate(header) if c.startswith("stall_") and "Not Issued" not in c}
    return {c: sum(number(r[i]) or 0 for r in rows) for c, i in reasons.items()}


def main():
    if len(sys.argv) != 7:
        sys.exit("usage: ncu_compare.py NAME_A DETAILS_A SOURCE_A NAME_B DETAILS_B SOURCE_B")
    (na, da, sa, nb, db, sb) = sys.argv[1:]
    a, b = details(da), details(db)
    print(f"{'section / metric':70s} {na:>22s} {nb:>22s}")
    always = ("Stall", "Instructions", "Registers", "Shared Memory", "Duration", "Occupancy", "Issue", "Bank")
    for key in sorted(set(a) | set(b)):
        (va, unit), (vb, _) = a.get(key, ("-", "")), b.get(key, ("-", ""))
        xa, xb = number(va), number(vb)
        differs = xa is not None and xb is not None and max(abs(xa), abs(xb)) > 0 and abs(xa - xb) / max(abs(xa), abs(xb)) > 0.02
        if differs or any(w in key[1] for w in always):
            print(f"{key[0][:24]:24s} {key[1][:45]:45s} {va + ' ' + unit:>22s} {vb:>22s}")
    print()
    source_a, source_b = read_csv(sa, ("Source",)), read_csv(sb, ("Source",))
    ra, rb = stall_reasons(*source_a), stall_reasons(*source_b)
    print(f"{'stall reason':26s} {na:>12s} {nb:>12s}")
    for reason in sorted(set(ra) | set(rb), key=lambda c: -(ra.get(c, 0) + rb.get(c, 0))):
        print(f"{reason:26s} {ra.get(reason, 0):>12.0f} {rb.get(reason, 0):>12.0f}")
    (ta, cols), (tb, _) = opcodes(*source_a), opcodes(*source_b)
    print()
    print(f"{'opcode':12s} " + " ".join(f"{na + ' ' + c.split('(')[-1].rstrip(')')[:10]:>26s} {nb:>14s}" for c in cols))
    for op in sorted(set(ta) | set(tb), key=lambda o: -(ta[o][cols[0]] + tb[o][cols[0]])):
        print(f"{op:12s} " + " ".join(f"{ta[op][c]:>26.0f} {tb[op][c]:>14.0f}" for c in cols))


if __name__ == "__main__":
    main()
