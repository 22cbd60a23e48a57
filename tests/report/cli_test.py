#!/usr/bin/env python3
"""`attnprof report` end to end: exit codes, the table on stdout, --quiet, the three files."""
import json
import os
import subprocess
import sys


def run(binary, *args):
    return subprocess.run([binary, "report", *args], capture_output=True, text=True, timeout=120)


def main():
    binary, fixture, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    missing = run(binary, os.path.join(work, "does-not-exist.json"))
    check(missing.returncode == 2, f"missing file: exit {missing.returncode}, want 2")
    check(len(missing.stderr.strip().splitlines()) == 1, f"missing file: one-line error: {missing.stderr!r}")

    wrong = os.path.join(work, "wrong-version.json")
    with open(wrong, "w") as f:
        json.dump({"schema_version": "2.0", "context": {}, "records": []}, f)
    r = run(binary, wrong)
    check(r.returncode == 2, f"wrong version: exit {r.returncode}, want 2")
    check("2.0" in r.stderr, f"wrong version: message names the version: {r.stderr!r}")

    not_json = os.path.join(work, "not-json.json")
    with open(not_json, "w") as f:
        f.write("{ this is not json")
    r = run(binary, not_json)
    check(r.returncode == 2, f"not JSON: exit {r.returncode}, want 2")

    html, md, csv = (os.path.join(work, "cli-report." + ext) for ext in ("html", "md", "csv"))
    r = run(binary, fixture, "--html", html, "--md", md, "--csv", csv)
    check(r.returncode == 0, f"fixture: exit {r.returncode}: {r.stderr}")
    with open(fixture) as f:
        records = json.load(f)["records"]
    lines = r.stdout.splitlines()
    header = next((i for i, l in enumerate(lines) if l.startswith("point ")), None)
    check(header is not None, "fixture: table header on stdout")
    if header is not None:
        body = lines[header + 2: header + 2 + len(records)]
        check(len(body) == len(records), "fixture: one table line per record")
        for line, rec in zip(body, records):
            if rec["status"] in ("ok", "incorrect"):
                check("-bound" in line or " unknown " in line, f"fixture: a verdict on {line!r}")
            else:
                check(f" {rec['status']} " in line, f"fixture: the status on {line!r}")
    for path in (html, md, csv):
        check(os.path.getsize(path) > 0, f"{path} written")
    with open(csv, newline="") as f:
        rows = f.read().split("\r\n")
    check(len([x for x in rows if x]) >= len(records) + 1, "csv: a row per record")

    q = run(binary, fixture, "--quiet")
    check(q.returncode == 0 and q.stdout == "", f"--quiet prints nothing: {q.stdout!r}")

    for f in failures:
        print("FAIL:", f)
    print("cli test:", "ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
