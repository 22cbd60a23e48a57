#!/usr/bin/env python3
"""The checks and tables of the GPU-machine phases (scripts/device/*.sh), read from attnprof's results
JSON, Nsight Compute's CSV output and anchor.py's rows. Each check returns (lines, ok): the lines are
printed, and the command exits 1 when ok is false, 0 otherwise (2 for bad arguments).

usage: python3 scripts/device/checks.py CHECK ARGS...   (CHECK --help for its arguments)

Checks (tests/scripts/checks_test.py runs every one on fixtures):
  fields RESULTS                  every point of a default sweep has every field (latency, samples, clock,
                                  verification, counters, occupancy, stages, diagnosis)
  aa A B [--label L]              the same sweep twice: P50 agreement, the largest differences
  p50-pairs A B [C ...]           each pair of runs: P50s within 1%
  counters-batched SINGLE BATCHED counters of a session per point against a batched session (2%)
  ncu-agreement RESULTS NCU.csv   attnprof's counters of one call against Nsight Compute's
  ncu-launches NCU.csv            Nsight Compute's metrics per launch, in launch order
  overhead BATCHED PER_POINT NONE NCU   wall-time ratios of counters against Nsight Compute [s]
  reference-stages RESULTS        each point's verdict and its launches' shares
  sessions RESULTS                counter sessions, and each point's writes + L2 tail against analytic
  clock RESULTS                   a long-sampled point: latency against the SM clock of each batch
  tiles FLASH.json RUN_DIR...     kernel variants' TFLOP/s beside PyTorch's flash, ratios
  flash-pair FLASH.json... --fused DIR...   fused against flash, per sampling style and round
  devices TWO ONE [--label L]     a sweep on several GPUs against one: the same points, P50 agreement
  statuses RESULTS                statuses per kernel; every point that ran is verified
  plugin RESULTS --kernel NAME    a plugin kernel's points: ok, verified, counters, occupancy, verdict
  metric-names RESULTS            the counter metrics of a point, comma-separated (for ncu --metrics)
"""
import argparse
import collections
import csv
import io
import json
import math
import os
import statistics
import sys


def number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def load(path):
    with open(path) as f:
        return json.load(f)


def by_key(doc):
    return {r["key"]: r for r in doc["records"]}


def ok_records(doc):
    return [r for r in doc["records"] if r["status"] == "ok"]


def p50_ratio(a, b):
    """a's P50 over b's, minus 1, for two records that ran; else None."""
    if a["status"] != "ok" or b["status"] != "ok" or not b["latency"].get("p50_us"):
        return None
    return a["latency"]["p50_us"] / b["latency"]["p50_us"] - 1


def pct(x):
    return f"{100 * x:+.2f}%"


# ---- one sweep ----------------------------------------------------------------------------------------

# Counter totals every point of a default sweep must have (src/measure/cuda/cupti_profiler.cpp's set).
FIELDS_TOTALS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum", "lts__t_bytes.sum",
                 "lts__t_sector_hit_rate.pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                 "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
                 "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_tensor_op_hmma.sum",
                 "sm__sass_thread_inst_executed_op_ffma_pred_on.sum")
REFERENCE_STAGES = 3


def missing_fields(r):
    """The names of the checks a record of a default sweep fails."""
    lat, c = r.get("latency") or {}, r.get("counters") or {}
    occ, v = r.get("occupancy") or {}, r.get("verification") or {}
    is_reference = r.get("kernel") == "reference"
    stages = r.get("stages") or []
    checks = {
        "status ok": r.get("status") == "ok",
        "verified": bool(v.get("checked") and v.get("passed")),
        "latency": all(number(lat.get(f)) for f in ("p50_us", "p90_us", "p99_us", "p50_ci_low_us", "p50_ci_high_us",
                                                     "stddev_us")),
        "raw samples": len(r.get("samples_us") or []) == lat.get("n", -1) >= 10,
        "sampling stop": r.get("sampling_stop") in ("converged", "time_budget", "max_samples"),
        "clock": number((r.get("clock") or {}).get("sm_mhz_median")),
        "counters ok": c.get("status") == "ok" and (c.get("passes") or 0) > 0 and number(c.get("profiling_ms")),
        "counter totals": all(number((c.get("total") or {}).get(m)) for m in FIELDS_TOTALS),
        "per-kernel counters": len(c.get("per_kernel") or []) == (REFERENCE_STAGES if is_reference else 1),
        "L2 tail": number(c.get("dram_write_tail_bytes")),
        "occupancy": all(number(occ.get(f)) for f in ("theoretical_pct", "achieved_pct", "waves"))
                     and bool(occ.get("limiter")),
        "stages": (len(stages) == REFERENCE_STAGES and all(number(s.get("share_of_p50")) and number(s.get("share_of_p99"))
                                                           for s in stages)) if is_reference else True,
        "diagnosis": bool((r.get("diagnosis") or {}).get("verdict")),
        "tflops": number(r.get("tflops")),
    }
    return [name for name, passed in checks.items() if not passed]


