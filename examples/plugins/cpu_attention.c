/* An attnprof plugin in plain C with one CPU kernel: attention forward, one query row at a time, in
 * the BSHD layout ([batch, seq, heads, hdim], FlashAttention's) to show how a kernel that takes only
 * one layout declares it. On the CPU backend every tensor is fp32, whatever the shape's dtype, but a
 * quantized K and V.
 * Two passes per row: the scores and their maximum, then the softmax weights and the output.
 * It declares what plugin ABI version 2 added: the sliding window (each row's keys are cut to the
 * window), packed variable-length batches (each sequence's rows start at its cu_seqlens entry, in
 * the token-major packed layout a BSHD kernel is given) and a value head dim of its own (V and O rows
 * hdim_v wide). It reads a quantized KV cache too, what plugin ABI version 4 added: K and V as one
 * byte per element (fp8 E4M3 or int8) with float32 scales per tensor, per kv head or per token, each
 * element the value of its byte times its scale. And it runs the backward pass, what plugin ABI
 * version 3 added: dQ, dK and dV from Q, K, V, O, dO and its own LSE, one query row at a time (each row's
 * softmax weights recomputed from its LSE; dK and dV summed over each group's query heads).
 *
 * Build outside attnprof (docs/plugins.md):
 *   cc -shared -fPIC -O2 -I<attnprof>/include cpu_attention.c -o cpu_attention.so -lm
 * Run:
 *   attnprof sweep --backend cpu --plugin ./cpu_attention.so --kernels example-cpu,fused --preset quick
 *   attnprof sweep --backend cpu --plugin ./cpu_attention.so --kernels example-cpu,fused \
 *     --axes "heads=4;hdim=64;causal=1;dtype=fp32;window=0,32;lengths=uniform:16:256;batch=4"
 *   attnprof sweep --backend cpu --plugin ./cpu_attention.so --kernels example-cpu,fused \
 *     --axes "heads=4;kv_heads=2;seq=256;hdim=64;causal=1;dtype=fp32;kv_dtype=fp32,fp8_e4m3,int8;kv_scale=token"
 *   attnprof sweep --backend cpu --plugin ./cpu_attention.so --kernels example-cpu,reference \
 *     --axes "heads=4;kv_heads=2;seq=128;hdim=64;causal=0,1;dtype=fp32;pass=fwd,bwd,fwd_bwd"
 */
#include <attnprof/plugin.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The name (the kernel's and the plugin's) and whether it applies the KV scales are macros so that
 * attnprof's plugin test builds a twin that reads the quantized bytes but ignores their scales, a
 * kernel that verification must fail (tests/plugins/CMakeLists.txt). */
#ifndef EXAMPLE_CPU_NAME
#define EXAMPLE_CPU_NAME "example-cpu"
#endif
#ifndef EXAMPLE_CPU_IGNORES_KV_SCALES
#define EXAMPLE_CPU_IGNORES_KV_SCALES 0
#endif
/* Its twin whose dK misses the softmax scale: verification must fail dK alone. */
#ifndef EXAMPLE_CPU_UNSCALED_DK
#define EXAMPLE_CPU_UNSCALED_DK 0
#endif

typedef struct {
  attnprof_shape shape;
  attnprof_tensors t;
  float* scores;          /* seq_k floats: one row's scores */
  float code_value[256];  /* a quantized KV cache: the value each byte stands for at scale 1 */
} problem;

/* Keys [begin, end) that row i of a sequence of seq_q queries and seq_k keys sees (plugin.h's masks). */
typedef struct {
  int64_t begin, end;
} key_range;

