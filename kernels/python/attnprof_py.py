"""The Python side of attnprof's Python bridge (kernels/python/bridge.cpp, docs/python.md).

The bridge embeds CPython in an attnprof plugin and calls this module: `supports` to ask whether a
kernel runs a shape, `prepare` to wrap attnprof's buffers as tensors without a copy and make one call
ready (imports, JIT, a first untimed call), then the returned object's `launch(stream)` for every call
and `write_output(stream)` once, after the call attnprof verifies (stream: attnprof's CUstream, as an
integer; PyTorch's current stream while the call runs).

Kernels:
  torch:flash, torch:cudnn, torch:efficient, torch:math
      PyTorch's scaled_dot_product_attention pinned to one backend, with attnprof's semantics: causal
      is bottom-right (PyTorch's is_causal is top-left when seq_q != seq_k, so a lower-right causal
      bias is used there), grouped-query attention through enable_gqa, and a backend that refuses a
      shape gives "unsupported" with PyTorch's own reasons. Each prepared forward call is captured
      once as a CUDA graph (torch.cuda.graph) and every timed call replays it, so Python and PyTorch's
      dispatch are not on the host path of the timed calls; where capture fails the call runs eagerly
      (ATTNPROF_PY_GRAPHS=0 turns capture off, "all" captures backward calls too: _captures).
      Backward points (shape["pass"] "bwd" or "fwd_bwd") differentiate on attnprof's buffers: for
      "bwd", prepare runs the forward once with Q, K and V requiring gradients, and every call runs
      that output's autograd nodes with dO (the graph kept), so only the backward's kernels run in a
      call; "fwd_bwd" runs both in each call. The nodes are called on the bridge's own thread and
      stream (_grad_here), not through torch.autograd.grad, whose CUDA work runs on autograd's device
      thread. write_output copies dQ, dK and dV (and O).
      They take no quantized input: attnprof never gives them a quantized KV cache or an fp8 point.
  py:MODULE:FUNCTION
      any callable FUNCTION(q, k, v, causal=bool, scale=float) returning O of shape
      [batch, heads, seq_q, hdim_v]: torch tensors on the CUDA backend (on attnprof's stream, which is
      PyTorch's current stream during the call), float32 numpy arrays on the CPU backend.
      A callable declares that it reads a quantized KV cache (shape["kv_dtype"] "fp8_e4m3" or "int8")
      by taking keyword parameters k_scale and v_scale, and that it runs fp8 prefill (shape["dtype"]
      "fp8_e4m3") by taking q_scale too; at those points alone it is called with them (defaults let it
      run the other points too), and K and V (and Q) are the bytes attnprof stores: torch.float8_e4m3fn
      or torch.int8 tensors on CUDA, uint8 (the E4M3 bits) or int8 numpy arrays on the CPU. Each scale
      is a float32 tensor that broadcasts against its tensor:
      [1, 1, 1, 1] per tensor, [1, kv_heads, 1, 1] per kv head, [batch, kv_heads, seq_k, 1] per token
      (shape["kv_scale"]), so k.float() * k_scale is K. O is bf16 at an fp8 point on CUDA. A callable
      without those parameters gets such points "unsupported".
      Backward points: a callable with a `backward` attribute is called as FUNCTION.backward(q, k, v, o,
      d_o, causal=bool, scale=float) and returns (dQ, dK, dV) shaped as q, k and v (dK and dV summed
      over each group's query heads); on the CUDA backend a callable without one is differentiated
      through autograd as the torch: kernels are, when its output has an autograd graph (a Triton or
      CUDA kernel in a torch.autograd.Function, or PyTorch operations). Otherwise its backward points
      are "unsupported" with the reason. A "bwd" call gets O from the callable's own forward (attnprof
      ran it); a "fwd_bwd" call runs FUNCTION, then its backward on that O.

The shape `prepare` gets holds hdim_v, the width of V's and O's rows (hdim unless the point has a value
head dim of its own, as DeepSeek's MLA prefill: hdim 192, hdim_v 128); `supports` is not told it.
PyTorch's flash backend refuses differing head dims: that refusal is the point's "unsupported".
"""
import ctypes
import importlib
import inspect
import math
import os
import sys
import warnings


class Unsupported(Exception):
    """Raised by prepare when the kernel cannot run the shape: the point becomes "unsupported"."""


