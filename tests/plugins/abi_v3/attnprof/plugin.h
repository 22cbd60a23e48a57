/* tests/plugins/abi_v3: below this comment, include/attnprof/plugin.h byte for byte as attnprof shipped
 * plugin ABI version 3, so that the tests build a plugin as one built against that release was. */
/* attnprof plugin interface: bring your own attention kernel.
 *
 * A plugin is a shared library that exports one C function, attnprof_plugin_entry(), returning a
 * table of kernels. attnprof loads it with `--plugin PATH.so`, and then sweeps, verifies (float64
 * reference, poisoned outputs), times, profiles (CUPTI counters, launch records, occupancy),
 * diagnoses, reports and gates each of its kernels exactly as it does its own.
 *
 * The ABI is plain C: no C++ types cross it, so a plugin can be written in C, C++, CUDA or any
 * language with a C FFI. Device pointers and streams cross as the CUDA driver API's types
 * (CUdeviceptr, CUstream); attnprof links its CUDA runtime statically and a plugin brings its own.
 *
 * Call order for one point (shape):
 *   supports(shape)            may the point run? else the reason ("unsupported" in the results)
 *   workspace_bytes(shape)     attnprof allocates the workspace with the tensors
 *   prepare(shape, tensors)    untimed: planning, JIT, handles, allocation belong here
 *   launch(state, stream)      many times: verification, warm-up, timing, counter passes. It must
 *                              only enqueue work on `stream` (no synchronisation, no allocation).
 *   write_output(state, stream) optional, untimed: after the launch that attnprof verifies, for a
 *                              kernel that computes into buffers of its own (a framework's allocator)
 *   release(state)             once, after the last launch
 * Every function may be called from a worker process of attnprof's, never from two threads at once.
 * Functions return ATTNPROF_OK (0) on success; on failure they write a one-line message into
 * `error` (at most error_size bytes, NUL included) and return another value. prepare() may return
 * ATTNPROF_UNSUPPORTED with the reason when only planning finds that the shape cannot run (the
 * point is then "unsupported", not "failed").
 *
 * Guide: docs/plugins.md. Examples: examples/plugins/.
 */
#ifndef ATTNPROF_PLUGIN_H
#define ATTNPROF_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any change to the structs below. attnprof loads a plugin built for this version or for
 * versions 1 and 2, and refuses any other.
 *   1  dense batches without a sliding window.
 *   2  attnprof_shape gains the sliding window, the packed variable-length batch and the value head
 *      dim (after every field of version 1, so a version-1 plugin reads its fields where they were),
 *      attnprof_tensors the batch's cu_seqlens, and kernels the flags ATTNPROF_KERNEL_MASKS_WINDOW,
 *      _RUNS_VARLEN and _DISTINCT_HDIM_V. A version-1 plugin still loads and runs as before; its
 *      kernels are never given a windowed, packed or distinct-hdim_v point (attnprof records those
 *      "unsupported") and may not declare the new flags.
 *   3  the backward pass: attnprof_shape gains `pass`, attnprof_tensors dO, dQ, dK and dV, and kernels
 *      the flag ATTNPROF_KERNEL_RUNS_BACKWARD. A plugin of version 1 or 2 runs forward points as before
 *      and gets backward points "unsupported". */
#define ATTNPROF_PLUGIN_ABI_VERSION 3u

/* The symbol attnprof looks up. */
#define ATTNPROF_PLUGIN_ENTRY_NAME "attnprof_plugin_entry"

#define ATTNPROF_OK 0
#define ATTNPROF_UNSUPPORTED 2 /* from prepare(): the shape cannot run; the message is the reason */

/* The same types as the CUDA driver API's CUstream and CUdeviceptr (and the runtime's cudaStream_t):
 * a plugin passes them to cuLaunchKernel / <<<..., stream>>> unchanged. On the CPU backend the stream
 * is NULL and pointers are host addresses. */
typedef struct CUstream_st* attnprof_stream;
typedef unsigned long long attnprof_deviceptr;

typedef enum attnprof_backend { ATTNPROF_BACKEND_CPU = 0, ATTNPROF_BACKEND_CUDA = 1 } attnprof_backend;

typedef enum attnprof_dtype { ATTNPROF_DTYPE_FP32 = 0, ATTNPROF_DTYPE_FP16 = 1, ATTNPROF_DTYPE_BF16 = 2 } attnprof_dtype;

