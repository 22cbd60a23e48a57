#!/usr/bin/env python3
"""`attnprof report --openmetrics` (and `sweep --openmetrics`) read back by a strict OpenMetrics 1.0
text parser.

The parser below follows the format's rules (https://github.com/OpenObservability/OpenMetrics,
specification/OpenMetrics.md, "Text format"): lines end in LF with no blank lines, the text ends
with "# EOF"; a family's TYPE/UNIT/HELP come before its samples, each at most once, and a family is
never resumed after another began; names, label names and numbers match the ABNF; label values use
only the \\\\ \\" \\n escapes; a family with a UNIT ends in _<unit>; gauge samples are named as their
family, info samples <family>_info with value 1; no sample repeats a label set. The parser is first
shown to reject texts that break each rule, so that its acceptance means something. When the
prometheus_client package is importable (Debian: python3-prometheus-client), its OpenMetrics parser
must accept the text too.

usage: openmetrics_test.py ATTNPROF RESULTS.json [RESULTS.json...] OUT_DIR
"""
import math
import os
import re
import subprocess
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
TYPES = {"counter", "gauge", "histogram", "gaugehistogram", "stateset", "info", "summary", "unknown"}


class Invalid(Exception):
    pass


def parse_number(text):
    # The ABNF: a real number, or [sign] "inf" / "infinity", or "nan", these case-insensitive.
    if re.fullmatch(r"[+-]?(?:inf|infinity)|nan", text, re.IGNORECASE):
        return float(text)
    if not NUMBER.fullmatch(text):
        raise Invalid(f"not a number: {text!r}")
    return float(text)


def parse_labels(line, at):
    """Parses {name="value",...} starting at line[at] == '{'; returns (labels, index after '}')."""
    labels = {}
    at += 1
    if line[at:at + 1] == "}":
        return labels, at + 1
    while True:
        m = LABEL_NAME.match(line, at)
        if not m:
            raise Invalid(f"bad label name at {at}: {line[at:at + 20]!r}")
        name = m.group(0)
        at = m.end()
        if line[at:at + 2] != '="':
            raise Invalid(f"expected =\" after label {name}")
        at += 2
        value = []
        while True:
            if at >= len(line):
                raise Invalid("unterminated label value")
            c = line[at]
            if c == "\\":
                nxt = line[at + 1:at + 2]
                if nxt not in ("\\", '"', "n"):
                    raise Invalid(f"bad escape \\{nxt} in a label value")
                value.append({"\\": "\\", '"': '"', "n": "\n"}[nxt])
                at += 2
            elif c == '"':
                at += 1
                break
            else:
                value.append(c)
                at += 1
        if name in labels:
            raise Invalid(f"label {name} twice")
        labels[name] = "".join(value)
        if line[at:at + 1] == ",":
            at += 1
            continue
        if line[at:at + 1] == "}":
            return labels, at + 1
        raise Invalid(f"expected , or }} after label {name}")


