#!/usr/bin/env python3
"""PyTorch's FlashAttention-2 at the fa-bench points, timed three ways, for `h200.sh flash-pair`.

usage: python3 flash_pair.py OUT.json HDIMS [STYLES]   (HDIMS: comma-separated, e.g. 64,128;
                                                       STYLES: a subset of anchor,steady,grid; all by default)

Every point (bf16/fp16, seq 1024-16384, causal or not; batch*seq = 16384, model dim 2048) is timed:
  anchor  as sdpa_anchor.py does: inputs from torch.randn, 5 calls, then the median of 30 calls;
  steady  like attnprof's default sampling: 0.2 s of untimed calls, then the median of the calls of at
          least 0.25 s (30 or more), so that the GPU's power manager has settled on its clock;
  grid    steady, on inputs from attnprof's value grid (k / 128, k uniform in [-221, 221]: the constants
          of kernels/common/random.hpp) instead of randn: whether the input values themselves (through
          the power they draw) move the result.
Each figure comes with the SM clock NVML reported right after the timed calls, when NVML is there.
"""
import json
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def sm_clock_mhz():
    try:
        return torch.cuda.clock_rate()
    except Exception:  # no pynvml on this machine
        return None


def timed_calls(fn, count):
    times = []
    for _ in range(count):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(); fn(); end.record(); end.synchronize()
        times.append(start.elapsed_time(end))
    return times


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def anchor_ms(fn):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    return median(timed_calls(fn, 30))


def steady_ms(fn, warm_s=0.2, min_s=0.25, min_calls=30):
    end = time.perf_counter() + warm_s
    while time.perf_counter() < end:
        fn()
    torch.cuda.synchronize()
    times, start = [], time.perf_counter()
    while len(times) < min_calls or time.perf_counter() - start < min_s:
        times += timed_calls(fn, 10)
    return median(times)


def main():
    # style: (inputs, timer)
    timings = {"anchor": ("randn", anchor_ms), "steady": ("randn", steady_ms), "grid": ("grid", steady_ms)}
    args = sys.argv[1:]
    usage = "usage: flash_pair.py OUT.json HDIMS [STYLES] (e.g. 64,128 anchor,grid)"
    if len(args) not in (2, 3) or not all(x.isdigit() for x in args[1].split(",")):
        sys.exit(usage)
    out, hdims = args[0], [int(x) for x in args[1].split(",")]
    wanted = args[2].split(",") if len(args) == 3 else list(timings)
    if not set(wanted) <= set(timings):
        sys.exit(usage)
    styles = [s for s in timings if s in wanted]
    rows = []
    for dtype in (torch.bfloat16, torch.float16):
        for d in hdims:
            for causal in (False, True):
                for n in (1024, 2048, 4096, 8192, 16384):
                    b, h = 16384 // n, 2048 // d
                    flops = 4 * b * h * n * n * d / (2 if causal else 1)
                    row = dict(dtype={torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype], hdim=d, seq=n,
                               causal=causal)
                    make = {
                        "randn": lambda: [torch.randn(b, h, n, d, device="cuda", dtype=dtype) for _ in range(3)],
                        "grid": lambda: [(torch.randint(-221, 222, (b, h, n, d), device="cuda") / 128).to(dtype)
                                         for _ in range(3)],
                    }
                    inputs = {}  # only the input sets the chosen styles time
                    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                        for name in styles:
                            source, timer = timings[name]
                            if source not in inputs:
                                inputs[source] = make[source]()
                            q, k, v = inputs[source]
                            ms = timer(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
                            row[name + "_tflops"] = round(flops / ms / 1e9, 1)
                            row[name + "_sm_mhz"] = sm_clock_mhz()
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    del inputs
                    torch.cuda.empty_cache()
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