/* ABI version 3. Which pass of attention one call computes (attnprof_shape.pass):
 *   FWD      O (and LSE) from Q, K, V.
 *   BWD      dQ, dK, dV from Q, K, V, O, dO and LSE. Before the first launch attnprof filled O (and LSE,
 *            when the kernel writes it) with a forward call of the same kernel (a separate prepare of
 *            the point with pass FWD); a backward call must leave them unchanged.
 *   FWD_BWD  the forward, then the backward, in one call.
 * With S = scale * Q K^T, P = softmax(S) under the mask and D = rowsum(dO * O) per query row:
 * dV = P^T dO, dP = dO V^T, dS = P * (dP - D), dQ = scale * dS K, dK = scale * dS^T Q. dK and dV are
 * kv_heads wide: each sums the gradients of its group's query heads. */
typedef enum attnprof_pass { ATTNPROF_PASS_FWD = 0, ATTNPROF_PASS_BWD = 1, ATTNPROF_PASS_FWD_BWD = 2 } attnprof_pass;

/* Which analytic cost (FLOPs, minimum bytes) attnprof charges the kernel with. */
typedef enum attnprof_cost_model {
  /* Attention forward as attnprof counts it (docs/cost-model.md): S = QK^T, softmax, O = PV, with
   * Q, K, V read once and O (and LSE) written once. */
  ATTNPROF_COST_ATTENTION_FWD = 0
} attnprof_cost_model;

/* Tensor layouts, as bits of attnprof_kernel.layouts (the ones a kernel accepts). attnprof picks
 * BHSD when the kernel accepts it, else BSHD. */
#define ATTNPROF_LAYOUT_BHSD 1u /* [batch, heads, seq, hdim], contiguous */
#define ATTNPROF_LAYOUT_BSHD 2u /* [batch, seq, heads, hdim], contiguous (FlashAttention's) */

/* Kernel flags, as bits of attnprof_kernel.flags. */
/* O (and LSE) depend only on Q, K, V: a counter session may replay the call as often as it needs.
 * Without it, attnprof restores the inputs, re-poisons the outputs and zeroes the workspace before
 * every replay pass. */
#define ATTNPROF_KERNEL_PURE 1u
/* launch() may be captured into a CUDA graph (short calls are timed from a graph of many calls). */
#define ATTNPROF_KERNEL_GRAPH_CAPTURABLE 2u
/* The workspace must be all zero bytes when launch() starts: attnprof clears it before every call,
 * outside the timed region. */
#define ATTNPROF_KERNEL_ZERO_WORKSPACE 4u
/* The kernel writes LSE (the natural-log softmax denominator per query row): it is then verified. */
#define ATTNPROF_KERNEL_WRITES_LSE 8u
/* ABI version 2. The kernel applies attnprof_shape.window: without it attnprof never gives the kernel a
 * windowed point (full attention there would pass for a window it never applied). */
#define ATTNPROF_KERNEL_MASKS_WINDOW 16u
/* ABI version 2. The kernel runs a packed variable-length batch (attnprof_shape.packed_seqs > 0, the
 * layout below): without it attnprof never gives the kernel one (it would read it as a dense batch). */
#define ATTNPROF_KERNEL_RUNS_VARLEN 32u
/* ABI version 2. The kernel runs a value head dim other than the query/key one (attnprof_shape.hdim_v
 * != hdim, e.g. 128 against 192): without it attnprof never gives the kernel such a point. */
#define ATTNPROF_KERNEL_DISTINCT_HDIM_V 64u
/* ABI version 3. The kernel runs the backward pass (attnprof_shape.pass BWD and FWD_BWD, the gradient
 * tensors): without it attnprof gives the kernel forward points only. */
#define ATTNPROF_KERNEL_RUNS_BACKWARD 128u