def check_fields(doc):
    recs = doc["records"]
    kernels = collections.Counter(r["kernel"] for r in recs)
    problems = [(r["key"], missing_fields(r), r.get("reason", "")) for r in recs]
    problems = [p for p in problems if p[1]]
    lines = [f"schema {doc.get('schema_version')}, {len(recs)} points {dict(kernels)}, "
             f"git {doc['context'].get('git_revision')}",
             f"points with every field: {len(recs) - len(problems)} of {len(recs)}"]
    lines += [f"  MISSING {key} {bad} {why}" for key, bad, why in problems[:20]]
    ratios = sorted((r["counters"]["dram_write_tail_bytes"] + r["counters"]["total"]["dram__bytes_write.sum"])
                    / r["cost"]["min_bytes_write"] for r in recs
                    if (r.get("counters") or {}).get("status") == "ok" and number(r["counters"].get("dram_write_tail_bytes")))
    if ratios:
        lines.append(f"DRAM written + L2 tail / analytic: {ratios[0]:.4f}-{ratios[-1]:.4f} "
                     f"(median {statistics.median(ratios):.4f})")
    stops = collections.Counter(r.get("sampling_stop") for r in recs)
    sessions = {json.dumps((r.get("counters") or {}).get("session"), sort_keys=True) for r in recs}
    lines.append(f"sampling stops {dict(stops)} | counter sessions {len(sessions)}")
    return lines, bool(recs) and not problems


def check_reference_stages(doc):
    lines = []
    for r in doc["records"]:
        d, s = r.get("diagnosis") or {}, r["shape"]
        lines.append(f"{r['kernel']} {label(s)} {r['status']} p50 {r['latency'].get('p50_us')} TF {r.get('tflops')} "
                     f"{d.get('verdict')}")
        for launch in d.get("launches", []):
            lines.append(f"    {launch['name']} {100 * launch['time_share']:.0f}% "
                         f"{(launch.get('dram_bytes_per_s') or 0) / 1e12:.2f} TB/s compute {launch.get('compute_sol_pct')} "
                         f"memory {launch.get('memory_sol_pct')} {launch.get('verdict')}")
    return lines, bool(doc["records"]) and all(r["status"] == "ok" for r in doc["records"])


def check_sessions(doc):
    lines, seen = [], set()
    counted = [r for r in doc["records"] if r["counters"]["status"] == "ok"]
    for r in counted:
        s = r["counters"].get("session")
        if s and json.dumps(s, sort_keys=True) not in seen:
            seen.add(json.dumps(s, sort_keys=True))
            lines.append(f"  session: {json.dumps(s, sort_keys=True)} passes {r['counters']['passes']}")
    for r in counted:
        s, c = r["shape"], r["counters"]
        w, tail, m = c["total"]["dram__bytes_write.sum"], c.get("dram_write_tail_bytes") or 0, r["cost"]["min_bytes_write"]
        lines.append(f"  {r['kernel']:9s} s{s['seq_q']} d{s['hdim']} c{int(s['causal'])}: write {w / 1e6:9.2f} MB + "
                     f"tail {tail / 1e6:7.2f} MB = {(w + tail) / m:6.3f} x min write {m / 1e6:9.2f} MB")
    return lines, bool(counted) and len(counted) == len(doc["records"])


