#!/usr/bin/env python3
"""PyTorch's SDPA backends timed on their own, as attnprof times a point: the anchor that attnprof's
side-by-side figures are checked against (docs/PERFORMANCE.md).

usage: python3 scripts/device/anchor.py fa-bench [--seqs 512,...] [--hdims 64,128] [--dtypes bf16,fp16]
                                                [options] --out ANCHOR.json
       python3 scripts/device/anchor.py shapes SHAPES.json|RESULTS.json [options] --out ANCHOR.json
options: --backends flash,cudnn,efficient,naive  --inputs grid|randn  --warm  --list
         --warmup-calls 3 --warmup-seconds 0.6 --min-seconds 0.25 --max-seconds 1 --min-samples 10
         --samples N (exactly N samples after the warm-up, instead of the stop rule)

Shapes. `fa-bench` is attnprof's preset of that name (batch x seq = 16384 tokens, model dim 2048,
heads = 2048 / hdim, seq 512-16384). `shapes` takes a list of shape objects as attnprof's results write
them ({"batch", "heads", "kv_heads", "seq_q", "seq_k", "hdim", "causal", "dtype"}), a {"shapes": [...]}
spec file, or an attnprof results.json (each record's shape, once): decode rows and grouped-query heads
included.

Semantics are attnprof's (kernels/python/attnprof_py.py does the same for the torch: kernels): the
softmax scale is 1/sqrt(hdim); causal is bottom-right aligned, which is PyTorch's is_causal when
seq_q == seq_k, no mask with one query row, and a lower-right causal bias otherwise; causal with
seq_q > seq_k (rows that see no key) is refused; kv_heads < heads uses enable_gqa. `naive` is the
unfused computation (QK^T, softmax in fp32, PV, the scores in memory), the counterpart of attnprof's
`reference` kernel.

Timing is attnprof's cold sampling (docs/measurement.md): inputs from attnprof's value grid (k / 128, k
uniform in [-221, 221], kernels/common/random.hpp; --inputs randn for torch.randn); untimed warm-up
calls for --warmup-seconds (at least --warmup-calls); then samples, each an L2 flush (a read of a buffer twice
the L2 size, which writes back what the previous call left dirty; --warm skips it) and one call between
CUDA events, until --min-seconds and --min-samples are reached and the 95% interval of the median from
10 batch medians is within 0.5% of it, or --max-seconds have passed. The statistic is the P50 (the
median, interpolated as numpy's default). attnprof also replays calls under 20 us from a CUDA graph;
this script times every call with events, so such calls read up to a few microseconds slower here.

Output: one JSON row per shape, printed as it is measured and written as a list to --out: the shape
(with `seq` = seq_q), and per backend `<backend>_ms` (P50), `<backend>_tflops` (FLOPs 4*B*H*Sq*Sk*D,
halved when causal, as attnprof's cost model), `<backend>_samples`, or null with `<backend>_err`.
scripts/perf_table.py and scripts/gap_table.py read these files.
"""
import argparse
import json
import math
import re
import statistics
import sys
import time
import warnings

FA_BENCH_TOKENS = 16384
FA_BENCH_MODEL_DIM = 2048
FA_BENCH_SEQS = (512, 1024, 2048, 4096, 8192, 16384)
BACKENDS = ("flash", "cudnn", "efficient", "naive")
DTYPES = ("bf16", "fp16")
# attnprof's input values (kernels/common/random.hpp): k * kInputStep, k uniform in [-221, 221].
INPUT_HALF_RANGE = 221
INPUT_STEP = 1.0 / 128.0
# Sampling stop rule, as attnprof's (src/core/stats.hpp): 10 batch medians, 95% interval within 0.5%.
CI_BATCHES = 10
MIN_SAMPLES_PER_BATCH = 3
TARGET_REL_CI = 0.005
T_975_DF9 = 2.2621571627409915  # Student's t, 97.5th percentile, 9 degrees of freedom
# naive materialises S (fp32) and P: refused above this many bytes of S.
NAIVE_MAX_SCORE_BYTES = 8 << 30


class Unsupported(Exception):
    """This backend does not run the shape (PyTorch's reason, or attnprof's semantics)."""


# ---- shapes (no torch) --------------------------------------------------------------------------------

