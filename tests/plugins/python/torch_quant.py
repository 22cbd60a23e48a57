"""A PyTorch callable for the bridge's GPU test: attention that also reads a quantized KV cache, given as
attnprof stores it (torch.float8_e4m3fn or torch.int8 bytes, float32 scales that broadcast against them)."""
import torch
import torch.nn.functional as F


def attention(q, k, v, *, causal, scale, k_scale=None, v_scale=None):
    """O in q's dtype, computed in fp32; K and V dequantized with their scales when given them.
    is_causal is attnprof's mask for seq_q == seq_k, the shapes the test sweeps."""
    if k_scale is not None:
        for x, s in ((k, k_scale), (v, v_scale)):
            if x.dtype not in (torch.float8_e4m3fn, torch.int8) or s.dtype != torch.float32:
                raise TypeError(f"a quantized K or V as {x.dtype} with {s.dtype} scales")
        k, v = k.float() * k_scale, v.float() * v_scale
    o = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal, scale=scale,
                                       enable_gqa=q.shape[1] != k.shape[1])
    return o.to(q.dtype)