def check_clock(doc):
    """Per record: batch-median latency against the batch's SM clock; latency x clock is flat when the
    clock explains the latency's steps."""
    lines = []
    for r in doc["records"]:
        s, c = r.get("samples_us") or [], r.get("clock") or {}
        per = c.get("samples_per_reading") or 10
        mhz = c.get("sm_mhz_batches") or []
        rows = []
        for b in range(min(len(mhz), len(s) // per)):
            lat = statistics.median(s[b * per:(b + 1) * per])
            rows.append((lat, mhz[b], lat * mhz[b]))
        lines.append(f"{r['key']} p50 {r['latency'].get('p50_us', 0):.1f} clock min/median/max "
                     f"{[round(c.get(k) or 0) for k in ('sm_mhz_min', 'sm_mhz_median', 'sm_mhz_max')]}")
        if not rows:
            lines.append("  no clock batches")
            continue
        lat, cyc = [x[0] for x in rows], [x[2] for x in rows]
        lines.append(f"  batch-median latency spread {100 * (max(lat) / min(lat) - 1):.2f}% (max/min-1), "
                     f"latency x clock spread {100 * (max(cyc) / min(cyc) - 1):.2f}%")
        lines.append(f"  first 12 batches (us @ MHz): {[(round(a), round(b)) for a, b, _ in rows[:12]]}")
        for w in (10, 50, 200):
            if len(s) >= 2 * w:
                meds = [statistics.median(s[i:i + w]) for i in range(0, len(s) - w + 1, w)]
                lines.append(f"  P50 of consecutive windows of {w} samples: spread {100 * (max(meds) / min(meds) - 1):.2f}%")
    return lines, bool(doc["records"]) and all(r.get("clock", {}).get("sm_mhz_batches") for r in doc["records"])


def check_statuses(doc):
    recs = doc["records"]
    lines = [f"{k:16} {s:12} {n}" for (k, s), n in sorted(collections.Counter((r["kernel"], r["status"])
                                                                             for r in recs).items())]
    counters = collections.Counter((r["kernel"], r["counters"]["status"]) for r in recs)
    lines.append("counters: " + ", ".join(f"{k} {s} {n}" for (k, s), n in sorted(counters.items())))
    ran = [r for r in recs if r["status"] == "ok"]
    unverified = [r["key"] for r in ran if not r["verification"]["passed"]]
    lines.append(f"verified: {len(ran) - len(unverified)} of {len(ran)} points that ran")
    lines += [f"  not verified: {k}" for k in unverified]
    reasons = collections.Counter((r["kernel"], r["reason"][:150]) for r in recs if r["status"] != "ok")
    lines += [f"  {k}: {n}x {why}" for (k, why), n in reasons.most_common(12)]
    return lines, bool(ran) and not unverified


def check_plugin(doc, kernel):
    lines, good = [f"plugins: {json.dumps(doc['context'].get('plugins'))}"], True
    points = [r for r in doc["records"] if r["kernel"] == kernel]
    for r in points:
        o, d = r.get("occupancy") or {}, r.get("diagnosis") or {}
        fine = r["status"] == "ok" and r["verification"]["passed"] and r["counters"]["status"] == "ok"
        good = good and fine
        lines.append(f"{r['key']}: {r['status']} verified={r['verification']['passed']} "
                     f"p50 {r['latency'].get('p50_us') or 0:.1f} us {r.get('tflops') or 0:.1f} TFLOP/s "
                     f"counters={r['counters']['status']} occupancy {o.get('theoretical_pct') or 0:.0f}% "
                     f"({o.get('limiter')}) achieved {o.get('achieved_pct')} verdict {d.get('verdict')}")
    if not points:
        lines.append(f"no points of {kernel}")
    return lines, bool(points) and good


def metric_names(doc):
    """The counter metrics of the first point with counters, comma-separated (for `ncu --metrics`)."""
    for r in doc["records"]:
        if r["counters"]["status"] == "ok":
            return [",".join(sorted(r["counters"]["total"]))], True
    return [], False


def label(s):
    gqa = f"/{s['kv_heads']}" if s.get("kv_heads", s["heads"]) != s["heads"] else ""
    hdim_v = f"v{s['hdim_v']}" if s.get("hdim_v", s["hdim"]) != s["hdim"] else ""
    return (f"b{s['batch']} h{s['heads']}{gqa} s{s['seq_q']}x{s['seq_k']} d{s['hdim']}{hdim_v}"
            f"{' causal' if s['causal'] else ''} {s['dtype']}{' win' + str(s['window']) if s.get('window') else ''}")


# ---- two or more sweeps -------------------------------------------------------------------------------

def run_line(name, doc):
    recs = ok_records(doc)
    n = sorted(len(r["samples_us"]) for r in recs) or [0]
    stops = collections.Counter(r.get("sampling_stop") or "?" for r in recs)
    return (f"{name}: samples per point {n[0]}-{n[-1]} (median {statistics.median(n):g}), "
            f"{sum(sum(r['samples_us']) for r in recs) / 1e6:.1f} s of sampled GPU time, "
            f"{sum(r['wall_s'] for r in recs):.1f} s of point wall time, stops {dict(stops)}")


def check_aa(a, b, name="aa"):
    """The same sweep twice (an A/A): how many P50s agree within 0.5/1/2%, the largest differences
    beside the two runs' median SM clocks."""
    lines = [run_line("run 1", a), run_line("run 2", b)]
    other = by_key(b)
    rows = []
    for key, r in by_key(a).items():
        o = other.get(key)
        d = p50_ratio(r, o) if o else None
        if d is None:
            continue
        ca, cb = (r.get("clock") or {}).get("sm_mhz_median"), (o.get("clock") or {}).get("sm_mhz_median")
        dc = ca / cb - 1 if number(ca) and number(cb) and cb else float("nan")
        rows.append((abs(d), d, dc, key, r["latency"]["n"], o["latency"]["n"]))
    rows.sort()
    n = len(rows)
    lines.append(f"{name} points {n}")
    for lim in (0.005, 0.01, 0.02):
        w = sum(x[0] <= lim for x in rows)
        lines.append(f"  P50 within {lim:.1%}: {w}/{n} ({100 * w / max(n, 1):.1f}%)")
    if rows:
        lines.append(f"  median |diff| {100 * statistics.median(x[0] for x in rows):.3f}%")
    for x in rows[-8:]:
        lines.append(f"  {100 * x[1]:+.2f}% P50, clock median {100 * x[2]:+.2f}%  {x[3]}  samples {x[4]}/{x[5]}")
    return lines, n > 0


def check_p50_pairs(docs, within=0.01):
    runs = [by_key(d) for d in docs]
    lines, compared = [], True
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            diffs = [abs(d) for key, r in runs[i].items() if key in runs[j]
                     for d in [p50_ratio(r, runs[j][key])] if d is not None]
            w = sum(d <= within for d in diffs)
            compared = compared and bool(diffs)
            lines.append(f"runs {i} vs {j}: {w}/{len(diffs)} P50s within {within:.0%} "
                         f"({100 * w / max(len(diffs), 1):.0f}%), worst {100 * max(diffs, default=0):.2f}%")
    return lines, len(runs) >= 2 and compared


BATCH_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "sm__inst_executed_pipe_tensor_op_hmma.sum",
                 "sm__ops_path_tensor_src_bf16_dst_fp32.sum", "gpu__time_duration.sum")


def check_counters_batched(single, batched, tolerance=0.02):
    """Counters of a session per point (--counter-batch 1) against a batched session of the same points:
    no point fell back to a session of its own, the same ranges, every metric but the duration within
    `tolerance`."""
    lines, bad = [], 0
    other = by_key(batched)
    worst = {m: (0.0, "") for m in BATCH_METRICS}
    for key, s in by_key(single).items():
        b = other.get(key)
        if b is None or s["counters"]["status"] != "ok" or b["counters"]["status"] != "ok":
            lines.append(f"not compared: {key}: per point {s['counters']['status']}, batched "
                         f"{b and b['counters']['status']} {b and b['counters']['reason']}")
            bad += 1
            continue
        if "batched session not used" in b["counters"]["reason"]:
            lines.append(f"fell back to a session per point: {key}: {b['counters']['reason']}")
            bad += 1
        names_s = [k["kernel"] for k in s["counters"]["per_kernel"]]
        names_b = [k["kernel"] for k in b["counters"]["per_kernel"]]
        if names_s != names_b:
            lines.append(f"range names differ: {key}: {names_s} vs {names_b}")
            bad += 1
        for m in BATCH_METRICS:
            u, v = s["counters"]["total"].get(m, 0.0), b["counters"]["total"].get(m, 0.0)
            d = abs(v / u - 1) if u else (0.0 if v == 0 else 1.0)
            if d > worst[m][0]:
                worst[m] = (d, key)
    for m, (d, key) in worst.items():
        lines.append(f"{m}: worst batched vs per point {100 * d:.2f}%" + (f" ({key})" if key else ""))
        if m != "gpu__time_duration.sum" and d > tolerance:
            bad += 1
    ms = lambda doc: sum(r["counters"].get("profiling_ms") or 0 for r in doc["records"]) / 1e3
    lines.append(f"counter time: per point {ms(single):.1f} s, batched {ms(batched):.1f} s")
    return lines, bad == 0 and bool(single["records"])


def check_devices(two, one, name):
    """A sweep over several GPUs (--devices all) against one GPU: every point once, the same set."""
    keys2, keys1 = [r["key"] for r in two["records"]], [r["key"] for r in one["records"]]
    same = sorted(keys2) == sorted(keys1) and len(set(keys2)) == len(keys2)
    lines = [f"{name} points: several GPUs {len(keys2)} unique {len(set(keys2))} one GPU {len(keys1)} "
             f"{'same set' if same else 'DIFFERENT SETS'} {'same order' if keys2 == keys1 else 'other order'}",
             f"  status several: {dict(collections.Counter(r['status'] for r in two['records']))} "
             f"one: {dict(collections.Counter(r['status'] for r in one['records']))}",
             f"  points per device_id: {dict(collections.Counter(r['device_id'] for r in two['records']))}"]
    by1 = by_key(one)
    diffs = sorted((abs(d), r["key"], r["device_id"]) for r in two["records"] if r["key"] in by1
                   for d in [p50_ratio(r, by1[r["key"]])] if d is not None)
    if diffs:
        for lim in (0.01, 0.02, 0.05):
            lines.append(f"  P50 several vs one within {lim:.0%}: {sum(d <= lim for d, _, _ in diffs)}/{len(diffs)}")
        lines.append(f"  median |diff| {100 * statistics.median(d for d, _, _ in diffs):.2f}% worst "
                     f"{100 * diffs[-1][0]:.2f}% at {diffs[-1][1]} (device {diffs[-1][2]})")
    lines.append(f"  wall_s: several {two['context']['sweep'].get('wall_s')} one {one['context']['sweep'].get('wall_s')}")
    return lines, same


# ---- Nsight Compute -----------------------------------------------------------------------------------

UNIT_SCALE = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1, "usecond": 1e3, "msecond": 1e6,
              "inst": 1, "Kinst": 1e3, "Minst": 1e6, "Ginst": 1e9}