static key_range keys_of_row(const attnprof_shape* n, int64_t seq_q, int64_t seq_k, int64_t i) {
  const int64_t p = i + seq_k - seq_q; /* bottom-right alignment */
  /* A window wider than seq_q + seq_k cuts nothing; the clamp keeps p + w from overflowing. */
  const int64_t w = n->window < seq_q + seq_k ? n->window : seq_q + seq_k;
  key_range r = {0, seq_k};
  if (n->causal) r.end = p + 1;
  else if (w > 0) r.end = p + w;
  if (w > 0) r.begin = p - w + 1;
  if (r.end > seq_k) r.end = seq_k;
  if (r.end < 0) r.end = 0;
  if (r.begin < 0) r.begin = 0;
  if (r.begin > r.end) r.begin = r.end;
  return r;
}

static float* element(const attnprof_tensor* x, int64_t b, int64_t h, int64_t s) {
  return (float*)(uintptr_t)x->data + b * x->stride[0] + h * x->stride[1] + s * x->stride[2];
}

/* The value of an OCP FP8 E4M3 byte: sign, 4 exponent bits of bias 7, 3 mantissa bits; S.1111.111 is NaN. */
static float e4m3_value(uint8_t c) {
  const int exponent = (c >> 3) & 0xF, mantissa = c & 0x7;
  const float sign = (c & 0x80) ? -1.f : 1.f;
  if (exponent == 0xF && mantissa == 0x7) return NAN;
  if (exponent == 0) return sign * ldexpf((float)mantissa, -9); /* subnormal: mantissa * 2^-9 */
  return sign * ldexpf(1.f + (float)mantissa / 8.f, exponent - 7);
}

/* Element d of row s of kv head h of K or V (x; `scales` its k_scale or v_scale, `width` its row's
 * hdim or hdim_v): fp32 as stored, or a quantized byte's value times its scale (plugin.h's
 * attnprof_kv_scale: the tensor's, the kv head's, or the row's own, found by the row's offset). */
static float kv_element(const problem* p, const attnprof_tensor* x, attnprof_deviceptr scales, int64_t width,
                        int64_t b, int64_t h, int64_t s, int64_t d) {
  const int64_t row = b * x->stride[0] + h * x->stride[1] + s * x->stride[2];
  if (p->shape.kv_dtype == ATTNPROF_KV_DTYPE_NONE) return ((const float*)(uintptr_t)x->data)[row + d * x->stride[3]];
  const float value = p->code_value[((const uint8_t*)(uintptr_t)x->data)[row + d * x->stride[3]]];
  const int64_t which = p->shape.kv_scale == ATTNPROF_KV_SCALE_TOKEN ? row / width
                        : p->shape.kv_scale == ATTNPROF_KV_SCALE_HEAD ? h
                                                                       : 0;
  return EXAMPLE_CPU_IGNORES_KV_SCALES ? value : value * ((const float*)(uintptr_t)scales)[which];
}

static int supports(void* user, const attnprof_shape* s, char* reason, size_t size) {
  (void)user;
  if (s->seq_k > (int64_t)1 << 24) {
    snprintf(reason, size, "seq_k %lld: this example keeps one row of scores, at most 2^24", (long long)s->seq_k);
    return 0;
  }
  return 1;
}

static int prepare(void* user, const attnprof_shape* shape, const attnprof_tensors* tensors, void** state,
                   char* error, size_t size) {
  (void)user;
  problem* p = malloc(sizeof(problem));
  float* scores = malloc(sizeof(float) * (size_t)(shape->seq_k > 0 ? shape->seq_k : 1));
  if (p == NULL || scores == NULL) {
    free(p);
    free(scores);
    snprintf(error, size, "out of host memory");
    return 1;
  }
  p->shape = *shape;
  p->t = *tensors;
  p->scores = scores;
  for (int c = 0; c < 256; ++c)
    p->code_value[c] = shape->kv_dtype == ATTNPROF_KV_DTYPE_INT8 ? (float)(int8_t)c : e4m3_value((uint8_t)c);
  *state = p;
  return ATTNPROF_OK;
}

/* Sequence b's first row and its query and key counts: a packed sequence is self-attention over its own
 * tokens, rows first..first + len - 1. */