def parse(text):
    """Returns {family: {"type", "unit", "help", "samples": [(name, labels, value)]}}; raises Invalid."""
    if not text.endswith("# EOF\n"):
        raise Invalid("the text does not end with '# EOF' and a line feed")
    body = text[:-len("# EOF\n")]
    if "\r" in text:
        raise Invalid("a carriage return")
    families, order, current = {}, [], None
    for number, line in enumerate(body.split("\n")[:-1] if body else [], 1):
        where = f"line {number}"
        if line == "":
            raise Invalid(f"{where}: a blank line")
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) < 3 or parts[0] != "#" or parts[1] not in ("TYPE", "UNIT", "HELP"):
                raise Invalid(f"{where}: not a TYPE, UNIT or HELP line: {line[:60]!r}")
            kind, name = parts[1], parts[2]
            value = parts[3] if len(parts) == 4 else ""
            if not NAME.fullmatch(name):
                raise Invalid(f"{where}: bad family name {name!r}")
            if name != current:
                if name in families:
                    raise Invalid(f"{where}: family {name} resumed after another family")
                families[name] = {"type": "unknown", "unit": "", "help": None, "samples": [], "seen": set()}
                order.append(name)
                current = name
            fam = families[name]
            if fam["samples"]:
                raise Invalid(f"{where}: {kind} of {name} after its samples")
            if kind in fam["seen"]:
                raise Invalid(f"{where}: {kind} of {name} twice")
            fam["seen"].add(kind)
            if kind == "TYPE":
                if value not in TYPES:
                    raise Invalid(f"{where}: unknown type {value!r}")
                fam["type"] = value
            elif kind == "UNIT":
                if not re.fullmatch(r"[a-zA-Z0-9_:]+", value) or not name.endswith("_" + value):
                    raise Invalid(f"{where}: family {name} does not end in its unit _{value}")
                fam["unit"] = value
            else:
                fam["help"] = value
            continue
        m = NAME.match(line)
        if not m:
            raise Invalid(f"{where}: bad metric name: {line[:40]!r}")
        sample = m.group(0)
        at = m.end()
        labels = {}
        if line[at:at + 1] == "{":
            labels, at = parse_labels(line, at)
        if line[at:at + 1] != " ":
            raise Invalid(f"{where}: no space before the value")
        fields = line[at + 1:].split(" ")
        if len(fields) not in (1, 2):
            raise Invalid(f"{where}: extra fields after the value")
        value = parse_number(fields[0])
        if len(fields) == 2:
            parse_number(fields[1])  # a timestamp
        fam_name = current
        fam = families.get(fam_name)
        if fam is None:
            raise Invalid(f"{where}: sample {sample} before any metadata")
        expected = {"gauge": [fam_name], "unknown": [fam_name], "info": [fam_name + "_info"],
                    "counter": [fam_name + "_total", fam_name + "_created"], "stateset": [fam_name]}.get(fam["type"])
        if expected is None or sample not in expected:
            raise Invalid(f"{where}: sample {sample} does not belong to the {fam['type']} family {fam_name}")
        if fam["type"] == "info" and value != 1:
            raise Invalid(f"{where}: an info sample of value {fields[0]}")
        key = (sample, tuple(sorted(labels.items())))
        if key in fam["seen"]:
            raise Invalid(f"{where}: label set repeated in {fam_name}")
        fam["seen"].add(key)
        fam["samples"].append((sample, labels, value))
    return families


BROKEN = {
    "no EOF": "# TYPE a gauge\na 1\n",
    "blank line": "# TYPE a gauge\n\na 1\n# EOF\n",
    "bad escape": '# TYPE a gauge\na{x="\\t"} 1\n# EOF\n',
    "resumed family": "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\n# HELP a again\n# EOF\n",
    "unit not a suffix": "# TYPE a_bytes gauge\n# UNIT a_bytes seconds\na_bytes 1\n# EOF\n",
    "metadata after samples": "# TYPE a gauge\na 1\n# HELP a late\n# EOF\n",
    "info value": "# TYPE a info\na_info 2\n# EOF\n",
    "repeated label set": '# TYPE a gauge\na{x="1"} 1\na{x="1"} 2\n# EOF\n',
    "wrong sample name": "# TYPE a gauge\na_total 1\n# EOF\n",
    "python-only number": "# TYPE a gauge\na 1_0\n# EOF\n",
    "a hexadecimal number": "# TYPE a gauge\na 0x10\n# EOF\n",
    "text after EOF": "# TYPE a gauge\na 1\n# EOF\nb 1\n# EOF\n",
}


def prometheus_parser():
    try:
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
        return text_string_to_metric_families
    except ImportError:
        pass
    # Debian's python3-prometheus-client, when this script runs under another interpreter (pyenv).
    for path in ("/usr/lib/python3/dist-packages",):
        if os.path.isdir(os.path.join(path, "prometheus_client")):
            sys.path.append(path)
            try:
                from prometheus_client.openmetrics.parser import text_string_to_metric_families
                return text_string_to_metric_families
            except ImportError:
                sys.path.remove(path)
    return None