def ncu_rows(text):
    """The metric rows of `ncu --csv` output, which shares stdout with ==PROF== lines and the profiled
    program's own: dicts of the CSV header's columns, "Metric Value" as a number in base units."""
    rows = list(csv.reader(io.StringIO("".join(l for l in text.splitlines(True) if l.startswith('"')))))
    at = next((i for i, r in enumerate(rows) if "Metric Name" in r and "Metric Value" in r), None)
    if at is None:
        raise ValueError("no Nsight Compute metric table (a CSV header with Metric Name and Metric Value)")
    head = rows[at]
    out = []
    for r in rows[at + 1:]:
        if len(r) != len(head):
            continue
        row = dict(zip(head, r))
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except ValueError:
            continue
        row["Metric Value"] = value * UNIT_SCALE.get(row.get("Metric Unit", ""), 1)
        out.append(row)
    return out


def ncu_totals(rows):
    """Per metric, the sum over every profiled launch."""
    total = collections.defaultdict(float)
    for r in rows:
        total[r["Metric Name"]] += r["Metric Value"]
    return dict(total)


def check_ncu_agreement(record, ncu, read_tolerance=0.01, duration_tolerance=0.03):
    """attnprof's counters of one call (a record's per-range sums) against Nsight Compute's of the same
    call: every shared metric side by side; ok when DRAM read is within read_tolerance and the duration
    within duration_tolerance (DRAM writes are shown, not judged: docs/PERFORMANCE.md)."""
    c = record["counters"]
    ours = collections.defaultdict(float)
    for k in c.get("per_kernel", []):
        for m, v in k["metrics"].items():
            ours[m] += v
    lines = [record["key"]]
    diffs = {}
    for m in sorted(ncu):
        if m in ours and ncu[m]:
            diffs[m] = ours[m] / ncu[m] - 1
            lines.append(f"  {m:45s} attnprof {ours[m]:16.6g}  ncu {ncu[m]:16.6g}  {pct(diffs[m])}")
    rw = ours["dram__bytes_read.sum"] + ours["dram__bytes_write.sum"]
    nrw = ncu.get("dram__bytes_read.sum", 0) + ncu.get("dram__bytes_write.sum", 0)
    if nrw:
        lines.append(f"  read + write in range: {pct(rw / nrw - 1)}")
    tail = c.get("dram_write_tail_bytes")
    if number(tail):
        w, mw = ours["dram__bytes_write.sum"], record["cost"]["min_bytes_write"]
        lines.append(f"  attnprof write {w:.4g} + L2 tail {tail:.4g} = {w + tail:.4g}, {pct((w + tail) / mw - 1)} of the "
                     f"analytic {mw:.4g}")
    tensor = max(ours.get("sm__ops_path_tensor_src_bf16_dst_fp32.sum", 0), ours.get("sm__ops_path_tensor_src_fp16.sum", 0))
    if tensor:
        lines.append(f"  tensor ops vs the dense FLOPs: {pct(tensor / record['cost']['flops_dense'] - 1)}"
                     + (" (causal: the diagonal tiles are computed whole)" if record["shape"]["causal"] else ""))
    ok = ("dram__bytes_read.sum" in diffs and abs(diffs["dram__bytes_read.sum"]) <= read_tolerance
          and "gpu__time_duration.sum" in diffs and abs(diffs["gpu__time_duration.sum"]) <= duration_tolerance)
    return lines, c.get("status") == "ok" and ok


