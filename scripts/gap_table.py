#!/usr/bin/env python3
"""The gap table: attnprof's kernels against PyTorch's SDPA backends, from ONE attnprof sweep that ran
them side by side (--kernels fused,fused-sm90,torch:flash,torch:cudnn,torch:efficient ...), so every
figure has the same sampling, the same L2 state and the same statistic (P50).

usage: python3 scripts/gap_table.py RESULTS.json [SDPA_SHAPES.json] > table.md

Prefill rows (seq_q > 16) give TFLOP/s (cost.flops / P50); decode rows (seq_q <= 16) give the KV
cache's bandwidth in TB/s (minimum bytes read / P50). `best/vendor` is the best attnprof kernel's
speed over the faster of torch:flash and torch:cudnn. With SDPA_SHAPES.json (a `scripts/device/anchor.py
shapes` run of the same shapes in the same device call), PyTorch's own-timed flash P50 is shown beside attnprof's
measurement of torch:flash as a cross-check of the bridge.
"""
import json
import math
import sys

OURS = ("fused", "fused-sm90", "fused-auto", "decode", "reference")
VENDORS = ("torch:flash", "torch:cudnn")
SHOWN = ("fused", "fused-sm90", "decode", "torch:flash", "torch:cudnn", "torch:efficient")


def shape_key(s):
    return (s["batch"], s["heads"], s.get("kv_heads", s["heads"]), s["seq_q"], s["seq_k"], s["hdim"],
            bool(s["causal"]), s["dtype"], s.get("page_size", 0), s.get("kv_splits", 0), s.get("window", 0),
            tuple(s.get("seq_lens", ())), s.get("hdim_v", s["hdim"]))


def label(s):
    gqa = f"/{s['kv_heads']}" if s["kv_heads"] != s["heads"] else ""
    causal = " causal" if s["causal"] else ""
    page = f" page{s['page_size']}" if s.get("page_size") else ""
    splits = f" splits{s['kv_splits']}" if s.get("kv_splits") else ""
    window = f" win{s['window']}" if s.get("window") else ""
    hdim_v = f"v{s['hdim_v']}" if s.get("hdim_v", s["hdim"]) != s["hdim"] else ""
    varlen = ""
    if s.get("seq_lens"):  # a packed batch, as core::Shape::label writes it
        lengths = s.get("lengths", "")
        if not lengths or lengths.startswith("list:"):
            varlen = " varlen list:" + "/".join(str(n) for n in s["seq_lens"])
        else:
            varlen = f" varlen {lengths} seed{s.get('lengths_seed', 0)} tokens{sum(s['seq_lens'])}"
    return (f"b{s['batch']} h{s['heads']}{gqa} s{s['seq_q']}x{s['seq_k']} d{s['hdim']}{hdim_v}{causal} {s['dtype']}"
            f"{page}{splits}{window}{varlen}")


def figure(r, decode):
    p50 = r["latency"]["p50_us"]
    if r["status"] != "ok" or not p50:
        return None
    if decode:
        return r["cost"]["min_bytes_read"] / (p50 * 1e-6) / 1e12  # TB/s
    return r["cost"]["flops"] / (p50 * 1e-6) / 1e12  # TFLOP/s


def main():
    res = json.load(open(sys.argv[1]))
    anchor = {}
    if len(sys.argv) > 2:
        for row in json.load(open(sys.argv[2])):
            if row.get("flash_ms") is not None:
                anchor[shape_key(row)] = row["flash_ms"] * 1e3
    groups = {}
    for r in res["records"]:
        groups.setdefault(shape_key(r["shape"]), {})[r["kernel"]] = r
    ctx = res["context"]
    print(f"attnprof {ctx['git_revision']} on {ctx['device']['name']}, {ctx['date_utc']}: "
          f"`{ctx['command_line']}`\n")
    header = ["shape", "unit"] + list(SHOWN) + ["best/vendor", "verified"]
    if anchor:
        header += ["flash P50 us (attnprof / PyTorch's own timing)"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    ratios = {"prefill": [], "decode": []}
    for key, kernels in groups.items():
        s = next(iter(kernels.values()))["shape"]
        decode = s["seq_q"] <= 16
        cells = [label(s), "TB/s" if decode else "TFLOP/s"]
        for k in SHOWN:
            r = kernels.get(k)
            if r is None:
                cells.append("")
                continue
            f = figure(r, decode)
            cells.append(f"{f:.2f}" if decode and f is not None else f"{f:.0f}" if f is not None else r["status"])
        ours = [figure(kernels[k], decode) for k in OURS if k in kernels]
        vendor = [figure(kernels[k], decode) for k in VENDORS if k in kernels]
        ours = [x for x in ours if x]
        vendor = [x for x in vendor if x]
        if ours and vendor:
            ratio = max(ours) / max(vendor)
            ratios["decode" if decode else "prefill"].append(ratio)
            cells.append(f"{ratio:.2f}")
        else:
            cells.append("-")
        ok = [r for r in kernels.values() if r["status"] == "ok"]
        cells.append(f"{sum(r['verification']['passed'] for r in ok)}/{len(ok)}")
        if anchor:
            mine = kernels.get("torch:flash")
            theirs = anchor.get(key)
            cells.append(f"{mine['latency']['p50_us']:.1f} / {theirs:.1f}" if mine and mine["status"] == "ok" and theirs
                         else "-")
        print("| " + " | ".join(cells) + " |")
    print()
    recs = [r for r in res["records"] if r["status"] == "ok"]
    counters = {}
    modes = {}
    for r in recs:
        counters.setdefault(r["kernel"], []).append(r.get("counters", {}).get("status") == "ok")
        modes.setdefault(r["kernel"], set()).add(r.get("timing_mode", "?"))
    print("- counters ok: " + ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in counters.items()))
    print("- timing modes: " + ", ".join(f"{k} {'/'.join(sorted(v))}" for k, v in modes.items()))
    graphs = {}
    for r in recs:
        if r.get("launches") and "from_graph" in r["launches"][0]:
            graphs.setdefault(r["kernel"], []).append(all(l["from_graph"] for l in r["launches"]))
    if graphs:
        print("- every launch from a CUDA graph's replay: " +
              ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in graphs.items()))
    for kind, values in ratios.items():
        if values:
            print(f"- {kind}: best attnprof kernel / faster of torch:flash and torch:cudnn: "
                  f"{min(values):.2f}-{max(values):.2f}x over {len(values)} shapes "
                  f"(geometric mean {math.exp(sum(map(math.log, values)) / len(values)):.2f}x)")


if __name__ == "__main__":
    main()