def main():
    binary, *results, out_dir = sys.argv[1:]
    os.makedirs(out_dir, exist_ok=True)
    failures = []
    for name, text in BROKEN.items():
        try:
            parse(text)
            failures.append(f"the strict parser accepted a text with: {name}")
        except Invalid:
            pass
    official = prometheus_parser()
    for path in results:
        target = os.path.join(out_dir, os.path.basename(os.path.dirname(os.path.abspath(path))) + ".openmetrics.txt")
        r = subprocess.run([binary, "report", path, "--openmetrics", target, "--quiet"], capture_output=True,
                           text=True, timeout=120)
        if r.returncode != 0:
            failures.append(f"attnprof report {path} failed ({r.returncode}): {r.stderr}")
            continue
        with open(target, encoding="utf-8") as f:
            text = f.read()
        try:
            families = parse(text)
        except Invalid as e:
            failures.append(f"{target}: {e}")
            continue
        import json
        with open(path) as f:
            records = json.load(f)["records"]
        measured = sum(1 for rec in records if rec["status"] in ("ok", "incorrect"))
        status = families.get("attnprof_point_status", {}).get("samples", [])
        if len(status) != len(records):
            failures.append(f"{target}: {len(status)} status samples for {len(records)} points")
        verdicts = families.get("attnprof_point_verdict", {}).get("samples", [])
        if len(verdicts) != measured:
            failures.append(f"{target}: {len(verdicts)} verdict samples for {measured} measured points")
        p50 = families.get("attnprof_latency_p50_seconds", {}).get("samples", [])
        if len(p50) != measured or any(not (v > 0) or math.isinf(v) for _, _, v in p50):
            failures.append(f"{target}: P50 samples {len(p50)} for {measured} measured points, or one not positive")
        for needed in ("attnprof_tflops", "attnprof_latency_p99_seconds", "attnprof_dram_bytes",
                       "attnprof_min_dram_bytes", "attnprof_roof_percent", "attnprof_run"):
            if needed not in families:
                failures.append(f"{target}: no family {needed}")
        for _, labels, _ in p50:
            missing = {"kernel", "batch", "heads", "kv_heads", "seq_q", "seq_k", "hdim", "causal", "dtype", "device",
                       "revision"} - set(labels)
            if missing:
                failures.append(f"{target}: a P50 sample lacks labels {sorted(missing)}")
                break
        official_note = "prometheus_client not installed"
        if official:
            try:
                parsed = list(official(text))
                official_note = f"prometheus_client read {len(parsed)} families"
            except Exception as e:  # its parser raises ValueError with the offending line
                failures.append(f"{target}: prometheus_client rejected it: {e}")
        print(f"openmetrics: {path}: {len(families)} families, {sum(len(f['samples']) for f in families.values())} "
              f"samples, strict parser ok; {official_note}")
    # `attnprof sweep --openmetrics` writes the same text at the end of a sweep (a small CPU one).
    sweep_dir = os.path.join(out_dir, "sweep")
    sweep_file = os.path.join(sweep_dir, "points.prom")
    r = subprocess.run([binary, "sweep", "--backend", "cpu", "--axes", "batch=1;heads=2;seq=64,128;hdim=64;dtype=bf16",
                        "--out", sweep_dir, "--openmetrics", sweep_file, "--max-seconds", "0.05", "--min-seconds", "0",
                        "--warmup-seconds", "0"], capture_output=True, text=True, timeout=300)
    if r.returncode != 0 or not os.path.exists(sweep_file):
        failures.append(f"attnprof sweep --openmetrics failed ({r.returncode}): {r.stderr[-1000:]}")
    else:
        with open(sweep_file, encoding="utf-8") as f:
            try:
                families = parse(f.read())
                n = len(families.get("attnprof_latency_p50_seconds", {}).get("samples", []))
                if n != 4:
                    failures.append(f"the sweep's export has {n} P50 samples for its 4 points")
                print(f"openmetrics: attnprof sweep --openmetrics: {n} points, strict parser ok")
            except Invalid as e:
                failures.append(f"{sweep_file}: {e}")

    # Points that differ only in a field beyond the common labels (a window, a paged cache, a value head
    # dim of its own, a packed batch's lengths) are distinct series: a sweep of them exports a text both
    # parsers accept, with one status sample per point.
    variants_dir = os.path.join(out_dir, "variants")
    variants_file = os.path.join(variants_dir, "points.prom")
    axes = " | ".join(["batch=1;heads=2;seq=64;hdim=32;dtype=fp32;window=0,16",
                       "batch=1;heads=2;seq_q=1;seq_k=64;hdim=32;dtype=fp32;page_size=0,16;kv_splits=0,2",
                       "batch=1;heads=2;seq=48;hdim=32;dtype=fp32;hdim_v=16,32",
                       "batch=2;heads=2;hdim=32;dtype=fp32;lengths=uniform:8:40;lengths_seed=1,2",
                       "heads=2;hdim=32;dtype=fp32;lengths=list:8/40,list:40/8"])
    r = subprocess.run([binary, "sweep", "--backend", "cpu", "--axes", axes, "--out", variants_dir, "--kernels", "reference",
                        "--openmetrics", variants_file, "--max-seconds", "0.02", "--min-seconds", "0",
                        "--warmup-seconds", "0", "--no-counters"], capture_output=True, text=True, timeout=300)
    if r.returncode != 0 or not os.path.exists(variants_file):
        failures.append(f"attnprof sweep --openmetrics of shape variants failed ({r.returncode}): {r.stderr[-1000:]}")
    else:
        with open(variants_file, encoding="utf-8") as f:
            text = f.read()
        try:
            status = parse(text).get("attnprof_point_status", {}).get("samples", [])
            if len(status) != 12:
                failures.append(f"{variants_file}: {len(status)} status samples for the 12 points")
            print(f"openmetrics: shape variants: {len(status)} points, strict parser ok")
        except Invalid as e:
            failures.append(f"{variants_file}: {e}")
        if official:
            try:
                list(official(text))
            except Exception as e:
                failures.append(f"{variants_file}: prometheus_client rejected it: {e}")

    # A results file holding one point twice is refused (exit 2, one line naming the point), as compare
    # and merge refuse it, rather than exported as two series of one label set.
    import json
    with open(results[0]) as f:
        doubled = json.load(f)
    doubled["records"].append(doubled["records"][0])
    doubled_path = os.path.join(out_dir, "doubled.json")
    with open(doubled_path, "w") as f:
        json.dump(doubled, f)
    doubled_prom = os.path.join(out_dir, "doubled.prom")
    for command in (["report", doubled_path, "--openmetrics", doubled_prom, "--quiet"],
                    ["compare", doubled_path, results[0]], ["merge", doubled_path, "-o", os.path.join(out_dir, "m.json")]):
        r = subprocess.run([binary, *command], capture_output=True, text=True, timeout=120)
        lines = r.stderr.strip().split("\n")
        if r.returncode != 2 or len(lines) != 1 or "is in the file twice" not in lines[0] or "doubled.json" not in lines[0]:
            failures.append(f"attnprof {command[0]} of a point twice: exit {r.returncode}, stderr {r.stderr[-400:]!r}")
    if os.path.exists(doubled_prom):
        failures.append("report wrote an export of a results file holding a point twice")

    # The dashboard and the alert rules of the docs query only what the export writes.
    docs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs")
    samples = set()
    for path in results[-1:]:
        with open(os.path.join(out_dir, os.path.basename(os.path.dirname(os.path.abspath(path))) +
                               ".openmetrics.txt"), encoding="utf-8") as f:
            for fam in parse(f.read()).values():
                samples.update(name for name, _, _ in fam["samples"])
    import json
    with open(os.path.join(docs, "grafana-attnprof.json")) as f:
        dashboard = json.load(f)
    queries = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    queries += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    with open(os.path.join(docs, "openmetrics.md")) as f:
        queries += re.findall(r"expr: (.*)", f.read())
    for q in queries:
        for name in re.findall(r"\b(attnprof_[a-z0-9_]+)", q):
            if name not in samples:
                failures.append(f"docs query {q!r} names {name}, which the export does not write")
    print(f"openmetrics: {len(queries)} queries of docs/grafana-attnprof.json and docs/openmetrics.md checked")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
