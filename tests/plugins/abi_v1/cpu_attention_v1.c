/* examples/plugins/cpu_attention.c as it was for plugin ABI version 1, built against that version's
 * header (tests/plugins/abi_v1/attnprof/plugin.h): what a plugin built before version 2 is. Only its
 * kernel and plugin names differ ("example-cpu-v1"), so that one sweep can load it beside the example.
 * It runs dense points as it always did; attnprof gives it no windowed or packed point.
 */
#include <attnprof/plugin.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  attnprof_shape shape;
  attnprof_tensors t;
  float* scores; /* seq_k floats: one row's scores */
} problem;

static const float* element(const attnprof_tensor* x, int64_t b, int64_t h, int64_t s) {
  return (const float*)(uintptr_t)x->data + b * x->stride[0] + h * x->stride[1] + s * x->stride[2];
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
  *state = p;
  return ATTNPROF_OK;
}

static int launch(void* state, attnprof_stream stream, char* error, size_t size) {
  (void)stream, (void)error, (void)size;
  const problem* p = state;
  const attnprof_shape* n = &p->shape;
  const int64_t group = n->heads / n->kv_heads;
  for (int64_t b = 0; b < n->batch; ++b)
    for (int64_t h = 0; h < n->heads; ++h)
      for (int64_t i = 0; i < n->seq_q; ++i) {
        const float* q = element(&p->t.q, b, h, i);
        int64_t visible = n->causal ? i + n->seq_k - n->seq_q + 1 : n->seq_k; /* bottom-right mask */
        if (visible > n->seq_k) visible = n->seq_k;
        if (visible < 0) visible = 0;
        float row_max = -INFINITY;
        for (int64_t j = 0; j < visible; ++j) {
          const float* k = element(&p->t.k, b, h / group, j);
          float dot = 0.f;
          for (int64_t d = 0; d < n->hdim; ++d) dot += q[d] * k[d];
          p->scores[j] = dot * (float)p->t.softmax_scale;
          if (p->scores[j] > row_max) row_max = p->scores[j];
        }
        float* o = (float*)(uintptr_t)p->t.o.data + b * p->t.o.stride[0] + h * p->t.o.stride[1] + i * p->t.o.stride[2];
        for (int64_t d = 0; d < n->hdim; ++d) o[d] = 0.f;
        float row_sum = 0.f;
        for (int64_t j = 0; j < visible; ++j) {
          const float w = expf(p->scores[j] - row_max);
          const float* v = element(&p->t.v, b, h / group, j);
          row_sum += w;
          for (int64_t d = 0; d < n->hdim; ++d) o[d] += w * v[d];
        }
        for (int64_t d = 0; row_sum > 0.f && d < n->hdim; ++d) o[d] /= row_sum;
        float* lse = (float*)(uintptr_t)p->t.lse.data;
        if (lse != NULL)
          lse[b * p->t.lse.stride[0] + h * p->t.lse.stride[1] + i * p->t.lse.stride[2]] =
              row_sum > 0.f ? row_max + logf(row_sum) : -INFINITY;
      }
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
    "example-cpu-v1",
    "examples/plugins/cpu_attention.c as built for plugin ABI version 1",
    ATTNPROF_BACKEND_CPU,
    ATTNPROF_COST_ATTENTION_FWD,
    ATTNPROF_LAYOUT_BSHD,
    ATTNPROF_KERNEL_PURE | ATTNPROF_KERNEL_WRITES_LSE,
    NULL,
    supports,
    NULL,
    prepare,
    launch,
    release,
}};

static const attnprof_plugin plugin = ATTNPROF_PLUGIN_INIT(1, "example-cpu-v1", "1.0", kernels);

ATTNPROF_PLUGIN_EXPORT const attnprof_plugin* attnprof_plugin_entry(void) { return &plugin; }
