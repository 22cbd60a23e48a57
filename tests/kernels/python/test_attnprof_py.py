"""The Python side of attnprof's bridge (kernels/python/attnprof_py.py) without attnprof: buffers made
here in numpy, described as the bridge describes attnprof's (a pointer, a shape and strides in
elements), and handed to prepare() on the CPU backend, as the bridge does. Checks what a py: callable
is given at a quantized KV cache's points and at fp8 points: the bytes as stored, without a copy, and
each scale as a float32 array that broadcasts against its tensor; and which callables declare them.
Also a py: callable's backward points through its .backward, the backward's walk over autograd nodes
(on stand-in nodes) and which calls are captured as graphs.
Usage: python3 test_attnprof_py.py KERNELS_PYTHON_DIR (exits 77 without numpy)."""
import os
import sys
import unittest

try:
    import numpy as np
except ImportError:
    print("no numpy: skipped")
    sys.exit(77)

# The bridge's CPU test callables (tests/plugins/python/np_attention.py), importable as py:np_attention:...
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plugins", "python"))
import np_attention  # noqa: E402

attnprof_py = None  # imported in main() from the directory given

B, H, KVH, SQ, SK, D = 2, 4, 2, 5, 7, 8


def desc(array):
    """A buffer as the bridge describes it: its address, shape and strides in elements."""
    return {"ptr": array.ctypes.data, "shape": list(array.shape),
            "strides": [s // array.itemsize for s in array.strides]}


def scale_desc(array, view_shape, view_strides):
    return {"ptr": array.ctypes.data, "shape": list(view_shape), "strides": list(view_strides)}


def shape_dict(kv_dtype="none", kv_scale="tensor", dtype="fp32", causal=True):
    return {"batch": B, "heads": H, "kv_heads": KVH, "seq_q": SQ, "seq_k": SK, "hdim": D, "hdim_v": D,
            "causal": causal, "dtype": dtype, "pass": "fwd", "kv_dtype": kv_dtype, "kv_scale": kv_scale}


class Problem:
    """Q, K, V and O in BHSD as attnprof's CPU backend holds them, K and V quantized with scales as the
    bridge's scale_dict describes them (per token: one per row, at the row's offset / hdim)."""

    def __init__(self, kv_dtype, kv_scale, fp8_q=False, seed=1):
        rng = np.random.default_rng(seed)
        codes = np.uint8 if kv_dtype == "fp8_e4m3" else np.int8
        if kv_dtype == "fp8_e4m3":  # finite E4M3 codes only (0x7F and 0xFF are NaN)
            draw = lambda shape: rng.choice([c for c in range(256) if c & 0x7F != 0x7F], size=shape).astype(np.uint8)
        else:
            draw = lambda shape: rng.integers(-127, 128, size=shape).astype(np.int8)
        self.q = draw((B, H, SQ, D)) if fp8_q else rng.standard_normal((B, H, SQ, D)).astype(np.float32)
        self.k = draw((B, KVH, SK, D)).astype(codes)
        self.v = draw((B, KVH, SK, D)).astype(codes)
        self.o = np.full((B, H, SQ, D), np.nan, dtype=np.float32)
        count = {"tensor": 1, "head": KVH, "token": B * KVH * SK}[kv_scale]
        self.k_scale = rng.uniform(0.001, 0.01, size=count).astype(np.float32)
        self.v_scale = rng.uniform(0.001, 0.01, size=count).astype(np.float32)
        self.q_scale = np.array([0.01], dtype=np.float32)
        view = {"tensor": ((1, 1, 1, 1), (1, 1, 1, 1)), "head": ((1, KVH, 1, 1), (KVH, 1, 1, 1)),
                "token": ((B, KVH, SK, 1), (KVH * SK, SK, 1, 1))}[kv_scale]
        self.scale_view = view
        self.tensors = {"q": desc(self.q), "k": desc(self.k), "v": desc(self.v), "o": desc(self.o),
                        "element_dtype": "fp32",
                        "k_scale": scale_desc(self.k_scale, *view), "v_scale": scale_desc(self.v_scale, *view)}
        if fp8_q:
            self.tensors["q_scale"] = scale_desc(self.q_scale, (1, 1, 1, 1), (1, 1, 1, 1))

    def scales_per_row(self, scales):
        """[B, KVH, SK, 1]: each row's scale."""
        return np.broadcast_to(scales.reshape(self.scale_view[0]) if scales.size > 1 else scales.reshape(1, 1, 1, 1),
                               (B, KVH, SK, 1))


class Recorder:
    """A module-level callable that keeps what it was given."""
    seen = {}

    @staticmethod
    def quantized(q, k, v, *, causal, scale, k_scale, v_scale):
        Recorder.seen = {"q": q, "k": k, "v": v, "k_scale": k_scale, "v_scale": v_scale}
        return np_attention.quantized(q, k, v, causal=causal, scale=scale, k_scale=k_scale, v_scale=v_scale)


np_attention.recorded = Recorder.quantized  # reachable as py:np_attention:recorded


def reference(p, causal=True):
    """float64 attention of the dequantized inputs, each row's scale taken by its index."""
    k = np_attention.dequantize(p.k) * p.scales_per_row(p.k_scale)
    v = np_attention.dequantize(p.v) * p.scales_per_row(p.v_scale)
    return np_attention.attention(p.q, k, v, causal=causal, scale=1.0 / np.sqrt(D))


class QuantizedKv(unittest.TestCase):
    def test_each_dtype_and_granularity_reaches_the_callable_as_stored(self):
        for kv_dtype in ("fp8_e4m3", "int8"):
            for kv_scale in ("tensor", "head", "token"):
                with self.subTest(kv_dtype=kv_dtype, kv_scale=kv_scale):
                    p = Problem(kv_dtype, kv_scale)
                    call = attnprof_py.prepare("py:np_attention:recorded", "cpu", shape_dict(kv_dtype, kv_scale),
                                               p.tensors)
                    seen = Recorder.seen
                    want = np.uint8 if kv_dtype == "fp8_e4m3" else np.int8
                    self.assertEqual(seen["k"].dtype, want)
                    self.assertEqual(seen["v"].dtype, want)
                    # attnprof's buffers themselves, not copies.
                    self.assertEqual(seen["k"].ctypes.data, p.k.ctypes.data)
                    self.assertEqual(seen["k_scale"].ctypes.data, p.k_scale.ctypes.data)
                    self.assertTrue(np.array_equal(seen["k"], p.k))
                    self.assertEqual(seen["k_scale"].dtype, np.float32)
                    self.assertEqual(seen["k_scale"].shape, p.scale_view[0])
                    # Each row's scale where broadcasting puts it: row (b, h, j) takes k_scale[(b*KVH+h)*SK+j]
                    # per token, k_scale[h] per head, k_scale[0] per tensor.
                    rows = np.broadcast_to(seen["k_scale"], (B, KVH, SK, 1))
                    for b, h, j in ((0, 0, 0), (1, 1, SK - 1), (1, 0, 3)):
                        index = {"tensor": 0, "head": h, "token": (b * KVH + h) * SK + j}[kv_scale]
                        self.assertEqual(rows[b, h, j, 0], p.k_scale[index])
                    call.launch(0)
                    call.write_output(0)
                    np.testing.assert_allclose(p.o, reference(p), rtol=1e-5, atol=1e-6)

    def test_a_callable_that_ignores_the_scales_is_wrong(self):
        p = Problem("int8", "token")
        call = attnprof_py.prepare("py:np_attention:ignores_scales", "cpu", shape_dict("int8", "token"), p.tensors)
        call.launch(0)
        call.write_output(0)
        self.assertGreater(np.abs(p.o - reference(p)).max(), 1.0)

    def test_a_callable_without_the_scale_parameters_is_refused(self):
        p = Problem("fp8_e4m3", "head")
        with self.assertRaises(attnprof_py.Unsupported) as caught:
            attnprof_py.prepare("py:np_attention:attention", "cpu", shape_dict("fp8_e4m3", "head"), p.tensors)
        self.assertEqual(str(caught.exception),
                         "py:np_attention:attention takes no k_scale and v_scale keyword parameters: it does not read "
                         "a quantized KV cache (kv_dtype fp8_e4m3; docs/python.md)")

    def test_unquantized_points_pass_no_scales(self):
        q = np.ones((B, H, SQ, D), np.float32)
        k = np.ones((B, KVH, SK, D), np.float32)
        v = np.ones((B, KVH, SK, D), np.float32)
        o = np.zeros((B, H, SQ, D), np.float32)
        tensors = {"q": desc(q), "k": desc(k), "v": desc(v), "o": desc(o), "element_dtype": "fp32"}
        call = attnprof_py.prepare("py:np_attention:attention", "cpu", shape_dict(), tensors)
        call.launch(0)
        call.write_output(0)
        np.testing.assert_allclose(o, 1.0)


class Fp8(unittest.TestCase):
    def test_q_k_and_v_reach_the_callable_as_e4m3_bytes_with_their_scales(self):
        p = Problem("fp8_e4m3", "tensor", fp8_q=True)
        call = attnprof_py.prepare("py:np_attention:fp8", "cpu", shape_dict("fp8_e4m3", "tensor", dtype="fp8_e4m3"),
                                   p.tensors)
        call.launch(0)
        call.write_output(0)
        q = np_attention.dequantize(p.q, p.q_scale[0])
        k = np_attention.dequantize(p.k, p.k_scale[0])
        v = np_attention.dequantize(p.v, p.v_scale[0])
        np.testing.assert_allclose(p.o, np_attention.attention(q, k, v, causal=True, scale=1.0 / np.sqrt(D)),
                                   rtol=1e-5, atol=1e-6)

    def test_a_callable_without_q_scale_is_refused(self):
        p = Problem("fp8_e4m3", "tensor", fp8_q=True)
        with self.assertRaises(attnprof_py.Unsupported) as caught:
            attnprof_py.prepare("py:np_attention:quantized", "cpu",
                                shape_dict("fp8_e4m3", "tensor", dtype="fp8_e4m3"), p.tensors)
        self.assertEqual(str(caught.exception), "py:np_attention:quantized takes no q_scale keyword parameter: it does "
                                                "not run fp8 Q, K and V (docs/python.md)")


class Declarations(unittest.TestCase):
    def test_which_signatures_declare_the_scales(self):
        def keyword_only(q, k, v, *, causal, scale, k_scale, v_scale): ...
        def positional_or_keyword(q, k, v, causal, scale, k_scale=None, v_scale=None): ...
        def catch_all(q, k, v, **kwargs): ...
        def half(q, k, v, *, causal, scale, k_scale): ...
        def positional_only(q, k, v, k_scale, v_scale, /, *, causal, scale): ...
        names = ("k_scale", "v_scale")
        self.assertEqual(attnprof_py._missing_parameters(keyword_only, names), [])
        self.assertEqual(attnprof_py._missing_parameters(positional_or_keyword, names), [])
        self.assertEqual(attnprof_py._missing_parameters(catch_all, names), ["k_scale", "v_scale"])
        self.assertEqual(attnprof_py._missing_parameters(half, names), ["v_scale"])
        self.assertEqual(attnprof_py._missing_parameters(positional_only, names), ["k_scale", "v_scale"])
        self.assertEqual(attnprof_py._missing_parameters(len, names), ["k_scale", "v_scale"])


class _Leaf:
    """An autograd AccumulateGrad node as _grad_here sees it: the leaf it feeds."""
    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()
        self._input_metadata = [None]


class _Node:
    """An autograd node: `inputs` gradients in, one gradient out per edge (next_functions)."""
    def __init__(self, inputs, edges, fn):
        self._input_metadata = [None] * inputs
        self.next_functions = tuple(edges)
        self.fn = fn
        self.calls = 0

    def __call__(self, *grads):
        assert len(grads) == len(self._input_metadata), "called with as many gradients as its inputs"
        self.calls += 1
        return self.fn(*grads)


class _Out:
    def __init__(self, grad_fn, output_nr):
        self.grad_fn, self.output_nr = grad_fn, output_nr


class GradOnThisThreadTest(unittest.TestCase):
    """_grad_here runs a backward graph's nodes itself: each node once, after every gradient reaching
    it has been summed, the leaves' gradients returned in the inputs' order."""

    def test_a_graph_with_a_shared_node_an_unused_output_and_a_missing_edge(self):
        q, k, v = np.zeros(1), np.zeros(1), np.zeros(1)
        leaf_q, leaf_k, leaf_v = _Leaf(q), _Leaf(k), _Leaf(v)
        # expand: K reaches attention twice (as GQA's expand does), its gradient the sum of both.
        expand = _Node(2, [(leaf_k, 0)], lambda g0, g1: (g0 + g1,))
        # attention: outputs (O, LSE); gradients (dQ, dK twice through expand, dV, nothing for a constant).
        attention = _Node(2, [(leaf_q, 0), (expand, 0), (expand, 1), (leaf_v, 0), (None, 0)],
                          lambda d_out, d_lse: (2 * d_out, 3 * d_out, 5 * d_out, 7 * d_out, 11 * d_out))
        grads = attnprof_py._grad_here(_Out(attention, 0), (q, k, v), np.ones(1))
        self.assertEqual([float(g[0]) for g in grads], [2.0, 8.0, 7.0])
        self.assertEqual((attention.calls, expand.calls), (1, 1))
        # The graph stays usable: a second call gives the same gradients.
        again = attnprof_py._grad_here(_Out(attention, 0), (q, k, v), np.ones(1))
        self.assertEqual([float(g[0]) for g in again], [2.0, 8.0, 7.0])

    def test_the_output_s_own_slot_takes_do(self):
        q = np.zeros(1)
        seen = []
        node = _Node(3, [(_Leaf(q), 0)], lambda *g: (seen.append(g) or g[1],))
        grads = attnprof_py._grad_here(_Out(node, 1), (q,), np.full(1, 4.0))
        self.assertIsNone(seen[0][0])
        self.assertIsNone(seen[0][2])
        self.assertEqual(float(grads[0][0]), 4.0)

    def test_an_output_without_a_graph_is_an_error(self):
        with self.assertRaises(RuntimeError):
            attnprof_py._grad_here(_Out(None, 0), (), np.ones(1))


class PyBackward(unittest.TestCase):
    """A py: callable's backward points on the CPU: its .backward gets Q, K, V, the O its forward wrote
    and dO, and its gradients land in attnprof's dQ, dK and dV (and O too at fwd_bwd); one without a
    backward is refused; an autograd-less output on CUDA is refused the same way."""

    def buffers(self, seed=3):
        rng = np.random.default_rng(seed)
        self.q = rng.standard_normal((B, H, SQ, D)).astype(np.float32)
        self.k = rng.standard_normal((B, KVH, SK, D)).astype(np.float32)
        self.v = rng.standard_normal((B, KVH, SK, D)).astype(np.float32)
        self.d_o = rng.standard_normal((B, H, SQ, D)).astype(np.float32)
        self.o = np_attention.attention(self.q, self.k, self.v, causal=True, scale=1.0 / np.sqrt(D))
        self.dq = np.full((B, H, SQ, D), np.nan, np.float32)
        self.dk = np.full((B, KVH, SK, D), np.nan, np.float32)
        self.dv = np.full((B, KVH, SK, D), np.nan, np.float32)
        return {"q": desc(self.q), "k": desc(self.k), "v": desc(self.v), "o": desc(self.o), "d_o": desc(self.d_o),
                "dq": desc(self.dq), "dk": desc(self.dk), "dv": desc(self.dv), "element_dtype": "fp32"}

    def shape(self, pass_):
        s = shape_dict()
        s["pass"] = pass_
        return s

    def expected(self, o):
        return np_attention.attention_backward(self.q, self.k, self.v, o, self.d_o, causal=True, scale=1.0 / np.sqrt(D))

    def test_bwd_runs_the_callable_s_backward_on_its_own_o(self):
        tensors = self.buffers()
        o_before = self.o.copy()
        call = attnprof_py.prepare("py:np_attention:attention", "cpu", self.shape("bwd"), tensors)
        call.launch(0)
        call.write_output(0)
        for got, want in zip((self.dq, self.dk, self.dv), self.expected(o_before)):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(self.o, o_before)  # a bwd call leaves O as the forward wrote it

    def test_fwd_bwd_writes_o_and_the_gradients(self):
        tensors = self.buffers()
        want_o = self.o.copy()
        self.o[...] = np.nan
        call = attnprof_py.prepare("py:np_attention:attention", "cpu", self.shape("fwd_bwd"), tensors)
        call.launch(0)
        call.write_output(0)
        np.testing.assert_allclose(self.o, want_o, rtol=1e-6)
        np.testing.assert_allclose(self.dk, self.expected(want_o)[1], rtol=1e-6, atol=1e-7)

    def test_a_callable_without_a_backward_is_refused(self):
        with self.assertRaises(attnprof_py.Unsupported) as caught:
            attnprof_py.prepare("py:np_attention:quantized", "cpu", self.shape("bwd"), self.buffers())
        self.assertIn("py:np_attention:quantized has no backward", str(caught.exception))
        self.assertEqual(attnprof_py.supports("py:np_attention:quantized", "cpu", self.shape("bwd")), "")

    def test_a_gradient_of_the_wrong_shape_is_named(self):
        with self.assertRaises(RuntimeError) as caught:
            attnprof_py.prepare("py:np_attention:short_dq", "cpu", self.shape("bwd"), self.buffers())
        self.assertIn(f"expected {(B, H, SQ, D)} (dq, as q)", str(caught.exception))

    def test_an_output_without_an_autograd_graph_is_refused(self):
        for pass_ in ("bwd", "fwd_bwd"):
            run = attnprof_py._autograd_backward("py:m:f", lambda: _Out(None, 0), pass_, None, None, None, None)
            with self.assertRaises(attnprof_py.Unsupported) as caught:
                run()  # the first call, prepare's untimed one
            self.assertIn("py:m:f has no backward: its output has no autograd graph", str(caught.exception))

    def test_a_bwd_call_differentiates_the_graph_its_first_call_made(self):
        q = np.zeros(1)
        made = []

        def forward():
            made.append(_Out(_Node(1, [(_Leaf(q), 0)], lambda g: (3 * g,)), 0))
            return made[-1]

        run = attnprof_py._autograd_backward("py:m:f", forward, "bwd", q, None, None, np.full(1, 2.0))
        first, again = run(), run()
        self.assertEqual(len(made), 1)  # one forward, untimed; the calls are the backward alone
        self.assertIsNone(first[0])
        self.assertEqual((float(first[1][0]), float(again[1][0])), (6.0, 6.0))


class GraphCaptureTest(unittest.TestCase):
    """Which torch: calls the bridge captures as CUDA graphs: forward calls by default, backward calls
    only with ATTNPROF_PY_GRAPHS=all (a replayed backward graph leaves attnprof's counters nothing),
    none with 0."""

    def captures(self, mode, pass_):
        saved = os.environ.pop("ATTNPROF_PY_GRAPHS", None)
        try:
            if mode is not None:
                os.environ["ATTNPROF_PY_GRAPHS"] = mode
            return attnprof_py._captures(pass_)
        finally:
            os.environ.pop("ATTNPROF_PY_GRAPHS", None)
            if saved is not None:
                os.environ["ATTNPROF_PY_GRAPHS"] = saved

    def test_each_mode(self):
        self.assertEqual([self.captures(None, p) for p in ("fwd", "bwd", "fwd_bwd")], [True, False, False])
        self.assertEqual([self.captures("1", p) for p in ("fwd", "bwd", "fwd_bwd")], [True, False, False])
        self.assertEqual([self.captures("all", p) for p in ("fwd", "bwd", "fwd_bwd")], [True, True, True])
        self.assertEqual([self.captures("0", p) for p in ("fwd", "bwd", "fwd_bwd")], [False, False, False])


def main():
    global attnprof_py
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.path.insert(0, os.path.abspath(sys.argv.pop(1)))
    import attnprof_py as module

    attnprof_py = module
    unittest.main()


if __name__ == "__main__":
    main()