typedef struct {
  int64_t first, seq_q, seq_k;
} sequence;

static sequence sequence_of(const problem* p, int64_t b) {
  const attnprof_shape* n = &p->shape;
  const int32_t* cu_seqlens = (const int32_t*)(uintptr_t)p->t.cu_seqlens; /* NULL unless packed */
  if (n->packed_seqs == 0) return (sequence){0, n->seq_q, n->seq_k};
  const int64_t len = cu_seqlens[b + 1] - cu_seqlens[b];
  return (sequence){cu_seqlens[b], len, len};
}

/* O and LSE (plugin.h's attnprof_pass FWD). */
static void forward(problem* p) {
  const attnprof_shape* n = &p->shape;
  const int64_t group = n->heads / n->kv_heads;
  for (int64_t b = 0; b < n->batch; ++b) {
    const sequence seq = sequence_of(p, b);
    const int64_t first = seq.first, seq_q = seq.seq_q, seq_k = seq.seq_k;
    for (int64_t h = 0; h < n->heads; ++h)
      for (int64_t i = 0; i < seq_q; ++i) {
        const float* q = element(&p->t.q, b, h, first + i);
        const key_range keys = keys_of_row(n, seq_q, seq_k, i);
        float row_max = -INFINITY;
        for (int64_t j = keys.begin; j < keys.end; ++j) {
          float dot = 0.f;
          for (int64_t d = 0; d < n->hdim; ++d)
            dot += q[d] * kv_element(p, &p->t.k, p->t.k_scale, n->hdim, b, h / group, first + j, d);
          p->scores[j] = dot * (float)p->t.softmax_scale;
          if (p->scores[j] > row_max) row_max = p->scores[j];
        }
        float* o = element(&p->t.o, b, h, first + i);
        for (int64_t d = 0; d < n->hdim_v; ++d) o[d] = 0.f;
        float row_sum = 0.f;
        for (int64_t j = keys.begin; j < keys.end; ++j) {
          const float w = expf(p->scores[j] - row_max);
          row_sum += w;
          for (int64_t d = 0; d < n->hdim_v; ++d)
            o[d] += w * kv_element(p, &p->t.v, p->t.v_scale, n->hdim_v, b, h / group, first + j, d);
        }
        for (int64_t d = 0; row_sum > 0.f && d < n->hdim_v; ++d) o[d] /= row_sum;
        float* lse = (float*)(uintptr_t)p->t.lse.data;
        if (lse != NULL)
          lse[b * p->t.lse.stride[0] + h * p->t.lse.stride[1] + (first + i) * p->t.lse.stride[2]] =
              row_sum > 0.f ? row_max + logf(row_sum) : -INFINITY;
      }
  }
}

/* dQ, dK and dV (attnprof_pass BWD) from Q, K, V, O, dO and the LSE forward() wrote: per query row i,
 * P_ij = exp(scale q_i.k_j - LSE_i), D_i = dO_i.O_i, dS_ij = P_ij (dO_i.v_j - D_i), then dQ_i = scale
 * sum_j dS_ij k_j, dK_j += scale dS_ij q_i and dV_j += P_ij dO_i. K and V are never quantized here (a
 * quantized KV cache is a forward point). */