_TORCH_BACKENDS = ("flash", "cudnn", "efficient", "math")
_MAX_GROWING_CALLS = 4
# bf16: int16 viewed as bfloat16 afterwards; fp8_e4m3: its bytes, viewed as float8_e4m3fn in torch.
_TYPESTR = {"fp32": "<f4", "fp16": "<f2", "bf16": "<i2", "fp8_e4m3": "|u1", "int8": "|i1"}
_ITEMSIZE = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8_e4m3": 1, "int8": 1}
_CTYPE = {"fp32": ctypes.c_float, "fp8_e4m3": ctypes.c_uint8, "int8": ctypes.c_int8}  # the CPU backend's


def _clean_warning(message):
    """PyTorch's refusal warnings as one line, without the C++ source locations."""
    import re

    text = re.sub(r"\(Triggered internally at [^)]*\)\.?", "", str(message))
    return " ".join(text.split()).rstrip(" .:")


def _describe(exc):
    return f"{type(exc).__name__}: {exc}".replace("\n", " ").strip()


# ---------------------------------------------------------------------------------------------- #
# Buffers as tensors, without copies.

class _CudaArray:
    """An object with __cuda_array_interface__ over attnprof's device memory, for torch.as_tensor."""

    def __init__(self, ptr, shape, strides, dtype):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape),
            "typestr": _TYPESTR[dtype],
            "data": (ptr, False),
            "strides": tuple(s * _ITEMSIZE[dtype] for s in strides),
            "version": 3,
            "stream": None,  # attnprof orders its own stream
        }


def _torch_tensor(desc, dtype):
    import torch

    t = torch.as_tensor(_CudaArray(desc["ptr"], desc["shape"], desc["strides"], dtype), device="cuda")
    if dtype == "bf16":
        t = t.view(torch.bfloat16)
    elif dtype == "fp8_e4m3":
        t = t.view(torch.float8_e4m3fn)
    if t.data_ptr() != desc["ptr"]:
        raise RuntimeError("the tensor does not share attnprof's buffer")
    return t


def _numpy_array(desc, dtype="fp32"):
    import numpy as np

    count = 1 + sum((n - 1) * s for n, s in zip(desc["shape"], desc["strides"]))
    flat = np.ctypeslib.as_array((_CTYPE[dtype] * count).from_address(desc["ptr"]))
    return np.lib.stride_tricks.as_strided(flat, shape=tuple(desc["shape"]),
                                           strides=tuple(_ITEMSIZE[dtype] * s for s in desc["strides"]))


# ---------------------------------------------------------------------------------------------- #
# One prepared call.

class _Call:
    """run() returns one tensor (O) or a tuple of them; `out` is attnprof's buffer, or a tuple of
    buffers (None where the call's result is not copied), matching it."""

    def __init__(self, run, out, backend, graph=None, graph_out=None):
        self._run = run
        self._out = out
        self._backend = backend
        self._last = None
        self._streams = {}
        self._growing = 0
        self._graph = graph          # torch.cuda.CUDAGraph of one call, or None (eager)
        self._graph_out = graph_out  # the graph's output tensor (its memory pool's)

    def _stream(self, handle):
        import torch

        if handle not in self._streams:
            self._streams[handle] = torch.cuda.ExternalStream(handle)
        return self._streams[handle]

    def launch(self, stream):
        if self._backend == "cpu":
            self._last = self._run()
            return
        import torch

        if self._graph is not None:
            with torch.cuda.stream(self._stream(stream)):
                self._graph.replay()
            self._last = self._graph_out
            return
        # PyTorch's caching allocator keeps a pool per stream and may grow it now and then (other
        # points' calls share it in a counter session); a callable that needs new device memory in
        # call after call allocates in the timed region, which is reported.
        with torch.cuda.stream(self._stream(stream)):
            before = torch.cuda.memory_stats().get("segment.all.allocated", 0)
            self._last = self._run()
            grew = torch.cuda.memory_stats().get("segment.all.allocated", 0) != before
        self._growing = self._growing + 1 if grew else 0
        if self._growing >= _MAX_GROWING_CALLS:
            raise RuntimeError(f"the call allocated new device memory in each of {self._growing} calls in a row "
                               "(new allocator segments in the timed region): allocate in prepare")

    def write_output(self, stream):
        if self._last is None:
            raise RuntimeError("no call to copy the output of")
        pairs = zip(self._out, self._last) if isinstance(self._out, tuple) else [(self._out, self._last)]
        if self._backend == "cpu":
            for target, result in pairs:
                if target is not None:
                    target[...] = result
            return
        import torch

        with torch.cuda.stream(self._stream(stream)):
            for target, result in pairs:
                if target is not None:
                    target.copy_(result)