def check_ncu_launches(rows, label=""):
    """Every profiled launch in launch order (a sampling loop's flush and call): its metrics [base units]."""
    seq = {}
    for r in rows:
        entry = seq.setdefault(int(r["ID"]), {"kernel": "flush" if "l2_flush" in r["Kernel Name"] else "call"})
        entry[r["Metric Name"]] = r["Metric Value"]
    lines = [f"  ncu {label}".rstrip() + f": {len(seq)} launches"]
    for i, e in sorted(seq.items()):
        lines.append(f"    {i:3d} {e['kernel']:5s} " + " ".join(f"{m} {v:.6g}" for m, v in sorted(e.items()) if m != "kernel"))
    return lines, bool(seq)


def check_overhead(batched_s, per_point_s, none_s, ncu_s):
    """Wall times of one sweep with batched counters, a session per point, none, and under Nsight
    Compute collecting the same metrics [s]; ok when counters beat Nsight Compute."""
    lines = [f"with_counters_batched_s {batched_s:.1f} with_counters_per_point_s {per_point_s:.1f} "
             f"no_counters_s {none_s:.1f} ncu_s {ncu_s:.1f}",
             f"whole-run ratio ncu/batched {ncu_s / batched_s:.2f}  ncu/per-point {ncu_s / per_point_s:.2f}  "
             f"(at most ncu/none = {ncu_s / none_s:.2f} with free counters)",
             f"counter-phase ratio (ncu - none)/(batched - none) {(ncu_s - none_s) / max(batched_s - none_s, 1e-9):.2f}  "
             f"per-point {(ncu_s - none_s) / max(per_point_s - none_s, 1e-9):.2f}"]
    return lines, batched_s < ncu_s


