#!/usr/bin/env python3
"""`attnprof history` over real H200 results: the committed versions of
reports/h200-fa-bench/results.json in this repository's history (every one measured on the H200),
oldest first.

Checks that the trend lists each run with the revision and date of its own context, in the order
given; that its change points between each pair of consecutive runs are exactly the points that
`attnprof compare` (the gate) calls slower or faster for that pair; that the worst regression comes
first; and that the HTML is one self-contained file with a row per point. Exit 77 (skipped) when
fewer than three versions can be read from git (a shallow clone or an exported tree).

usage: history_test.py ATTNPROF SOURCE_DIR OUT_DIR
"""
import json
import os
import re
import subprocess
import sys

RESULTS = "reports/h200-fa-bench/results.json"
RUNS = 3


def git(source, *args):
    return subprocess.run(["git", "-C", source, *args], capture_output=True, text=True, timeout=120)


def main():
    binary, source, out_dir = sys.argv[1:4]
    os.makedirs(out_dir, exist_ok=True)
    log = git(source, "log", "--format=%H", "--", RESULTS)
    revisions = log.stdout.split() if log.returncode == 0 else []
    files = []
    for rev in revisions:  # newest first
        text = git(source, "show", f"{rev}:{RESULTS}")
        if text.returncode != 0:
            continue
        path = os.path.join(out_dir, f"h200-{rev[:12]}.json")
        with open(path, "w") as f:
            f.write(text.stdout)
        files.append(path)
        if len(files) == RUNS:
            break
    if len(files) < RUNS:
        print(f"history test: {len(files)} versions of {RESULTS} in git (need {RUNS}): skipped")
        return 77
    contexts = []
    for path in files:
        with open(path) as f:
            contexts.append(json.load(f)["context"])
    order = sorted(range(len(files)), key=lambda i: contexts[i]["date_utc"])
    files = [files[i] for i in order]
    contexts = [contexts[i] for i in order]

    failures = []
    md_path, html_path = os.path.join(out_dir, "trend.md"), os.path.join(out_dir, "trend.html")
    r = subprocess.run([binary, "history", *files, "--md", md_path, "--html", html_path], capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        print("attnprof history failed:", r.returncode, r.stderr)
        return 1
    with open(md_path) as f:
        md = f.read()
    with open(html_path) as f:
        html = f.read()

    for i, (path, ctx) in enumerate(zip(files, contexts), 1):
        row = f"| {i} | {path} | {ctx['git_revision']} | {ctx['date_utc']} |"
        if row not in md:
            failures.append(f"run {i} is not listed as {row!r}")

    # The gate on each consecutive pair: its slower/faster points are the history's change points.
    expected = {}
    for i in range(1, len(files)):
        gate_json = os.path.join(out_dir, f"gate-{i}.json")
        g = subprocess.run([binary, "compare", files[i - 1], files[i], "--json", gate_json, "--quiet"],
                           capture_output=True, text=True, timeout=600)
        if g.returncode not in (0, 1, 3):
            failures.append(f"attnprof compare of runs {i} and {i + 1} failed: {g.returncode} {g.stderr}")
            continue
        with open(gate_json) as f:
            for p in json.load(f)["points"]:
                if p["verdict"] in ("slower", "faster"):
                    expected[(p["shape"], p["kernel"], i)] = p["verdict"]
    found = {}
    points = 0
    for line in md.splitlines():
        if not line.startswith("| b"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        points += 1
        for run, cell in enumerate(cells[2:2 + len(files)]):
            m = re.search(r"\*\*(slower|faster) ", cell)
            if m:
                found[(cells[0], cells[1], run)] = m.group(1)
    if found != expected:
        failures.append(f"change points differ from the gate's verdicts: history {sorted(found.items())[:5]}..., "
                        f"gate {sorted(expected.items())[:5]}...")
    with open(files[-1]) as f:
        n_points = len(json.load(f)["records"])
    if points < n_points:
        failures.append(f"{points} point rows in the Markdown, {n_points} points in the last run")
    # Worst regression first: the first row carries a slower step whenever any row does.
    rows = [l for l in md.splitlines() if l.startswith("| b")]
    if any("**slower" in l for l in rows) and "**slower" not in rows[0]:
        failures.append("the first row is not a regression although there are some")

    if "<script" in html or re.search(r"(src|href)=\"https?:", html):
        failures.append("the HTML loads something or runs a script")
    if html.count("<tr data-key=") != points:
        failures.append(f"HTML rows {html.count('<tr data-key=')} != Markdown rows {points}")
    if html.count("class=\"change-slower\"") != sum(1 for v in expected.values() if v == "slower"):
        failures.append("the HTML does not mark every slower step")

    print(f"history test: {len(files)} H200 runs ({', '.join(c['git_revision'] for c in contexts)}), {points} points, "
          f"{len(expected)} change points (the gate's), first line of output: {r.stdout.splitlines()[0]}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