def _check_output(result, expected_shape, expected_dtype, backend, what="[batch, heads, seq_q, hdim_v]",
                  who="the callable"):
    shape = tuple(getattr(result, "shape", ()))
    if shape != tuple(expected_shape):
        raise RuntimeError(f"{who} returned shape {shape}, expected {tuple(expected_shape)} ({what})")
    if backend == "cuda":
        import torch

        want = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[expected_dtype]
        if not isinstance(result, torch.Tensor) or result.dtype != want or not result.is_cuda:
            raise RuntimeError(f"{who} returned {getattr(result, 'dtype', type(result).__name__)} "
                               f"on {getattr(result, 'device', 'the host')}, expected a CUDA {want} tensor")
    else:
        import numpy as np

        if np.asarray(result).dtype != np.float32:
            raise RuntimeError(f"{who} returned {np.asarray(result).dtype}, expected float32")


def _torch_sdpa(which, shape, q, k, v):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
               "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}[which]
    sq, sk = shape["seq_q"], shape["seq_k"]
    kwargs = {"scale": 1.0 / math.sqrt(shape["hdim"]), "enable_gqa": shape["heads"] != shape["kv_heads"]}
    if shape["causal"]:
        if sq > sk:
            raise Unsupported(f"causal with seq_q {sq} > seq_k {sk}: rows that see no key, which PyTorch "
                              "does not define")
        if sq == sk:
            kwargs["is_causal"] = True
        elif sq > 1:  # attnprof's bottom-right mask; with one query row it masks nothing
            from torch.nn.attention.bias import causal_lower_right

            kwargs["attn_mask"] = causal_lower_right(sq, sk)

    def run():
        with sdpa_kernel([backend]):
            return F.scaled_dot_product_attention(q, k, v, **kwargs)

    return run


# ---------------------------------------------------------------------------------------------- #
# What the bridge calls.

def _input_count(node):
    """How many gradients an autograd node takes (its forward's outputs)."""
    metadata = getattr(node, "_input_metadata", None)
    if metadata is None:
        raise RuntimeError("this PyTorch's autograd nodes do not tell their inputs (Node._input_metadata): "
                           "attnprof cannot run their backward on its own thread")
    return len(metadata)