# ---- beside PyTorch -----------------------------------------------------------------------------------

def tiles_key(r):
    s = r["shape"]
    return (r["kernel"], s["dtype"], s["hdim"], s["seq_q"], bool(s["causal"]))


def check_tiles(flash_rows, runs):
    """Kernel variants (or builds) swept in alternating rounds beside PyTorch's flash (anchor.py rows).
    runs: {name: [results doc of each round]}. Each cell is the rounds' TFLOP/s; ratios take the best
    round; each later run against the first, per kernel."""
    flash = {(r["dtype"], r["hdim"], r["seq"], bool(r["causal"])): r.get("flash_tflops") for r in flash_rows}
    res = {}
    for name, docs in runs.items():
        for doc in docs:
            for r in doc["records"]:
                res.setdefault(tiles_key(r), {}).setdefault(name, []).append((r.get("tflops") or 0, r["status"]))
    names = list(runs)
    lines = ["kernel dtype hdim causal seq  flash  " + "  ".join(f"{v:>13s}" for v in names) +
             "   ratio to flash (best round)"]
    for key in sorted(res):
        f = flash.get(key[1:])
        cells = "  ".join("/".join(f"{t:.0f}" for t, _ in res[key].get(v, [])).rjust(13) for v in names)
        ratios = "  ".join(f"{max(t for t, _ in res[key][v]) / f:.3f}" if f and v in res[key] else "-" for v in names)
        bad = " ".join(st for v in names for _, st in res[key].get(v, []) if st != "ok")
        lines.append(f"{key[0]} {key[1]} {key[2]:3d} {int(key[4])} {key[3]:5d} {f or float('nan'):6.1f}  {cells}   {ratios} {bad}")
    for v in names[1:]:
        for kern in sorted({k[0] for k in res}):
            rs = sorted(max(t for t, _ in res[k][v]) / max(t for t, _ in res[k][names[0]])
                        for k in res if k[0] == kern and v in res[k] and names[0] in res[k]
                        and max(t for t, _ in res[k][names[0]]) > 0)
            if rs:
                lines.append(f"{v} / {names[0]} {kern}: median {statistics.median(rs):.4f} range {rs[0]:.4f}-{rs[-1]:.4f} "
                             f"over {len(rs)} points")
    return lines, bool(res)