/* One point. Query row i (0 <= i < seq_q) sits at key position p = i + (seq_k - seq_q): masks are
 * aligned to the bottom-right corner (FlashAttention >= 2.1).
 *   causal        row i sees key j iff j <= p.
 *   window W > 0  (ABI version 2) sliding-window attention: row i sees key j iff p - W < j, and also
 *                 j <= p when causal, or j < p + W when not (FlashAttention's window_size (W-1, 0)
 *                 causal, (W-1, W-1) not). W may exceed seq_q + seq_k: every row then sees what it
 *                 would see without a window.
 * A row that sees no key has O = 0 and LSE = -inf. Query head h reads key/value head
 * h / (heads / kv_heads).
 *
 * Packed variable-length batch (ABI version 2; packed_seqs > 0, FlashAttention's varlen API): batch
 * self-attention sequences of different lengths, packed end to end. Sequence b has
 * n_b = cu_seqlens[b + 1] - cu_seqlens[b] tokens (1 <= n_b <= max_seqlen), its own seq_q = seq_k = n_b,
 * and the masks above apply within it. batch = packed_seqs, seq_q = seq_k = max_seqlen, and every
 * tensor holds all total_tokens tokens (attnprof_tensors says where each lies, and gives cu_seqlens).
 * A dense point has packed_seqs = max_seqlen = total_tokens = 0.
 *
 * A kernel is given a windowed point only with ATTNPROF_KERNEL_MASKS_WINDOW, a packed one only with
 * ATTNPROF_KERNEL_RUNS_VARLEN; a version-1 plugin is given neither, and sees this struct's version-1
 * fields only. */
typedef struct attnprof_shape {
  int64_t batch, heads, kv_heads, seq_q, seq_k, hdim;
  int32_t causal;
  int32_t dtype;         /* attnprof_dtype: the precision asked for */
  /* ABI version 2 */
  int64_t window;        /* sliding-window width in keys; 0 = none */
  int64_t packed_seqs;   /* packed batch: its sequence count (= batch); 0 = dense */
  int64_t max_seqlen;    /* packed batch: the longest sequence's tokens (= seq_q = seq_k); 0 = dense */
  int64_t total_tokens;  /* packed batch: every sequence's tokens (cu_seqlens[batch]); 0 = dense */
  int64_t hdim_v;        /* value head dim: V and O are hdim_v wide (= hdim unless the point says otherwise) */
  /* ABI version 3 */
  int32_t pass;          /* attnprof_pass; FWD unless the kernel declares ATTNPROF_KERNEL_RUNS_BACKWARD */
  int32_t reserved3;
} attnprof_shape;

/* A tensor: its first element and its strides in elements for (batch, head, seq, hdim). */
typedef struct attnprof_tensor {
  attnprof_deviceptr data;
  int64_t stride[4];
} attnprof_tensor;

/* Element d of row i of head h of batch entry b lies at
 *   data + b * stride[0] + h * stride[1] + i * stride[2] + d * stride[3]      (in elements)
 * and its LSE at lse.data + b * lse.stride[0] + h * lse.stride[1] + i * lse.stride[2]. Strides are:
 * Dense:  BHSD  q, o [batch, heads, seq_q, hdim], k, v [batch, kv_heads, seq_k, hdim];
 *         BSHD  q, o [batch, seq_q, heads, hdim], k, v [batch, seq_k, kv_heads, hdim];
 *         lse [batch, heads, seq_q] in either.
 * Packed (shape.packed_seqs > 0): every sequence lies in one batch entry of T = shape.total_tokens
 *         tokens, token i of sequence b being row cu_seqlens[b] + i of it (stride[0] is 0):
 *         BHSD  head-major, as attnprof's own kernels take it: q, o [heads, T, hdim], k, v [kv_heads, T, hdim];
 *         BSHD  token-major, as FlashAttention's varlen API takes it: q, o [T, heads, hdim], k, v [T, kv_heads, hdim];
 *         lse [heads, T] in either.
 * V and O are hdim_v wide where these say hdim (shape.hdim_v; the same as hdim unless the kernel
 * declares ATTNPROF_KERNEL_DISTINCT_HDIM_V). */