def _grad_here(out, inputs, d_o):
    """The gradients of sum(out * d_o) with respect to `inputs` (leaves), by calling out's autograd nodes
    in dependency order on this thread, on the current stream: torch.autograd.grad would hand CUDA
    nodes to autograd's own device thread, whose kernels attnprof's counter session does not see.
    Saved tensors are kept (a node called directly does not free them), so the same graph can be
    differentiated again."""
    root = out.grad_fn
    if root is None:
        raise RuntimeError("the forward's output does not require gradients")
    # How many edges lead to each node from the root: a node runs once all its gradients have come.
    waiting, stack = {}, [root]
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is None:
                continue
            if nxt not in waiting:  # first reached: walk on from it once
                stack.append(nxt)
            waiting[nxt] = waiting.get(nxt, 0) + 1
    grads = {root: [None] * _input_count(root)}
    grads[root][out.output_nr] = d_o
    ready, leaf_grads = [root], {}
    while ready:
        node = ready.pop()
        args = grads.pop(node)
        if hasattr(node, "variable"):  # AccumulateGrad: a leaf's gradient
            leaf_grads[id(node.variable)] = args[0]
            continue
        outs = node(*args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        for (nxt, slot), g in zip(node.next_functions, outs):
            if nxt is None:
                continue
            pending = grads.setdefault(nxt, [None] * _input_count(nxt))
            if g is not None:
                pending[slot] = g if pending[slot] is None else pending[slot] + g
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                ready.append(nxt)
    return tuple(leaf_grads.get(id(t)) for t in inputs)


def _autograd_backward(name, forward, pass_, q, k, v, d_o):
    """The backward of `forward` (a call over q, k, v, which require gradients) with dO, through its
    output's autograd graph: returns run() -> (O or None, dQ, dK, dV)."""
    inputs = (q, k, v)

    def differentiable(out):
        if getattr(out, "grad_fn", None) is None:
            raise Unsupported(f"{name} has no backward: its output has no autograd graph and the function no "
                              ".backward attribute (docs/python.md)")
        return out

    if pass_ == "bwd":
        graph = []  # the forward's output every call differentiates, made by the first (untimed) call

        def run():
            if not graph:
                graph.append(differentiable(forward()))
            return (None,) + _grad_here(graph[0], inputs, d_o)
    else:
        def run():
            o = differentiable(forward())
            return (o,) + _grad_here(o, inputs, d_o)

    return run


def _explicit_backward(backward, forward, pass_, q, k, v, o, d_o, causal, scale):
    """A callable's own backward: returns run() -> (O or None, dQ, dK, dV). A "bwd" call reads O from
    attnprof's buffer, which the callable's forward filled."""
    def grads(out):
        result = backward(q, k, v, out, d_o, causal=causal, scale=scale)
        if not isinstance(result, (tuple, list)) or len(result) != 3:
            raise RuntimeError(f"the callable's backward returned {type(result).__name__}, expected (dq, dk, dv)")
        return tuple(result)

    if pass_ == "bwd":
        def run():
            return (None,) + grads(o)
    else:
        def run():
            out = forward()
            return (out,) + grads(out)

    return run


def _split(name):
    if name.startswith("torch:"):
        which = name[len("torch:"):]
        if which not in _TORCH_BACKENDS:
            raise ValueError(f"unknown PyTorch backend '{which}' (torch:flash, torch:cudnn, torch:efficient, torch:math)")
        return "torch", which, None
    if name.startswith("py:"):
        parts = name.split(":")
        if len(parts) != 3 or not parts[1] or not parts[2]:
            raise ValueError(f"'{name}' is not py:MODULE:FUNCTION")
        return "py", parts[1], parts[2]
    raise ValueError(f"'{name}' is neither torch:BACKEND nor py:MODULE:FUNCTION")


def _scale_names(tensors):
    """The keyword parameters a call takes for the quantized tensors it is given: k_scale and v_scale
    with a quantized K and V, q_scale with an E4M3 Q."""
    return (("q_scale",) if "q_scale" in tensors else ()) + (("k_scale", "v_scale") if "k_scale" in tensors else ())


def _missing_parameters(fn, names):
    """Those of `names` that `fn` does not take as keyword parameters (all of them when its signature
    cannot be read; a **kwargs catch-all declares none)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return list(names)
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [n for n in names if n not in params or params[n].kind not in keyword]


def _hdim_v(shape):
    """The width of V's and O's rows (a bridge of before hdim_v gives none: hdim)."""
    return shape.get("hdim_v", shape["hdim"])


def supports(name, backend, shape):
    """'' when the kernel may run the shape, else the reason (PyTorch's own refusals come at prepare)."""
    kind, _, _ = _split(name)
    if kind == "torch":
        if backend != "cuda":
            return "PyTorch's SDPA backends run on the CUDA backend"
        if shape["dtype"] == "fp32" and name in ("torch:flash", "torch:cudnn"):
            return f"{name} takes fp16 and bf16 only"
    return ""


def prepare(name, backend, shape, tensors):
    """Wraps the buffers, makes the call ready and runs it once (untimed); returns the call."""
    kind, first, second = _split(name)
    dtype = tensors["element_dtype"]
    pass_ = shape.get("pass", "fwd")
    # Each tensor's element type: a quantized Q (q_scale given) is E4M3, a quantized K and V (k_scale
    # given) the shape's kv_dtype, every scale float32, the rest element_dtype.
    dtypes = {"q": "fp8_e4m3" if "q_scale" in tensors else dtype, "o": dtype,
              "q_scale": "fp32", "k_scale": "fp32", "v_scale": "fp32"}
    dtypes["k"] = dtypes["v"] = shape.get("kv_dtype", "none") if "k_scale" in tensors else dtype
    names = ("q", "k", "v", "o") + _scale_names(tensors)
    wrap = _torch_tensor if backend == "cuda" else _numpy_array
    buffers = {t: wrap(tensors[t], dtypes[t]) for t in names}
    q, k, v, o = (buffers[t] for t in ("q", "k", "v", "o"))
    scales = {t: buffers[t] for t in _scale_names(tensors)}
    out = o
    expected = [[shape["batch"], shape["heads"], shape["seq_q"], _hdim_v(shape)]]

    if pass_ != "fwd":
        d_o, dq, dk, dv = (wrap(tensors[t], dtype) for t in ("d_o", "dq", "dk", "dv"))
        out = (o if pass_ == "fwd_bwd" else None, dq, dk, dv)
        expected = [list(t.shape) for t in (dq, dk, dv)]
    if kind == "torch" and pass_ != "fwd":
        # Leaves over attnprof's buffers (detach shares the memory) that autograd differentiates.
        q, k, v = (t.detach().requires_grad_(True) for t in (q, k, v))
        run = _autograd_backward(name, _torch_sdpa(first, shape, q, k, v), pass_, q, k, v, d_o)
    elif kind == "torch":
        run = _torch_sdpa(first, shape, q, k, v)
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            fn = getattr(importlib.import_module(first), second)
        except Exception as exc:  # the module's own import errors too
            raise RuntimeError(f"cannot load {first}.{second}: {_describe(exc)}") from exc
        missing = _missing_parameters(fn, scales)
        if missing:
            listed = " and ".join([", ".join(missing[:-1]), missing[-1]] if len(missing) > 1 else missing)
            what = ("does not run fp8 Q, K and V (" if "q_scale" in scales else
                    f"does not read a quantized KV cache (kv_dtype {shape['kv_dtype']}; ")
            raise Unsupported(f"{name} takes no {listed} keyword parameter{'s' if len(missing) > 1 else ''}: "
                              f"it {what}docs/python.md)")
        causal, scale = bool(shape["causal"]), 1.0 / math.sqrt(shape["hdim"])

        def run():
            return fn(q, k, v, causal=causal, scale=scale, **scales)

        if pass_ != "fwd":
            backward = getattr(fn, "backward", None)
            if callable(backward):
                run = _explicit_backward(backward, run, pass_, q, k, v, o, d_o, causal, scale)
            elif backend == "cuda":
                q, k, v = (t.detach().requires_grad_(True) for t in (q, k, v))
                run = _autograd_backward(name, lambda: fn(q, k, v, causal=causal, scale=scale), pass_, q, k, v, d_o)
            else:
                raise Unsupported(f"{name} has no backward: give the function a .backward(q, k, v, o, d_o, *, "
                                  "causal, scale) returning (dq, dk, dv) (docs/python.md)")

    # One call now, untimed: JIT compilation and the allocator's first segments happen here, and
    # a refusal or a wrong result type is found before any timing.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = run()
            if backend == "cuda":
                import torch

                torch.cuda.synchronize()
        except RuntimeError as exc:
            reasons = [_clean_warning(w.message) for w in caught]
            reasons = [r for r in reasons if r]
            if kind == "torch" and "No available kernel" in str(exc):
                raise Unsupported(f"PyTorch: {'; '.join(reasons) or _describe(exc)}") from exc
            raise
    if isinstance(out, tuple):
        for got, want, what in zip(result[1:], expected, ("dq, as q", "dk, as k", "dv, as v")):
            _check_output(got, want, dtype, backend, what, who="the backward")
        if result[0] is not None:
            _check_output(result[0], list(o.shape), dtype, backend)
    else:
        _check_output(result, expected[0], dtype, backend)
    if kind == "torch" and backend == "cuda" and _captures(pass_):
        graph, graph_out = _capture(run)
        if graph is not None:
            return _Call(run, out, backend, graph, graph_out)
    return _Call(run, out, backend)


def _captures(pass_):
    """Whether a torch: call of this pass is captured as a CUDA graph. ATTNPROF_PY_GRAPHS: "1" (the
    default) forward calls only, "all" backward calls too, "0" none. A replayed backward graph's kernels
    are not seen by attnprof's counter session (every range it records is the L2 flush's), so backward
    calls run eagerly: attnprof holds its stream while a plugin enqueues a timed call, which keeps the
    Python and dispatch time out of the timing."""
    mode = os.environ.get("ATTNPROF_PY_GRAPHS", "1")
    return mode == "all" or (mode != "0" and pass_ == "fwd")


def _capture(run):
    """One call captured as a CUDA graph on a side stream, or (None, None) where PyTorch cannot."""
    import torch

    graph = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.graph(graph, stream=side):
            out = run()
        torch.cuda.synchronize()
    except Exception:  # a backend that does not capture: eager calls instead
        torch.cuda.synchronize()
        return None, None
    return graph, out