def normalise(shape):
    """A shape in attnprof's field names and types; `seq` stands for seq_q = seq_k."""
    s = dict(shape)
    seq_q = int(s.get("seq_q", s.get("seq", 0)))
    out = {
        "batch": int(s["batch"]),
        "heads": int(s["heads"]),
        "kv_heads": int(s.get("kv_heads", s["heads"])),
        "seq_q": seq_q,
        "seq_k": int(s.get("seq_k", seq_q)),
        "hdim": int(s["hdim"]),
        "causal": bool(s.get("causal", False)),
        "dtype": {"bfloat16": "bf16", "float16": "fp16"}.get(s["dtype"], s["dtype"]),
    }
    if min(out["batch"], out["heads"], out["kv_heads"], out["seq_q"], out["seq_k"], out["hdim"]) <= 0:
        raise ValueError(f"shape with a non-positive extent: {shape}")
    if out["heads"] % out["kv_heads"]:
        raise ValueError(f"heads {out['heads']} is not a multiple of kv_heads {out['kv_heads']}")
    if out["dtype"] not in DTYPES:
        raise ValueError(f"dtype {out['dtype']!r}: anchor.py times {', '.join(DTYPES)}")
    return out


def fa_bench_shapes(seqs=FA_BENCH_SEQS, hdims=(64, 128), dtypes=DTYPES):
    """attnprof's fa-bench preset, in its order: dtype, hdim, causal, seq."""
    shapes = []
    for dtype in dtypes:
        for hdim in hdims:
            for causal in (False, True):
                for seq in seqs:
                    shapes.append(normalise({"batch": max(1, FA_BENCH_TOKENS // seq), "heads": FA_BENCH_MODEL_DIM // hdim,
                                             "seq": seq, "hdim": hdim, "causal": causal, "dtype": dtype}))
    return shapes


def load_shapes(doc):
    """Shapes from a list of shapes, a {"shapes": [...]} spec file or a results document; each once."""
    if isinstance(doc, dict) and "records" in doc:
        items = [r["shape"] for r in doc["records"]]
    elif isinstance(doc, dict) and "shapes" in doc:
        items = doc["shapes"]
    elif isinstance(doc, list):
        items = doc
    else:
        raise ValueError("expected a list of shapes, {\"shapes\": [...]} or an attnprof results.json")
    seen, shapes = set(), []
    for item in items:
        s = normalise(item)
        key = json.dumps(s, sort_keys=True)
        if key not in seen:
            seen.add(key)
            shapes.append(s)
    return shapes


def mask_plan(shape):
    """How attnprof's bottom-right causal mask is asked of PyTorch: "none", "is_causal" or "lower_right"."""
    if not shape["causal"]:
        return "none"
    sq, sk = shape["seq_q"], shape["seq_k"]
    if sq > sk:
        raise Unsupported(f"causal with seq_q {sq} > seq_k {sk}: rows that see no key, which PyTorch does not define")
    if sq == sk:
        return "is_causal"
    if sq == 1:
        return "none"  # the one row sees every key
    return "lower_right"


def flops(shape):
    """attnprof's cost model: two GEMMs of 2*Sq*Sk*D per (batch, head), halved when causal."""
    dense = 4.0 * shape["batch"] * shape["heads"] * shape["seq_q"] * shape["seq_k"] * shape["hdim"]
    return dense / 2 if shape["causal"] else dense


def naive_refusal(shape):
    """Why `naive` does not run the shape (its fp32 scores would not fit), or ""."""
    score_bytes = 4 * shape["batch"] * shape["heads"] * shape["seq_q"] * shape["seq_k"]
    if score_bytes > NAIVE_MAX_SCORE_BYTES:
        return f"S would take {score_bytes / 2**30:.1f} GiB (naive stops at {NAIVE_MAX_SCORE_BYTES / 2**30:.0f} GiB)"
    return ""


def refusal_reason(error, warning_messages):
    """One line: PyTorch's reasons (its warnings, without C++ source locations), then the error."""
    parts = [re.sub(r"\(Triggered internally at [^)]*\)\.?", "", str(m)) for m in warning_messages]
    parts.append(str(error))
    return " ".join(" ".join(parts).split())[:400]


# ---- statistics (no torch) ----------------------------------------------------------------------------

def p50(samples):
    """The median, interpolated between the middle two (numpy's default, attnprof's core::median)."""
    return statistics.median(samples)


def batch_median_half_width(samples_in_order, batches=CI_BATCHES):
    """Half-width of the 95% interval of the median from `batches` contiguous batch medians."""
    per = len(samples_in_order) // batches
    if per < 1:
        return math.inf
    meds = [statistics.median(samples_in_order[i * per:(i + 1) * per]) for i in range(batches)]
    return T_975_DF9 * statistics.stdev(meds) / math.sqrt(batches)


def converged(samples_in_order, target_rel_ci=TARGET_REL_CI):
    """Whether the median's interval is within target_rel_ci of it (from 30 samples on)."""
    if len(samples_in_order) < CI_BATCHES * MIN_SAMPLES_PER_BATCH:
        return False
    return batch_median_half_width(samples_in_order) <= target_rel_ci * p50(samples_in_order)


def stop_sampling(samples_in_order, elapsed_s, min_samples, min_seconds, max_seconds):
    """attnprof's stop rule: the time budget, or the minimum time and count reached and converged."""
    if elapsed_s >= max_seconds:
        return True
    return len(samples_in_order) >= min_samples and elapsed_s >= min_seconds and converged(samples_in_order)


def row_for(shape, timings):
    """One output row: the shape (and `seq`), per backend P50 ms, TFLOP/s and sample count or the error.
    timings: {backend: list of sample ms, or an error string}."""
    row = dict(shape)
    row["seq"] = shape["seq_q"]
    for backend, got in timings.items():
        if isinstance(got, str):
            row.update({backend + "_ms": None, backend + "_tflops": None, backend + "_err": got})
            continue
        ms = p50(got)
        row.update({backend + "_ms": round(ms, 6), backend + "_tflops": round(flops(shape) / (ms * 1e-3) / 1e12, 2),
                    backend + "_samples": len(got)})
    return row


# ---- timing (torch) -----------------------------------------------------------------------------------

def make_inputs(shape, inputs, torch):
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[shape["dtype"]]
    b, h, kvh, sq, sk, d = (shape[k] for k in ("batch", "heads", "kv_heads", "seq_q", "seq_k", "hdim"))

    def one(heads, seq):
        if inputs == "randn":
            return torch.randn(b, heads, seq, d, device="cuda", dtype=dtype)
        k = torch.randint(-INPUT_HALF_RANGE, INPUT_HALF_RANGE + 1, (b, heads, seq, d), device="cuda")
        return (k * INPUT_STEP).to(dtype)

    return one(h, sq), one(kvh, sk), one(kvh, sk)


def make_call(backend, shape, q, k, v, torch):
    """A no-argument function that runs one attention call of `backend`; raises Unsupported."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    plan = mask_plan(shape)
    scale = 1.0 / math.sqrt(shape["hdim"])
    gqa = shape["heads"] != shape["kv_heads"]
    if backend == "naive":
        why = naive_refusal(shape)
        if why:
            raise Unsupported(why)
        group = shape["heads"] // shape["kv_heads"]
        kk, vv = (k, v) if group == 1 else (k.repeat_interleave(group, 1), v.repeat_interleave(group, 1))
        keep = None
        if plan != "none":
            i = torch.arange(shape["seq_q"], device="cuda")[:, None]
            j = torch.arange(shape["seq_k"], device="cuda")[None, :]
            keep = j <= i + (shape["seq_k"] - shape["seq_q"])

        def naive():
            s = torch.matmul(q, kk.transpose(-1, -2)).float() * scale
            if keep is not None:
                s = s.masked_fill(~keep, float("-inf"))
            return torch.matmul(torch.softmax(s, dim=-1).to(q.dtype), vv)

        return naive
    which = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
             "efficient": SDPBackend.EFFICIENT_ATTENTION}[backend]
    kwargs = {"scale": scale, "enable_gqa": gqa}
    if plan == "is_causal":
        kwargs["is_causal"] = True
    elif plan == "lower_right":
        from torch.nn.attention.bias import causal_lower_right
        kwargs["attn_mask"] = causal_lower_right(shape["seq_q"], shape["seq_k"])

    def sdpa():
        with sdpa_kernel([which]):
            return F.scaled_dot_product_attention(q, k, v, **kwargs)

    # A refusal surfaces here: a RuntimeError ("No available kernel"), PyTorch's reasons in warnings.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            sdpa()
            torch.cuda.synchronize()
        except RuntimeError as e:
            raise Unsupported(refusal_reason(e, [w.message for w in caught])) from None
    return sdpa


class Flusher:
    """attnprof's cold L2: a read of twice the L2 size before each sample, which writes back every line
    the previous call dirtied, so that the call starts from DRAM."""

    def __init__(self, torch):
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or (128 << 20)
        self.buffer = torch.ones(2 * l2 // 4, dtype=torch.int32, device="cuda")

    def __call__(self):
        self.buffer.sum()


def sample_ms(call, flush, args, torch):
    """Warm up, then sample until attnprof's stop rule holds; the samples in order [ms]."""
    start = time.perf_counter()
    calls = 0
    while calls < args.warmup_calls or time.perf_counter() - start < args.warmup_seconds:
        flush()
        call()
        calls += 1
    torch.cuda.synchronize()
    samples, start = [], time.perf_counter()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    next_check = 0  # the interval is asked for when the samples have grown by 10%: O(n log n) in all
    while (len(samples) < args.samples) if args.samples else time.perf_counter() - start < args.max_seconds:
        if not args.samples and len(samples) >= next_check:
            if stop_sampling(samples, time.perf_counter() - start, args.min_samples, args.min_seconds,
                             args.max_seconds):
                break
            next_check = max(len(samples) + 10, int(len(samples) * 1.1))
        flush()
        begin.record()
        call()
        end.record()
        end.synchronize()
        samples.append(begin.elapsed_time(end))
    return samples


def measure(shape, args, flush, torch):
    q, k, v = make_inputs(shape, args.inputs, torch)
    timings = {}
    for backend in args.backends:
        try:
            timings[backend] = sample_ms(make_call(backend, shape, q, k, v, torch), flush, args, torch)
        except Unsupported as e:
            timings[backend] = str(e)
        except torch.cuda.OutOfMemoryError:
            timings[backend] = "out of memory"
            torch.cuda.empty_cache()
    del q, k, v
    torch.cuda.empty_cache()
    return row_for(shape, timings)


# ---- command line -------------------------------------------------------------------------------------

def int_list(text):
    return [int(x) for x in text.split(",") if x]


def build_parser():
    ap = argparse.ArgumentParser(prog="anchor.py", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    fa = sub.add_parser("fa-bench", help="attnprof's fa-bench preset")
    fa.add_argument("--seqs", type=int_list, default=list(FA_BENCH_SEQS))
    fa.add_argument("--hdims", type=int_list, default=[64, 128])
    fa.add_argument("--dtypes", type=lambda t: t.split(","), default=list(DTYPES))
    sh = sub.add_parser("shapes", help="the shapes of a JSON file (shapes, spec file or results)")
    sh.add_argument("shapes_file")
    for p in (fa, sh):
        p.add_argument("--out", help="the rows as one JSON list (required unless --list)")
        p.add_argument("--backends", type=lambda t: t.split(","), default=list(BACKENDS))
        p.add_argument("--inputs", choices=("grid", "randn"), default="grid")
        p.add_argument("--warm", action="store_true", help="no L2 flush before each sample")
        p.add_argument("--warmup-calls", type=int, default=3)
        p.add_argument("--warmup-seconds", type=float, default=0.6)
        p.add_argument("--min-seconds", type=float, default=0.25)
        p.add_argument("--max-seconds", type=float, default=1.0)
        p.add_argument("--min-samples", type=int, default=10)
        p.add_argument("--samples", type=int, default=0, help="exactly this many samples (no stop rule)")
        p.add_argument("--list", action="store_true", help="print the shapes and exit (no GPU, no torch)")
    return ap


def parse_args(argv):
    ap = build_parser()
    args = ap.parse_args(argv)
    bad = sorted(set(args.backends) - set(BACKENDS))
    if bad:
        ap.error(f"unknown backend {', '.join(bad)} (known: {', '.join(BACKENDS)})")
    if not args.list and not args.out:
        ap.error("--out is required")
    if args.mode == "fa-bench":
        args.shapes = fa_bench_shapes(args.seqs, args.hdims, args.dtypes)
    else:
        with open(args.shapes_file) as f:
            args.shapes = load_shapes(json.load(f))
    return args


def main(argv=None):
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except (OSError, ValueError, KeyError) as e:
        print(f"anchor.py: {e}", file=sys.stderr)
        return 2
    if args.list:
        for s in args.shapes:
            print(json.dumps(s))
        return 0
    import torch

    if not torch.cuda.is_available():
        print("anchor.py: no CUDA device", file=sys.stderr)
        return 4
    flush = (lambda: None) if args.warm else Flusher(torch)
    rows = []
    for shape in args.shapes:
        rows.append(measure(shape, args, flush, torch))
        print(json.dumps(rows[-1]), flush=True)
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