FLASH_STYLES = ("anchor", "steady", "grid")
FUSED_STYLES = ("anchor", "default", "warm")
# (fused sampling, flash sampling): like for like.
PAIRS = (("anchor", "anchor"), ("default", "steady"), ("default", "grid"), ("warm", "grid"))


def check_flash_pair(flash_rounds, fused_rounds):
    """`fused` against PyTorch's flash over rounds. flash_rounds: per round, the rows of the three flash
    runs {style: anchor.py rows}; fused_rounds: per round {style: results doc}. Ratios take each side's
    best round; counts the points where fused reaches flash, per pairing."""
    flash, fused = {}, {}
    for rnd in flash_rounds:
        for style, rows in rnd.items():
            for r in rows:
                key = (r["dtype"], r["hdim"], bool(r["causal"]), r["seq"])
                flash.setdefault(key, {}).setdefault(style, []).append(r.get("flash_tflops") or 0)
    for rnd in fused_rounds:
        for style, doc in rnd.items():
            for r in doc["records"]:
                s = r["shape"]
                key = (s["dtype"], s["hdim"], bool(s["causal"]), s["seq_q"])
                fused.setdefault(key, {}).setdefault(style, []).append(r.get("tflops") or 0)
    lines = ["TFLOP/s per round; ratios: best fused round over best flash round: " +
             ", ".join(f"fused {a}/flash {b}" for a, b in PAIRS)]
    met, measured = [0] * len(PAIRS), 0
    for key in sorted(fused):
        fu, fl = fused[key], flash.get(key, {})
        name = f"{key[0]} d{key[1]} {'c' if key[2] else 'n'} s{key[3]}"
        usable = [(a, b) for a, b in PAIRS if fu.get(a) and fl.get(b) and max(fl[b]) > 0]
        if not usable:
            lines.append(f"{name:18s} flash not measured")
            continue
        measured += 1
        ratios = {p: max(fu[p[0]]) / max(fl[p[1]]) for p in usable}
        met = [m + (ratios.get(p, 0) >= 1) for m, p in zip(met, PAIRS)]
        cols = [f"flash {s} {'/'.join(f'{t:.0f}' for t in fl.get(s, []))}" for s in FLASH_STYLES]
        cols += [f"fused {s} {'/'.join(f'{t:.0f}' for t in fu.get(s, []))}" for s in FUSED_STYLES]
        lines.append(f"{name:18s} " + " | ".join(cols) + " | " +
                     " ".join(f"{ratios[p]:.3f}" if p in ratios else "-" for p in PAIRS))
    lines.append(f"points where fused >= flash, of {measured}: " +
                 ", ".join(f"{a}/{b} {m}" for (a, b), m in zip(PAIRS, met)))
    return lines, measured > 0