typedef struct attnprof_tensors {
  uint32_t struct_size;   /* sizeof(attnprof_tensors) as attnprof was built */
  uint32_t layout;        /* the layout of q, k, v, o: ATTNPROF_LAYOUT_BHSD or ATTNPROF_LAYOUT_BSHD */
  int32_t element_dtype;  /* of q, k, v, o: the shape's dtype on CUDA; ATTNPROF_DTYPE_FP32 on the CPU */
  int32_t reserved;
  attnprof_tensor q, k, v; /* inputs: [batch, heads or kv_heads, seq_q or seq_k, hdim] */
  attnprof_tensor o;       /* output, like q */
  attnprof_tensor lse;     /* fp32 [batch, heads, seq_q]; data is 0 unless ATTNPROF_KERNEL_WRITES_LSE */
  attnprof_deviceptr workspace;
  uint64_t workspace_bytes;
  double softmax_scale;    /* 1 / sqrt(hdim) */
  /* ABI version 2 */
  /* Packed batch: int32 [batch + 1], cu_seqlens[b] the first token of sequence b and cu_seqlens[batch]
   * = total_tokens, in device memory (host memory on the CPU backend), valid until release(). 0 dense. */
  attnprof_deviceptr cu_seqlens;
  /* ABI version 3: the backward's tensors, in the layout of q, k, v and o; data 0 for a forward point.
   * d_o is an input shaped as o; dq (as q), dk (as k) and dv (as v) are outputs every backward call
   * overwrites whole. A backward point's o and lse are inputs (see attnprof_pass). */
  attnprof_tensor d_o, dq, dk, dv;
} attnprof_tensors;

typedef struct attnprof_kernel {
  uint32_t struct_size;     /* sizeof(attnprof_kernel) */
  const char* name;         /* the key in results and on the command line: [A-Za-z0-9_.:-]+ */
  const char* description;  /* one line */
  int32_t backend;          /* attnprof_backend */
  int32_t cost_model;       /* attnprof_cost_model */
  uint32_t layouts;         /* ATTNPROF_LAYOUT_* bits accepted (at least one) */
  uint32_t flags;           /* ATTNPROF_KERNEL_* bits */
  void* user;               /* handed back to supports, workspace_bytes, prepare and release */

  /* Returns 1 when the shape runs; else 0, with the reason in `reason`. */
  int (*supports)(void* user, const attnprof_shape* shape, char* reason, size_t reason_size);
  /* Workspace bytes for the shape; NULL means none. */
  uint64_t (*workspace_bytes)(void* user, const attnprof_shape* shape);
  /* Untimed. Sets *state (may stay NULL) for launch() and release(). The tensors stay valid, at the
   * same addresses, until release(). */
  int (*prepare)(void* user, const attnprof_shape* shape, const attnprof_tensors* tensors, void** state,
                 char* error, size_t error_size);
  /* Enqueues one call on `stream`. */
  int (*launch)(void* state, attnprof_stream stream, char* error, size_t error_size);
  /* May be NULL when prepare() keeps no state. */
  void (*release)(void* user, void* state);
  /* May be NULL: launch() writes the tensors' O (and LSE) itself. Otherwise launch() computes into
   * buffers of the plugin's own, and this enqueues the copy of the last launch's result into O (and
   * LSE). Untimed: attnprof calls it only after the launch it verifies. */
  int (*write_output)(void* state, attnprof_stream stream, char* error, size_t error_size);
} attnprof_kernel;

typedef struct attnprof_plugin {
  uint32_t abi_version;        /* ATTNPROF_PLUGIN_ABI_VERSION */
  uint32_t struct_size;        /* sizeof(attnprof_plugin) */
  uint32_t kernel_struct_size; /* sizeof(attnprof_kernel) */
  uint32_t kernel_count;
  const char* name;            /* the plugin's own name */
  const char* version;         /* the plugin's own version string, recorded in the results */
  const attnprof_kernel* kernels;
} attnprof_plugin;

/* Fills the table's header; a plugin writes `ATTNPROF_PLUGIN_INIT(n, "name", "1.0", kernels)`. */
#define ATTNPROF_PLUGIN_INIT(count, plugin_name, plugin_version, kernel_table)                     \
  { ATTNPROF_PLUGIN_ABI_VERSION, (uint32_t)sizeof(attnprof_plugin), (uint32_t)sizeof(attnprof_kernel), \
    (uint32_t)(count), (plugin_name), (plugin_version), (kernel_table) }

#if defined(_WIN32)
#define ATTNPROF_PLUGIN_EXPORT __declspec(dllexport)
#else
#define ATTNPROF_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* The entry point every plugin defines. The table it returns must live as long as the library. */
typedef const attnprof_plugin* (*attnprof_plugin_entry_fn)(void);
ATTNPROF_PLUGIN_EXPORT const attnprof_plugin* attnprof_plugin_entry(void);

#ifdef __cplusplus
}
#endif

#endif /* ATTNPROF_PLUGIN_H */
