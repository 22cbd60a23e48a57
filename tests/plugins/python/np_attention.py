"""Python callables for the bridge's CPU test: a correct numpy attention and ones that misbehave."""
import numpy as np


def _probabilities(q, k, causal, scale):
    """P = softmax(scale * QK^T) under attnprof's bottom-right causal mask in float64, K repeated to the
    query heads; a row that sees no key is all zero."""
    _, heads, seq_q, _ = q.shape
    k = np.repeat(k.astype(np.float64), heads // k.shape[1], axis=1)
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k) * scale
    seq_k = k.shape[2]
    if causal:
        visible = np.arange(seq_k)[None, :] <= np.arange(seq_q)[:, None] + (seq_k - seq_q)
        s = np.where(visible, s, -np.inf)
    row_max = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isfinite(row_max), row_max, 0.0))
    total = p.sum(axis=-1, keepdims=True)
    return p / np.where(total > 0, total, 1.0)


def attention(q, k, v, *, causal, scale):
    """O = softmax(scale * QK^T) V with attnprof's bottom-right causal mask, in float64, as float32."""
    v = np.repeat(v.astype(np.float64), q.shape[1] // v.shape[1], axis=1)
    return np.einsum("bhqk,bhkd->bhqd", _probabilities(q, k, causal, scale), v).astype(np.float32)


def attention_backward(q, k, v, o, d_o, *, causal, scale):
    """dQ, dK and dV of attention() with D = rowsum(dO * O), in float64, as float32; dK and dV summed
    over each group's query heads."""
    batch, heads, _, _ = q.shape
    kv_heads, seq_k = k.shape[1], k.shape[2]
    group = heads // kv_heads
    p = _probabilities(q, k, causal, scale)
    k64 = np.repeat(k.astype(np.float64), group, axis=1)
    v64 = np.repeat(v.astype(np.float64), group, axis=1)
    d_o = d_o.astype(np.float64)
    ds = p * (np.einsum("bhqd,bhkd->bhqk", d_o, v64) - (d_o * o.astype(np.float64)).sum(axis=-1, keepdims=True))
    dq = np.einsum("bhqk,bhkd->bhqd", ds, k64) * scale
    dk = np.einsum("bhqk,bhqd->bhkd", ds, q.astype(np.float64)) * scale
    dv = np.einsum("bhqk,bhqd->bhkd", p, d_o)
    per_kv_head = lambda x: x.reshape(batch, kv_heads, group, seq_k, x.shape[-1]).sum(axis=2)
    return dq.astype(np.float32), per_kv_head(dk).astype(np.float32), per_kv_head(dv).astype(np.float32)


attention.backward = attention_backward


def wrong_dv(q, k, v, **kw):
    """A correct forward whose backward's dV is wrong on purpose."""
    return attention(q, k, v, **kw)


def _wrong_dv_backward(*args, **kw):
    dq, dk, dv = attention_backward(*args, **kw)
    return dq, dk, dv + np.float32(0.5)


wrong_dv.backward = _wrong_dv_backward


def short_dq(q, k, v, **kw):
    """A backward that returns dQ of one query row."""
    return attention(q, k, v, **kw)


short_dq.backward = lambda *args, **kw: (attention_backward(*args, **kw)[0][:, :, :1],) + attention_backward(*args, **kw)[1:]


def raises(q, k, v, **_):
    raise ValueError("the callable raised on purpose")


def wrong_shape(q, k, v, **kw):
    return attention(q, k, v, **kw)[:, :, :1]


def wrong_dtype(q, k, v, **kw):
    return attention(q, k, v, **kw).astype(np.float64)


def wrong_numbers(q, k, v, **kw):
    return attention(q, k, v, **kw) + np.float32(0.5)


def _e4m3_values():
    """The value of each OCP FP8 E4M3 byte: sign, 4 exponent bits (bias 7), 3 mantissa bits; 0x7F/0xFF NaN."""
    codes = np.arange(256)
    exponent, mantissa = (codes >> 3) & 0xF, codes & 0x7
    magnitude = np.where(exponent == 0, mantissa * 2.0**-9, (1.0 + mantissa / 8.0) * 2.0 ** (exponent - 7.0))
    magnitude = np.where((exponent == 0xF) & (mantissa == 0x7), np.nan, magnitude)
    return np.where(codes & 0x80, -magnitude, magnitude)


_E4M3 = _e4m3_values()


def dequantize(x, scale=None):
    """A quantized tensor's values: uint8 arrays hold E4M3 bytes, int8 arrays int8 codes; times `scale`,
    which broadcasts against x."""
    values = _E4M3[x] if x.dtype == np.uint8 else x.astype(np.float64)
    return values if scale is None else values * scale


def quantized(q, k, v, *, causal, scale, k_scale=None, v_scale=None):
    """Any point: a quantized KV cache's K and V (given with their scales) dequantized, else as they are."""
    if k_scale is not None:
        k, v = dequantize(k, k_scale), dequantize(v, v_scale)
    return attention(q, k, v, causal=causal, scale=scale)


def ignores_scales(q, k, v, *, causal, scale, k_scale=None, v_scale=None):
    """Wrong on purpose: reads the codes of a quantized K and V but not their scales."""
    if k_scale is not None:
        k, v = dequantize(k), dequantize(v)
    return attention(q, k, v, causal=causal, scale=scale)


def fp8(q, k, v, *, causal, scale, q_scale, k_scale, v_scale):
    """fp8 prefill: Q, K and V E4M3 bytes, each with its one scale."""
    return attention(dequantize(q, q_scale), dequantize(k, k_scale), dequantize(v, v_scale), causal=causal, scale=scale)
