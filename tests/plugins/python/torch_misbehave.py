"""PyTorch callables that break the rules of the timed region, for the bridge's GPU test."""
import torch
import torch.nn.functional as F

_kept = []


def _sdpa(q, k, v, causal, scale):
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=q.shape[1] != k.shape[1])


def attention(q, k, v, *, causal, scale):
    return _sdpa(q, k, v, causal, scale)


def synchronizes(q, k, v, *, causal, scale):
    out = _sdpa(q, k, v, causal, scale)
    torch.cuda.synchronize()
    return out


def allocates(q, k, v, *, causal, scale):
    _kept.append(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"))  # 64 MiB more, every call
    return _sdpa(q, k, v, causal, scale)


def no_graph(q, k, v, *, causal, scale):
    """A forward whose output has no autograd graph (computed under torch.no_grad): no backward."""
    with torch.no_grad():
        return _sdpa(q, k, v, causal, scale)
