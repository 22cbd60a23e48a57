"""Python callables for the bridge's CPU test: a correct numpy attention and ones that misbehave."""
import numpy as np


def attention(q, k, v, *, causal, scale):
    """O = softmax(scale * QK^T) V with attnprof's bottom-right causal mask, in float64, as float32."""
    _, heads, seq_q, _ = q.shape
    group = heads // k.shape[1]
    k = np.repeat(k.astype(np.float64), group, axis=1)
    v = np.repeat(v.astype(np.float64), group, axis=1)
    s = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k) * scale
    seq_k = k.shape[2]
    if causal:
        visible = np.arange(seq_k)[None, :] <= np.arange(seq_q)[:, None] + (seq_k - seq_q)
        s = np.where(visible, s, -np.inf)
    row_max = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isfinite(row_max), row_max, 0.0))
    total = p.sum(axis=-1, keepdims=True)
    o = np.einsum("bhqk,bhkd->bhqd", p, v) / np.where(total > 0, total, 1.0)
    return o.astype(np.float32)


def raises(q, k, v, **_):
    raise ValueError("the callable raised on purpose")


def wrong_shape(q, k, v, **kw):
    return attention(q, k, v, **kw)[:, :, :1]


def wrong_dtype(q, k, v, **kw):
    return attention(q, k, v, **kw).astype(np.float64)


def wrong_numbers(q, k, v, **kw):
    return attention(q, k, v, **kw) + np.float32(0.5)