static void backward(problem* p) {
  const attnprof_shape* n = &p->shape;
  const attnprof_tensors* t = &p->t;
  const int64_t group = n->heads / n->kv_heads;
  const float scale = (float)t->softmax_scale;
  const float dk_scale = EXAMPLE_CPU_UNSCALED_DK ? 1.f : scale;
  const float* lse = (const float*)(uintptr_t)t->lse.data;
  for (int64_t b = 0; b < n->batch; ++b) {
    const sequence seq = sequence_of(p, b);
    /* dK and dV sum over the group's query heads: every row of them starts at zero. */
    for (int64_t g = 0; g < n->kv_heads; ++g)
      for (int64_t j = 0; j < seq.seq_k; ++j) {
        float* dk = element(&t->dk, b, g, seq.first + j);
        float* dv = element(&t->dv, b, g, seq.first + j);
        for (int64_t d = 0; d < n->hdim; ++d) dk[d] = 0.f;
        for (int64_t d = 0; d < n->hdim_v; ++d) dv[d] = 0.f;
      }
    for (int64_t h = 0; h < n->heads; ++h)
      for (int64_t i = 0; i < seq.seq_q; ++i) {
        const int64_t row = seq.first + i;
        const float* q = element(&t->q, b, h, row);
        const float* o = element(&t->o, b, h, row);
        const float* d_o = element(&t->d_o, b, h, row);
        float* dq = element(&t->dq, b, h, row);
        const float row_lse = lse[b * t->lse.stride[0] + h * t->lse.stride[1] + row * t->lse.stride[2]];
        float row_d = 0.f;
        for (int64_t d = 0; d < n->hdim_v; ++d) row_d += d_o[d] * o[d];
        for (int64_t d = 0; d < n->hdim; ++d) dq[d] = 0.f;
        const key_range keys = keys_of_row(n, seq.seq_q, seq.seq_k, i);
        for (int64_t j = keys.begin; j < keys.end; ++j) {
          const float* k = element(&t->k, b, h / group, seq.first + j);
          const float* v = element(&t->v, b, h / group, seq.first + j);
          float* dk = element(&t->dk, b, h / group, seq.first + j);
          float* dv = element(&t->dv, b, h / group, seq.first + j);
          float score = 0.f, dp = 0.f;
          for (int64_t d = 0; d < n->hdim; ++d) score += q[d] * k[d];
          for (int64_t d = 0; d < n->hdim_v; ++d) dp += d_o[d] * v[d];
          const float weight = expf(score * scale - row_lse);
          const float ds = weight * (dp - row_d);
          for (int64_t d = 0; d < n->hdim; ++d) {
            dq[d] += ds * k[d];
            dk[d] += dk_scale * ds * q[d];
          }
          for (int64_t d = 0; d < n->hdim_v; ++d) dv[d] += weight * d_o[d];
        }
        for (int64_t d = 0; d < n->hdim; ++d) dq[d] *= scale;
      }
  }
}

static int launch(void* state, attnprof_stream stream, char* error, size_t size) {
  (void)stream, (void)error, (void)size;
  problem* p = state;
  if (p->shape.pass != ATTNPROF_PASS_BWD) forward(p);
  if (p->shape.pass != ATTNPROF_PASS_FWD) backward(p);
  return ATTNPROF_OK;
}

static void release(void* user, void* state) {
  (void)user;
  problem* p = state;
  free(p->scores);
  free(p);
}

static const attnprof_kernel kernels[] = {{
    sizeof(attnprof_kernel),
    EXAMPLE_CPU_NAME,
    "two passes per query row forward, one backward, BSHD layout (examples/plugins/cpu_attention.c)",
    ATTNPROF_BACKEND_CPU,
    ATTNPROF_COST_ATTENTION_FWD,
    ATTNPROF_LAYOUT_BSHD,
    ATTNPROF_KERNEL_PURE | ATTNPROF_KERNEL_WRITES_LSE | ATTNPROF_KERNEL_MASKS_WINDOW | ATTNPROF_KERNEL_RUNS_VARLEN |
        ATTNPROF_KERNEL_DISTINCT_HDIM_V | ATTNPROF_KERNEL_READS_QUANTIZED_KV | ATTNPROF_KERNEL_RUNS_BACKWARD,
    NULL,
    supports,
    NULL,
    prepare,
    launch,
    release,
    NULL,
}};

static const attnprof_plugin plugin = ATTNPROF_PLUGIN_INIT(1, EXAMPLE_CPU_NAME, "1.0", kernels);

ATTNPROF_PLUGIN_EXPORT const attnprof_plugin* attnprof_plugin_entry(void) { return &plugin; }