# ---- command line -------------------------------------------------------------------------------------

def read_text(path):
    with open(path, errors="replace") as f:
        return f.read()


def results_dirs(paths):
    return [load(os.path.join(p, "results.json")) if os.path.isdir(p) else load(p) for p in paths]


def run(argv):
    ap = argparse.ArgumentParser(prog="checks.py", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="check", required=True)
    one = lambda name: sub.add_parser(name).add_argument("results")
    for name in ("fields", "reference-stages", "sessions", "clock", "statuses", "metric-names"):
        one(name)
    p = sub.add_parser("aa"); p.add_argument("a"); p.add_argument("b"); p.add_argument("--label", default="aa")
    p = sub.add_parser("p50-pairs"); p.add_argument("runs", nargs="+")
    p = sub.add_parser("counters-batched"); p.add_argument("single"); p.add_argument("batched")
    p = sub.add_parser("ncu-agreement"); p.add_argument("results"); p.add_argument("ncu_csv")
    p = sub.add_parser("ncu-launches"); p.add_argument("ncu_csv"); p.add_argument("--label", default="")
    p = sub.add_parser("overhead")
    for name in ("batched_s", "per_point_s", "none_s", "ncu_s"):
        p.add_argument(name, type=float)
    p = sub.add_parser("tiles"); p.add_argument("flash"); p.add_argument("runs", nargs="+", metavar="NAME=DIR,DIR")
    p = sub.add_parser("flash-pair")
    p.add_argument("--flash", nargs="+", required=True, metavar="ROUND_DIR", help="folders of anchor_<style>.json")
    p.add_argument("--fused", nargs="+", required=True, metavar="ROUND_DIR", help="folders of <style>/results.json")
    p = sub.add_parser("devices"); p.add_argument("two"); p.add_argument("one"); p.add_argument("--label", default="sweep")
    p = sub.add_parser("plugin"); p.add_argument("results"); p.add_argument("--kernel", required=True)
    a = ap.parse_args(argv)

    c = a.check
    if c == "fields":
        return check_fields(load(a.results))
    if c == "reference-stages":
        return check_reference_stages(load(a.results))
    if c == "sessions":
        return check_sessions(load(a.results))
    if c == "clock":
        return check_clock(load(a.results))
    if c == "statuses":
        return check_statuses(load(a.results))
    if c == "metric-names":
        return metric_names(load(a.results))
    if c == "aa":
        return check_aa(load(a.a), load(a.b), a.label)
    if c == "p50-pairs":
        return check_p50_pairs([load(p) for p in a.runs])
    if c == "counters-batched":
        return check_counters_batched(load(a.single), load(a.batched))
    if c == "ncu-agreement":
        return check_ncu_agreement(load(a.results)["records"][0], ncu_totals(ncu_rows(read_text(a.ncu_csv))))
    if c == "ncu-launches":
        return check_ncu_launches(ncu_rows(read_text(a.ncu_csv)), a.label)
    if c == "overhead":
        return check_overhead(a.batched_s, a.per_point_s, a.none_s, a.ncu_s)
    if c == "tiles":
        runs = {}
        for spec in a.runs:
            name, _, dirs = spec.partition("=")
            runs[name] = results_dirs(dirs.split(","))
        return check_tiles(load(a.flash), runs)
    if c == "flash-pair":
        flash = [{s: load(os.path.join(d, f"anchor_{s}.json")) for s in FLASH_STYLES
                  if os.path.exists(os.path.join(d, f"anchor_{s}.json"))} for d in a.flash]
        fused = [{s: load(os.path.join(d, s, "results.json")) for s in FUSED_STYLES
                  if os.path.exists(os.path.join(d, s, "results.json"))} for d in a.fused]
        return check_flash_pair(flash, fused)
    if c == "devices":
        return check_devices(load(a.two), load(a.one), a.label)
    if c == "plugin":
        return check_plugin(load(a.results), a.kernel)
    raise AssertionError(c)


def main(argv=None):
    try:
        lines, ok = run(sys.argv[1:] if argv is None else argv)
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        print(f"checks.py: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    for line in lines:
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
