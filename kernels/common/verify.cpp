// Verification against float64 (see verify.hpp and docs/verification.md).
// Layers: input regeneration (random.hpp, only the rows and the K/V heads needed), the float64 row,
// the naive low-precision row, and verify_rows, which groups the checked rows by (batch, kv head) so
// K and V are regenerated once per group and the rows of a group are computed in parallel.
#include "kernels/common/verify.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

#include "kernels/common/quant.hpp"
#include "kernels/common/random.hpp"
#include "kernels/cpu/parallel.hpp"

namespace attnprof::kernels {

namespace {

constexpr int kTensorQ = 0, kTensorK = 1, kTensorV = 2, kTensorDO = 3;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Heads (b, h) a sampled check spreads its rows over. Few heads keep the K/V regeneration cheap (the
// reference recomputes seq_k * hdim inputs per kv head); the first and last head are always among
// them because indexing bugs show at the edges of the tensor.
constexpr int64_t kMinSampledHeads = 8;
// Most K and V elements a sampled check regenerates (~1 s of hashing on one core): with a short seq_q
// the row quota would otherwise spread over hundreds of heads, each needing its whole K and V.
constexpr int64_t kMaxRegeneratedKvElems = int64_t{1} << 28;

// Absolute term of the O tolerance: half a unit in the last place of the dtype at 1.0, i.e. one
// rounding of an O element of magnitude up to 1 (|O| <= max |V| = 221/128 and is usually < 1). Two
// correct kernels can land on opposite sides of a rounding boundary; this term keeps a kernel from
// failing when its naive baseline happened to round luckily on every checked element. For fp32 the
// naive error is ~1e-7 and different (correct) summation orders over thousands of keys drift more
// than twice that, so the floor is 1e-5. docs/verification.md has the argument and measurements.
double o_abs_tolerance(core::DType t) {
  switch (t) {
    case core::DType::fp32: return 1e-5;
    case core::DType::fp16: return 0x1p-11;
    case core::DType::bf16: return 0x1p-8;
    case core::DType::fp8_e4m3: return 0x1p-8;  // O is bf16 (its O is held to fp8_o_bounds instead)
  }
  return 0;
}

// fp8 prefill (docs/verification.md#fp8-prefill): each O element's bound, derived for a kernel that
// rounds its unnormalised probabilities P = exp(s - m) (m a running row max, at most the row's own:
// P <= 2^kLazyMaxLog2 = 256 under a lazy max, inside E4M3's 448) to E4M3 before P V, accumulates P V
// on fp8 tensor cores, divides by the fp32 row sum of the unrounded P and writes O in bf16.
constexpr double kE4m3UnitRoundoff = 0x1p-4;       // 3 mantissa bits, round to nearest: |P| >= 2^-6
constexpr double kE4m3SubnormalHalfStep = 0x1p-10;  // below 2^-6 E4M3 steps by 2^-9
constexpr double kBf16UnitRoundoff = 0x1p-8;        // O's rounding
// An fp8 MMA sums its products into the accumulator keeping about 14 bits (Hopper; DeepSeek-V3
// technical report, section 3.3.2): up to 2^-14 of the partial sum's magnitude per instruction, one
// instruction per kFp8MmaK keys of P V (head dims of Q K^T).
constexpr double kFp8MmaRoundoff = 0x1p-14;
constexpr int64_t kFp8MmaK = 32;
// fp32 sums (the row sum, a final rescale) cost at most 2^-24 relative per term; 2^-23 covers two.
constexpr double kFp32SumRoundoff = 0x1p-23;
// exp2 on the special-function unit (about 2^-22 relative) and the fp32 fold of the scales into the
// scores, as an absolute error on a score of magnitude up to max(1, |s|).
constexpr double kScoreFoldRoundoff = 0x1p-20;

int64_t fp8_mma_steps(int64_t k) { return (k + kFp8MmaK - 1) / kFp8MmaK; }

// One row's bounds: each of its value_hdim() O elements', and how far its scores (and so its LSE) may
// be from exact (delta below).
struct Fp8Bounds {
  std::vector<double> o;
  double score = 0;
};

// q: hdim values; k: keys rows of hdim; v: keys rows of value_hdim() (the dequantized inputs); o: the
// float64 O of the row.
Fp8Bounds fp8_bounds_from(const core::Shape& s, const float* q, const float* k, const float* v, int64_t keys,
                          const std::vector<double>& o) {
  const int64_t dv = s.value_hdim();
  Fp8Bounds out;
  out.o.assign(static_cast<size_t>(dv), 0.0);
  std::vector<double>& bound = out.o;
  if (keys == 0) return out;  // O = 0 exactly: nothing is rounded
  const double scale = core::softmax_scale(s);
  std::vector<double> p(static_cast<size_t>(keys));
  double row_max = -kInf, abs_dot_max = 0, score_abs_max = 0;
  for (int64_t j = 0; j < keys; ++j) {
    double dot = 0, abs_dot = 0;
    for (int64_t d = 0; d < s.hdim; ++d) {
      const double x = double(q[d]) * double(k[j * s.hdim + d]);
      dot += x;
      abs_dot += std::fabs(x);
    }
    p[j] = dot * scale;
    row_max = std::max(row_max, p[j]);
    abs_dot_max = std::max(abs_dot_max, abs_dot * scale);
    score_abs_max = std::max(score_abs_max, std::fabs(p[j]));
  }
  double row_sum = 0;  // L: the sum of exp(s - max), at least 1
  for (int64_t j = 0; j < keys; ++j) {
    p[j] = std::exp(p[j] - row_max);
    row_sum += p[j];
  }
  // delta: how far the kernel's scores may be from exact (its Q K^T on fp8 MMAs, the scale folds, exp2);
  // gamma: the relative error of its P V accumulation and row sum.
  const double delta = static_cast<double>(fp8_mma_steps(s.hdim)) * kFp8MmaRoundoff * abs_dot_max +
                       kScoreFoldRoundoff * std::max(1.0, score_abs_max);
  const double gamma = static_cast<double>(fp8_mma_steps(keys)) * kFp8MmaRoundoff +
                       static_cast<double>(keys) * kFp32SumRoundoff;
  // A_d = sum p_j |v_jd|, R_d = sum e_j |v_jd| with e_j = max(u p_j, 2^-10 / L) the rounding error of
  // p_j (normalised) when P is rounded at any scale at least exp(s - max).
  std::vector<double> a(static_cast<size_t>(dv), 0.0), r(static_cast<size_t>(dv), 0.0);
  const double subnormal_err = kE4m3SubnormalHalfStep / row_sum;
  for (int64_t j = 0; j < keys; ++j) {
    const double pj = p[j] / row_sum;
    const double ej = std::max(kE4m3UnitRoundoff * pj, subnormal_err);
    for (int64_t d = 0; d < dv; ++d) {
      const double av = std::fabs(double(v[j * dv + d]));
      a[d] += pj * av;
      r[d] += ej * av;
    }
  }
  const double growth = std::exp(2 * delta) * (1 + gamma);
  for (int64_t d = 0; d < dv; ++d) {
    const double before_rounding = growth * (a[d] + r[d]) - a[d];
    bound[d] = before_rounding + kBf16UnitRoundoff * (std::fabs(o[d]) + before_rounding);
  }
  out.score = delta;
  return out;
}

// LSE is fp32 in every kernel whatever the dtype, and its inputs (q.k of exact 8-bit values) are
// exact, so its error comes from exp/log approximations and the order of the fp32 denominator sum.
// Relative to max(1, |lse|): 1e-5 (~170 fp32 ulps) for fp32 kernels; 1e-3 for fp16/bf16 kernels,
// which may accumulate the denominator from the P they round for the PV product (relative error of
// the sum below 2^-9 for bf16, log(1 + d) ~ d).
double lse_rel_tolerance(core::DType t) { return t == core::DType::fp32 ? 1e-5 : 1e-3; }

struct RowCoord {
  int64_t b = 0, h = 0, i = 0;
};

// Where flat rows sit: r = (b * heads + h) * seq_q + i dense; r = h * tokens + cu_seqlens[b] + i packed
// (LSE's index in both layouts). The masks of row i are those of its sequence (Shape::sequence).
class RowIndex {
 public:
  explicit RowIndex(const core::Shape& s)
      : s_(s), cu_(s.cu_seqlens()), tokens_(s.tokens_q()), one_(s.varlen() ? s.sequence(0) : s) {}
  RowCoord coord(int64_t row) const {
    RowCoord c;
    if (!s_.varlen()) {
      c.i = row % s_.seq_q;
      const int64_t bh = row / s_.seq_q;
      c.h = bh % s_.heads;
      c.b = bh / s_.heads;
      return c;
    }
    c.h = row / tokens_;
    const int64_t t = row % tokens_;
    c.b = std::upper_bound(cu_.begin(), cu_.end(), t) - cu_.begin() - 1;
    c.i = t - cu_[static_cast<size_t>(c.b)];
    return c;
  }
  // Sequence b as a dense shape of batch 1 (the whole shape when dense).
  core::Shape sequence(int64_t b) const {
    if (!s_.varlen()) return s_;
    core::Shape one = one_;
    one.seq_q = one.seq_k = s_.seq_lens[static_cast<size_t>(b)];
    return one;
  }
  core::KeyRange keys_of_row(int64_t row) const {
    const RowCoord c = coord(row);
    return s_.varlen() ? sequence(c.b).keys_of_row(c.i) : s_.keys_of_row(c.i);
  }
  // Canonical index of key 0 of sequence b at kv head kvh in K or V, whose rows are `width` wide
  // (hdim for K, value_hdim() for V).
  int64_t kv_base(int64_t b, int64_t kvh, int64_t width) const {
    if (!s_.varlen()) return ((b * s_.kv_heads + kvh) * s_.seq_k) * width;
    return (kvh * tokens_ + cu_[static_cast<size_t>(b)]) * width;
  }

 private:
  const core::Shape& s_;
  std::vector<int64_t> cu_;
  int64_t tokens_;
  core::Shape one_;
};

int64_t kv_head_of(const core::Shape& s, int64_t h) { return h / (s.heads / s.kv_heads); }


void check_row(const core::Shape& s, int64_t row) {
  if (row < 0 || row >= s.lse_elems())
    throw std::out_of_range("verify: row " + std::to_string(row) + " outside " + s.label());
}

// Row `row` of Q; of fp8 prefill's Q, the values its stored bytes stand for.
std::vector<float> q_row(const core::Shape& s, uint64_t seed, int64_t row, int q_scale_log2 = 0) {
  std::vector<float> q(static_cast<size_t>(s.hdim));
  const uint64_t base = static_cast<uint64_t>(row * s.hdim);  // Q is [b, h, i, d]: row-major rows
  for (int64_t d = 0; d < s.hdim; ++d) q[d] = input_value(seed, kTensorQ, base + d, q_scale_log2);
  if (s.quantized_q())
    for (float& x : q) x = quantized_q_value(x, q_tensor_scale(q_scale_log2));
  return q;
}

// Rows keys.begin .. keys.end - 1 of K or V for (b, kv head): keys.size() * hdim values of K,
// keys.size() * value_hdim() of V; of a quantized KV cache, the values its stored bytes stand for.
std::vector<float> kv_rows(const core::Shape& s, const RowIndex& index, uint64_t seed, int tensor, int64_t b,
                           int64_t kvh, core::KeyRange keys, bool parallel) {
  const int64_t width = tensor == kTensorV ? s.value_hdim() : s.hdim;
  std::vector<float> out(static_cast<size_t>(keys.size() * width));
  const uint64_t base = static_cast<uint64_t>(index.kv_base(b, kvh, width) + keys.begin * width);
  // Whole rows per task: a quantized row's scale is its own (kernels/common/quant.hpp).
  auto fill = [&](int64_t lo, int64_t hi) {
    for (int64_t e = lo * width; e < hi * width; ++e) out[e] = input_value(seed, tensor, base + e);
    if (s.quantized_kv())
      for (int64_t r = lo; r < hi; ++r) quantize_row_in_place(s.kv_dtype, s.kv_scale, out.data() + r * width, width);
  };
  const int64_t n = keys.size();
  if (parallel)
    parallel_for(n, std::max<int64_t>(1, (1 << 16) / width), fill);
  else
    fill(0, n);
  return out;
}

// q: hdim values; k: keys rows of hdim; v: keys rows of value_hdim(); O: value_hdim() values.
ReferenceRow reference_from(const core::Shape& s, const float* q, const float* k, const float* v,
                            int64_t keys) {
  const int64_t dv = s.value_hdim();
  ReferenceRow r;
  r.o.assign(static_cast<size_t>(dv), 0.0);
  if (keys == 0) {
    r.lse = -kInf;
    return r;
  }
  const double scale = core::softmax_scale(s);
  std::vector<double> scores(static_cast<size_t>(keys));
  double row_max = -kInf;
  for (int64_t j = 0; j < keys; ++j) {
    double dot = 0;
    for (int64_t d = 0; d < s.hdim; ++d) dot += double(q[d]) * double(k[j * s.hdim + d]);
    scores[j] = dot * scale;
    row_max = std::max(row_max, scores[j]);
  }
  double row_sum = 0;
  for (int64_t j = 0; j < keys; ++j) {
    scores[j] = std::exp(scores[j] - row_max);
    row_sum += scores[j];
  }
  for (int64_t j = 0; j < keys; ++j) {
    const double p = scores[j] / row_sum;
    for (int64_t d = 0; d < dv; ++d) r.o[d] += p * double(v[j * dv + d]);
  }
  r.lse = row_max + std::log(row_sum);
  return r;
}

// The fp32 scores of one row against its `keys` keys (softmax scale applied) into p; returns their max.
float fp32_scores(const core::Shape& s, const float* q, const float* k, int64_t keys, std::vector<float>& p) {
  const auto scale = static_cast<float>(core::softmax_scale(s));
  p.assign(static_cast<size_t>(keys), 0.0f);
  float row_max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < keys; ++j) {
    float dot = 0;
    for (int64_t d = 0; d < s.hdim; ++d) dot += q[d] * k[j * s.hdim + d];
    p[j] = dot * scale;
    row_max = std::max(row_max, p[j]);
  }
  return row_max;
}

// fp8 prefill's low-precision computation, as an fp8 tensor-core kernel does it: P = exp(s - max) (the
// unnormalised probabilities, at most 1) rounded to E4M3, P V accumulated in fp32, divided by the fp32
// sum of the unrounded P, O rounded to bf16.
std::vector<double> fp8_emulated_from(const core::Shape& s, const float* q, const float* k, const float* v,
                                      int64_t keys) {
  const int64_t dv = s.value_hdim();
  std::vector<double> o(static_cast<size_t>(dv), 0.0);
  if (keys == 0) return o;
  std::vector<float> p;
  const float row_max = fp32_scores(s, q, k, keys, p);
  float row_sum = 0;
  std::vector<float> acc(static_cast<size_t>(dv), 0.0f);
  for (int64_t j = 0; j < keys; ++j) {
    const float pj = std::exp(p[j] - row_max);
    row_sum += pj;
    const float rounded = round_to(core::DType::fp8_e4m3, pj);
    for (int64_t d = 0; d < dv; ++d) acc[d] += rounded * v[j * dv + d];
  }
  for (int64_t d = 0; d < dv; ++d) o[d] = round_to(s.out_dtype(), acc[d] / row_sum);
  return o;
}

// FlashAttention's baseline for the 2x rule: what a straightforward implementation in the dtype gets
// (fp8 prefill: fp8_emulated_from).
std::vector<double> naive_from(const core::Shape& s, const float* q, const float* k, const float* v,
                               int64_t keys) {
  if (s.quantized_q()) return fp8_emulated_from(s, q, k, v, keys);
  const int64_t dv = s.value_hdim();
  std::vector<double> o(static_cast<size_t>(dv), 0.0);
  if (keys == 0) return o;
  std::vector<float> p;
  const float row_max = fp32_scores(s, q, k, keys, p);
  float row_sum = 0;
  for (int64_t j = 0; j < keys; ++j) {
    p[j] = std::exp(p[j] - row_max);
    row_sum += p[j];
  }
  std::vector<float> acc(static_cast<size_t>(dv), 0.0f);
  for (int64_t j = 0; j < keys; ++j) {
    const float pj = round_to(s.dtype, p[j] / row_sum);
    for (int64_t d = 0; d < dv; ++d) acc[d] += pj * v[j * dv + d];
  }
  for (int64_t d = 0; d < dv; ++d) o[d] = round_to(s.dtype, acc[d]);
  return o;
}

// k distinct values from [0, n), seeded (Floyd's algorithm: O(k) draws whatever n is).
std::set<int64_t> sample_distinct(int64_t n, int64_t k, std::mt19937_64& rng) {
  std::set<int64_t> out;
  k = std::min(k, n);
  for (int64_t j = n - k; j < n; ++j) {
    const int64_t t = std::uniform_int_distribution<int64_t>(0, j)(rng);
    if (!out.insert(t).second) out.insert(j);
  }
  return out;
}

}  // namespace

std::vector<int64_t> rows_to_check(const core::Shape& s, int max_rows, uint64_t seed) {
  const int64_t total = s.lse_elems();
  std::vector<int64_t> rows;
  if (max_rows <= 0 || total <= 0) return rows;
  if (total <= max_rows) {
    rows.resize(static_cast<size_t>(total));
    for (int64_t r = 0; r < total; ++r) rows[r] = r;
    return rows;
  }
  std::mt19937_64 rng(splitmix64(seed ^ 0x7665726966790000ull));
  if (s.varlen()) {
    // Every sequence, at the first and the last head and one seeded head between: its first and last
    // row and a seeded sample, the quota split evenly (so at least 2 rows a head even past max_rows).
    const std::vector<int64_t> cu = s.cu_seqlens();
    const int64_t tokens = s.tokens_q();
    const int64_t quota = std::max<int64_t>(2, max_rows / (3 * s.batch));
    std::set<int64_t> picked;
    for (int64_t b = 0; b < s.batch; ++b) {
      const int64_t len = s.seq_lens[static_cast<size_t>(b)];
      const int64_t middle = s.heads > 2 ? 1 + std::uniform_int_distribution<int64_t>(0, s.heads - 3)(rng) : 0;
      for (int64_t h : {int64_t{0}, middle, s.heads - 1}) {
        const int64_t first = h * tokens + cu[static_cast<size_t>(b)];
        picked.insert(first);
        picked.insert(first + len - 1);
        for (int64_t i : sample_distinct(len, quota - 2, rng)) picked.insert(first + i);
      }
    }
    rows.assign(picked.begin(), picked.end());
    return rows;
  }
  const int64_t head_count = s.batch * s.heads;
  // Enough heads that the row quota fits in them, at least kMinSampledHeads, at most all of them.
  const int64_t heads_needed = (max_rows + s.seq_q - 1) / s.seq_q;
  const int64_t heads_affordable =
      kMaxRegeneratedKvElems / std::max<int64_t>(1, s.seq_k * (s.hdim + s.value_hdim()));
  const int64_t sampled_heads = std::min(
      {head_count, std::max(kMinSampledHeads, heads_needed), std::max(kMinSampledHeads, heads_affordable)});
  std::set<int64_t> heads{0, head_count - 1};
  if (sampled_heads > 2) {
    for (int64_t h : sample_distinct(head_count - 2, sampled_heads - 2, rng)) heads.insert(h + 1);
  }
  std::set<int64_t> picked;
  int64_t remaining = max_rows;
  int64_t heads_left = static_cast<int64_t>(heads.size());
  for (int64_t bh : heads) {
    const int64_t quota = std::min(s.seq_q, (remaining + heads_left - 1) / heads_left);
    remaining -= quota;
    --heads_left;
    for (int64_t i : sample_distinct(s.seq_q, quota, rng)) picked.insert(bh * s.seq_q + i);
    if (bh == 0 || bh == head_count - 1) {
      picked.insert(bh * s.seq_q);
      picked.insert(bh * s.seq_q + s.seq_q - 1);
    }
  }
  rows.assign(picked.begin(), picked.end());
  return rows;
}

namespace {

// One query row and the K/V rows it sees (its KeyRange), regenerated from the seed.
struct RowInputs {
  std::vector<float> q, k, v;
  int64_t keys = 0;
};

RowInputs row_inputs(const core::Shape& s, uint64_t seed, int64_t row) {
  check_row(s, row);
  const RowIndex index(s);
  const RowCoord c = index.coord(row);
  const int64_t kvh = kv_head_of(s, c.h);
  const core::KeyRange visible = index.keys_of_row(row);
  RowInputs in;
  in.keys = visible.size();
  in.q = q_row(s, seed, row);
  in.k = kv_rows(s, index, seed, kTensorK, c.b, kvh, visible, false);
  in.v = kv_rows(s, index, seed, kTensorV, c.b, kvh, visible, false);
  return in;
}

}  // namespace

ReferenceRow reference_row(const core::Shape& s, uint64_t seed, int64_t row) {
  const RowInputs in = row_inputs(s, seed, row);
  return reference_from(s, in.q.data(), in.k.data(), in.v.data(), in.keys);
}

std::vector<double> naive_lowp_row(const core::Shape& s, uint64_t seed, int64_t row) {
  const RowInputs in = row_inputs(s, seed, row);
  return naive_from(s, in.q.data(), in.k.data(), in.v.data(), in.keys);
}

std::vector<double> fp8_o_bounds_row(const core::Shape& s, uint64_t seed, int64_t row) {
  const RowInputs in = row_inputs(s, seed, row);
  const ReferenceRow ref = reference_from(s, in.q.data(), in.k.data(), in.v.data(), in.keys);
  return fp8_bounds_from(s, in.q.data(), in.k.data(), in.v.data(), in.keys, ref.o).o;
}

float round_to(core::DType t, float x) {
  if (t == core::DType::fp32 || !std::isfinite(x)) return x;
  if (t == core::DType::fp8_e4m3) return decode_e4m3(encode_e4m3(x));  // saturating at 448 (quant.hpp)
  uint32_t bits = std::bit_cast<uint32_t>(x);
  if (t == core::DType::bf16) {
    // Keep the top 16 bits, rounding to nearest even on the 16 dropped ones. A carry out of the
    // mantissa bumps the exponent, and past the largest bf16 it lands on infinity, as it should.
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return std::bit_cast<float>(bits & 0xFFFF0000u);
  }
  // fp16: 10 mantissa bits, exponent range [-14, 15]; subnormals step by 2^-24.
  constexpr float kFp16MinNormal = 0x1p-14f;
  constexpr float kFp16Max = 65504.0f;
  const float mag = std::fabs(x);
  if (mag < kFp16MinNormal) {
    // Scaling by 2^24 is exact, and nearbyint rounds to nearest even in the default rounding mode.
    return std::nearbyint(x * 0x1p24f) * 0x1p-24f;
  }
  bits += 0xFFFu + ((bits >> 13) & 1u);
  const float r = std::bit_cast<float>(bits & 0xFFFFE000u);
  // Values from 65520 up round past the largest half (65504) to infinity.
  if (std::fabs(r) > kFp16Max) return std::copysign(std::numeric_limits<float>::infinity(), x);
  return r;
}

core::Verification verify_rows(const core::Shape& s, uint64_t seed, const std::vector<int64_t>& rows,
                               const std::vector<float>& o_rows, const std::vector<float>& lse_rows,
                               int64_t unwritten, int q_scale_log2, bool check_lse) {
  const auto n_rows = static_cast<int64_t>(rows.size());
  const int64_t dv = s.value_hdim();  // O's row width
  if (static_cast<int64_t>(o_rows.size()) != n_rows * dv ||
      (check_lse && static_cast<int64_t>(lse_rows.size()) != n_rows))
    throw std::invalid_argument("verify_rows: o_rows / lse_rows do not match rows x hdim_v");
  for (int64_t r : rows) check_row(s, r);

  core::Verification v;
  v.checked = true;
  v.lse_checked = check_lse;
  v.seed = seed;
  v.rows_checked = n_rows;
  v.rows_total = s.lse_elems();
  v.unwritten = unwritten;

  // Per checked row, filled in parallel, reduced afterwards.
  struct RowResult {
    double o_max = 0, o_sum = 0, naive_max = 0, lse_err = 0, lse_tol = 0;
    double quant_max = 0, quant_sum = 0, plain_o_max = 0;  // a quantized KV cache's cost (below)
    double bound_max = 0, bound_ratio = 0;                 // fp8 prefill's per-element bounds
    bool finite = true;
  };
  // A quantized KV cache: the float64 attention of the unquantized inputs beside that of the stored
  // ones, what the quantization itself costs (the kernel is checked against the latter). fp8 prefill:
  // Q, K and V unquantized are the bf16 point's inputs.
  core::Shape plain = s;
  plain.kv_dtype = core::KvDType::none;
  plain.kv_scale = core::KvScale::tensor;
  plain.dtype = s.out_dtype();
  std::vector<RowResult> results(static_cast<size_t>(n_rows));

  // Group row positions by (b, kv head): K and V are regenerated once per group.
  const RowIndex index(s);
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> groups;
  for (int64_t p = 0; p < n_rows; ++p) {
    const RowCoord c = index.coord(rows[p]);
    groups[{c.b, kv_head_of(s, c.h)}].push_back(p);
  }
  for (const auto& group : groups) {
    // Not a structured binding: the lambda below captures these (clang 14 cannot capture a binding).
    const auto& key = group.first;
    const auto& positions = group.second;
    // The keys any row of the group sees: from the lowest begin to the highest end (rows that see no
    // key add nothing).
    core::KeyRange keys{s.seq_k, 0};
    for (int64_t p : positions) {
      const core::KeyRange r = index.keys_of_row(rows[p]);
      if (r.size() == 0) continue;
      keys.begin = std::min(keys.begin, r.begin);
      keys.end = std::max(keys.end, r.end);
    }
    if (keys.end <= keys.begin) keys = {0, 0};
    const auto k = kv_rows(s, index, seed, kTensorK, key.first, key.second, keys, true);
    const auto vv = kv_rows(s, index, seed, kTensorV, key.first, key.second, keys, true);
    std::vector<float> plain_k, plain_v;
    if (s.quantized_kv()) {
      plain_k = kv_rows(plain, index, seed, kTensorK, key.first, key.second, keys, true);
      plain_v = kv_rows(plain, index, seed, kTensorV, key.first, key.second, keys, true);
    }
    parallel_for(static_cast<int64_t>(positions.size()), 1, [&](int64_t lo, int64_t hi) {
      for (int64_t g = lo; g < hi; ++g) {
        const int64_t p = positions[g];
        const int64_t row = rows[p];
        const core::KeyRange visible = index.keys_of_row(row);
        const int64_t row_keys = visible.size();
        // This row's first key inside the group's regenerated rows (none read when it sees no key).
        const int64_t first = row_keys > 0 ? visible.begin - keys.begin : 0;
        const auto q = q_row(s, seed, row, q_scale_log2);
        const float* k_first = k.data() + first * s.hdim;
        const float* v_first = vv.data() + first * dv;
        const ReferenceRow ref = reference_from(s, q.data(), k_first, v_first, row_keys);
        const auto naive = naive_from(s, q.data(), k_first, v_first, row_keys);
        Fp8Bounds fp8;
        if (s.quantized_q()) fp8 = fp8_bounds_from(s, q.data(), k_first, v_first, row_keys, ref.o);
        const std::vector<double>& bounds = fp8.o;
        RowResult& out = results[p];
        for (int64_t d = 0; d < dv; ++d) {
          const float got = o_rows[p * dv + d];
          if (!std::isfinite(got)) out.finite = false;
          const double err = std::fabs(double(got) - ref.o[d]);  // NaN or inf when not finite
          out.o_max = std::isnan(err) ? kInf : std::max(out.o_max, err);
          out.o_sum += err;
          out.naive_max = std::max(out.naive_max, std::fabs(naive[d] - ref.o[d]));
          if (!bounds.empty()) {
            out.bound_max = std::max(out.bound_max, bounds[d]);
            // A bound of 0 (a row that sees no key: O = 0 exactly) takes no error at all.
            const double ratio = err == 0 ? 0 : bounds[d] > 0 ? err / bounds[d] : kInf;
            out.bound_ratio = std::isnan(ratio) ? kInf : std::max(out.bound_ratio, ratio);
          }
        }
        if (s.quantized_kv()) {
          const auto plain_q = s.quantized_q() ? q_row(plain, seed, row, q_scale_log2) : q;
          const ReferenceRow exact = reference_from(plain, plain_q.data(), plain_k.data() + first * s.hdim,
                                                    plain_v.data() + first * dv, row_keys);
          for (int64_t d = 0; d < dv; ++d) {
            const double err = std::fabs(ref.o[d] - exact.o[d]);
            out.quant_max = std::max(out.quant_max, err);
            out.quant_sum += err;
            out.plain_o_max = std::max(out.plain_o_max, std::fabs(exact.o[d]));
          }
        }
        if (!check_lse) continue;
        const double got_lse = lse_rows[p];
        if (std::isnan(got_lse)) {
          out.finite = false;
          out.lse_err = kInf;
        } else if (std::isinf(got_lse) && got_lse == ref.lse) {
          out.lse_err = 0;  // a fully masked row: -inf expected and written
        } else {
          out.lse_err = std::fabs(got_lse - ref.lse);  // inf when only one side is infinite
        }
        // fp8 prefill: its scores may be fp8.score from exact, and so may its LSE.
        out.lse_tol = lse_rel_tolerance(s.dtype) * std::max(1.0, std::isfinite(ref.lse) ? std::fabs(ref.lse) : 1.0) +
                      fp8.score;
      }
    });
  }

  bool all_finite = true, lse_within = true;
  double o_sum = 0, quant_sum = 0, plain_o_max = 0, bound_max = 0, bound_ratio = 0;
  for (const RowResult& r : results) {
    bound_max = std::max(bound_max, r.bound_max);
    bound_ratio = std::max(bound_ratio, r.bound_ratio);
    v.quant.o_max_abs_err = std::max(v.quant.o_max_abs_err, r.quant_max);
    quant_sum += r.quant_sum;
    plain_o_max = std::max(plain_o_max, r.plain_o_max);
    all_finite = all_finite && r.finite;
    v.o_max_abs_err = std::max(v.o_max_abs_err, r.o_max);
    o_sum += r.o_sum;
    v.naive_o_max_abs_err = std::max(v.naive_o_max_abs_err, r.naive_max);
    v.lse_max_abs_err = std::max(v.lse_max_abs_err, r.lse_err);
    lse_within = lse_within && r.lse_err <= r.lse_tol;
  }
  v.o_mean_abs_err = n_rows > 0 ? o_sum / double(n_rows * dv) : 0.0;
  if (s.quantized_kv()) {
    v.quant.checked = true;
    v.quant.o_mean_abs_err = n_rows > 0 ? quant_sum / double(n_rows * dv) : 0.0;
    v.quant.o_max_rel_err = plain_o_max > 0 ? v.quant.o_max_abs_err / plain_o_max : 0.0;
  }
  if (s.quantized_q()) {
    // Each element against its own bound; the largest of them is the point's tolerance.
    v.tolerance = bound_max;
    v.o_max_bound_ratio = bound_ratio;
    v.passed = unwritten == 0 && all_finite && bound_ratio <= 1 && lse_within;
    return v;
  }
  v.tolerance = 2 * v.naive_o_max_abs_err + o_abs_tolerance(s.dtype);
  v.passed = unwritten == 0 && all_finite && v.o_max_abs_err <= v.tolerance && lse_within;
  return v;
}

// ---------------------------------------------------------------------------------------------------
// The backward pass (core/shape.hpp): float64 gradients of the sampled rows from the O and LSE the
// kernel's backward read, and the naive low-precision backward beside them.

namespace {

// Multiply-adds a gradient check may spend on its key rows: a dK/dV row costs group * seq_q *
// (2 * hdim + 2 * value_hdim) (every query row of its group that sees the key), so a long seq_q with
// many heads a group checks fewer key rows (at least kMinGradKvRows: rows_to_check's corners and a
// few more). About a second on one core.
constexpr double kMaxGradKvMacs = 0x1p31;
constexpr int64_t kMinGradKvRows = 8;

// The key rows of a shape indexed as rows_to_check indexes query rows: a shape whose "query rows"
// are the keys of each (batch, kv head), r = (b * kv_heads + g) * seq_k + j (packed: g * tokens +
// cu_seqlens[b] + j). Only what rows_to_check reads matters: the counts and the packed lengths.
core::Shape key_rows_shape(const core::Shape& s) {
  core::Shape k = s;
  k.heads = s.kv_heads;
  k.seq_q = s.seq_k;
  k.seq_k = s.seq_q;
  k.causal = false;
  k.window = 0;
  return k;
}

// dO's row `row` (flat, as Q's and O's): value_hdim() values.
std::vector<float> do_row(const core::Shape& s, uint64_t seed, int64_t row) {
  const int64_t dv = s.value_hdim();
  std::vector<float> out(static_cast<size_t>(dv));
  const auto base = static_cast<uint64_t>(row * dv);
  for (int64_t d = 0; d < dv; ++d) out[d] = input_value(seed, kTensorDO, base + d);
  return out;
}

// A floor under the gradients' absolute term: dS = P (dP - D) cancels where dP ~ D (a row that sees
// one key has dP = D exactly), and a kernel's fp32 sums leave a few fp32 ulps of |dP| (~1e-7) there
// where the float64 backward has 0; summed over a row's keys that stays below 1e-6. A gradient whose
// every checked element is 0 (b1 s1x1) would otherwise get a tolerance of 0.
constexpr double kGradCancellationFloor = 1e-6;

// The absolute term of a gradient's tolerance: one rounding (half an ulp of the dtype, the forward's
// term at magnitude 1) of the largest checked element, and the cancellation floor.
double grad_abs_tolerance(core::DType t, double max_abs_ref) {
  return o_abs_tolerance(t) * max_abs_ref + kGradCancellationFloor;
}

// Errors of one gradient's checked elements against float64 and of the naive backward against float64.
struct GradErrors {
  double max = 0, sum = 0, naive_max = 0, ref_max = 0;
  int64_t elems = 0;
  bool finite = true;
  void add(float got, double ref, double naive) {
    if (!std::isfinite(got)) finite = false;
    const double err = std::fabs(double(got) - ref);
    max = std::isnan(err) ? kInf : std::max(max, err);
    sum += std::isnan(err) ? kInf : err;
    naive_max = std::max(naive_max, std::fabs(naive - ref));
    ref_max = std::max(ref_max, std::fabs(ref));
    ++elems;
  }
  void merge(const GradErrors& o) {
    max = std::max(max, o.max);
    sum += o.sum;
    naive_max = std::max(naive_max, o.naive_max);
    ref_max = std::max(ref_max, o.ref_max);
    elems += o.elems;
    finite = finite && o.finite;
  }
  core::GradCheck check(core::DType t, int64_t rows_checked, int64_t rows_total) const {
    core::GradCheck g;
    g.rows_checked = rows_checked;
    g.rows_total = rows_total;
    g.max_abs_err = max;
    g.mean_abs_err = elems > 0 ? sum / double(elems) : 0;
    g.naive_max_abs_err = naive_max;
    g.tolerance = 2 * naive_max + grad_abs_tolerance(t, ref_max);
    g.passed = finite && max <= g.tolerance;
    return g;
  }
};

double dot(const float* a, const float* b, int64_t n) {
  double sum = 0;
  for (int64_t d = 0; d < n; ++d) sum += double(a[d]) * double(b[d]);
  return sum;
}
float dot_fp32(const float* a, const float* b, int64_t n) {
  float sum = 0;
  for (int64_t d = 0; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

// One score's part of the backward, in float64 and as the naive low-precision backward does it:
// P = exp(scale * q.k - LSE) (naive: in fp32, rounded to the dtype as a kernel stores P for its GEMMs),
// dP = dO.v, dS = P (dP - D) with D = dO.O (naive: from the rounded P, in fp32, rounded).
struct ScoreGrad {
  double p = 0, ds = 0;
  float p_lp = 0, ds_lp = 0;
};
// D of one query row, in float64 and in fp32.
struct RowDelta {
  double f64 = 0;
  float f32 = 0;
};
RowDelta row_delta(const float* d_o, const float* o, int64_t dv) { return {dot(d_o, o, dv), dot_fp32(d_o, o, dv)}; }

ScoreGrad score_grad(const core::Shape& s, const float* q, const float* d_o, RowDelta delta, float lse,
                     const float* k, const float* v) {
  const int64_t dv = s.value_hdim();
  const double scale = core::softmax_scale(s);
  ScoreGrad g;
  g.p = std::exp(scale * dot(q, k, s.hdim) - double(lse));
  g.ds = g.p * (dot(d_o, v, dv) - delta.f64);
  g.p_lp = round_to(s.dtype, std::exp(static_cast<float>(scale) * dot_fp32(q, k, s.hdim) - lse));
  g.ds_lp = round_to(s.dtype, g.p_lp * (dot_fp32(d_o, v, dv) - delta.f32));
  return g;
}

}  // namespace

GradRows grad_rows_to_check(const core::Shape& s, int max_rows, uint64_t seed) {
  GradRows rows;
  rows.q_rows = rows_to_check(s, max_rows, seed);
  const double macs_per_key_row = static_cast<double>(s.heads / s.kv_heads) * static_cast<double>(s.seq_q) *
                                  2.0 * static_cast<double>(s.hdim + s.value_hdim());
  const auto affordable = static_cast<int64_t>(kMaxGradKvMacs / std::max(1.0, macs_per_key_row));
  const int kv_max = static_cast<int>(std::min<int64_t>(max_rows, std::max(kMinGradKvRows, affordable)));
  rows.kv_rows = rows_to_check(key_rows_shape(s), kv_max, splitmix64(seed ^ 0x6b65797300000000ull));
  return rows;
}

core::Verification verify_grads(const core::Shape& s, uint64_t seed, const GradRows& rows,
                                const std::vector<float>& o_all, const std::vector<float>& lse_all,
                                const std::vector<float>& dq_rows, const std::vector<float>& dk_rows,
                                const std::vector<float>& dv_rows, int64_t unwritten) {
  const int64_t dv = s.value_hdim();
  const auto n_q = static_cast<int64_t>(rows.q_rows.size()), n_kv = static_cast<int64_t>(rows.kv_rows.size());
  if (static_cast<int64_t>(o_all.size()) != s.o_elems() || static_cast<int64_t>(lse_all.size()) != s.lse_elems())
    throw std::invalid_argument("verify_grads: o_all / lse_all are not the whole of O and LSE");
  if (static_cast<int64_t>(dq_rows.size()) != n_q * s.hdim || static_cast<int64_t>(dk_rows.size()) != n_kv * s.hdim ||
      static_cast<int64_t>(dv_rows.size()) != n_kv * dv)
    throw std::invalid_argument("verify_grads: dq_rows / dk_rows / dv_rows do not match the rows checked");
  for (int64_t r : rows.q_rows) check_row(s, r);
  const core::Shape key_shape = key_rows_shape(s);
  for (int64_t r : rows.kv_rows)
    if (r < 0 || r >= key_shape.lse_elems())
      throw std::out_of_range("verify_grads: key row " + std::to_string(r) + " outside " + s.label());

  const RowIndex index(s), key_index(key_shape);
  const double scale = core::softmax_scale(s);
  const auto scale_f = static_cast<float>(scale);
  const int64_t group = s.heads / s.kv_heads;

  // dQ: rows grouped by (b, kv head) as verify_rows groups them; row i sums over the keys it sees.
  std::vector<GradErrors> dq_err(static_cast<size_t>(n_q));
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> q_groups;
  for (int64_t p = 0; p < n_q; ++p) {
    const RowCoord c = index.coord(rows.q_rows[p]);
    q_groups[{c.b, kv_head_of(s, c.h)}].push_back(p);
  }
  for (const auto& group_rows : q_groups) {
    const auto& key = group_rows.first;
    const auto& positions = group_rows.second;
    core::KeyRange keys{s.seq_k, 0};
    for (int64_t p : positions) {
      const core::KeyRange r = index.keys_of_row(rows.q_rows[p]);
      if (r.size() == 0) continue;
      keys.begin = std::min(keys.begin, r.begin);
      keys.end = std::max(keys.end, r.end);
    }
    if (keys.end <= keys.begin) keys = {0, 0};
    const auto k = kv_rows(s, index, seed, kTensorK, key.first, key.second, keys, true);
    const auto v = kv_rows(s, index, seed, kTensorV, key.first, key.second, keys, true);
    parallel_for(static_cast<int64_t>(positions.size()), 1, [&](int64_t lo, int64_t hi) {
      for (int64_t g = lo; g < hi; ++g) {
        const int64_t p = positions[g];
        const int64_t row = rows.q_rows[p];
        const core::KeyRange visible = index.keys_of_row(row);
        const int64_t row_keys = visible.size();
        const int64_t first = row_keys > 0 ? visible.begin - keys.begin : 0;
        const float* k_first = k.data() + first * s.hdim;
        const auto q = q_row(s, seed, row);
        const auto d_o = do_row(s, seed, row);
        const RowDelta delta = row_delta(d_o.data(), o_all.data() + row * dv, dv);
        std::vector<double> ref(static_cast<size_t>(s.hdim), 0.0);
        std::vector<float> naive(static_cast<size_t>(s.hdim), 0.0f);
        for (int64_t j = 0; j < row_keys; ++j) {
          const float* kj = k_first + j * s.hdim;
          const ScoreGrad sg = score_grad(s, q.data(), d_o.data(), delta, lse_all[row], kj, v.data() + (first + j) * dv);
          for (int64_t d = 0; d < s.hdim; ++d) {
            ref[d] += sg.ds * double(kj[d]);
            naive[d] += sg.ds_lp * kj[d];
          }
        }
        for (int64_t d = 0; d < s.hdim; ++d)
          dq_err[p].add(dq_rows[p * s.hdim + d], scale * ref[d], round_to(s.dtype, scale_f * naive[d]));
      }
    });
  }

  // dK and dV: key rows grouped by (b, kv head); the group's Q and dO rows (every head of the group,
  // every query row) regenerated once, each key row summing over the query rows that see it.
  std::vector<GradErrors> dk_err(static_cast<size_t>(n_kv)), dv_err(static_cast<size_t>(n_kv));
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> kv_groups;
  for (int64_t p = 0; p < n_kv; ++p) {
    const RowCoord c = key_index.coord(rows.kv_rows[p]);  // c.h is the kv head, c.i the key
    kv_groups[{c.b, c.h}].push_back(p);
  }
  for (const auto& group_rows : kv_groups) {
    const int64_t b = group_rows.first.first, kvh = group_rows.first.second;
    const auto& positions = group_rows.second;
    const core::Shape seq = index.sequence(b);
    // Flat query rows of head h, row i: as RowIndex numbers them.
    const int64_t seq_start = s.varlen() ? s.cu_seqlens()[static_cast<size_t>(b)] : 0;
    auto flat_row = [&](int64_t h, int64_t i) {
      return s.varlen() ? h * s.tokens_q() + seq_start + i : (b * s.heads + h) * s.seq_q + i;
    };
    const int64_t rows_per_head = seq.seq_q;
    std::vector<float> q_all(static_cast<size_t>(group * rows_per_head * s.hdim));
    std::vector<float> do_all(static_cast<size_t>(group * rows_per_head * dv));
    std::vector<int64_t> flat(static_cast<size_t>(group * rows_per_head));
    std::vector<RowDelta> deltas(static_cast<size_t>(group * rows_per_head));
    parallel_for(group * rows_per_head, 64, [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t) {
        const int64_t row = flat_row(kvh * group + t / rows_per_head, t % rows_per_head);
        flat[t] = row;
        const auto q = q_row(s, seed, row);
        const auto d_o = do_row(s, seed, row);
        std::copy(q.begin(), q.end(), q_all.begin() + t * s.hdim);
        std::copy(d_o.begin(), d_o.end(), do_all.begin() + t * dv);
        deltas[t] = row_delta(d_o.data(), o_all.data() + row * dv, dv);
      }
    });
    parallel_for(static_cast<int64_t>(positions.size()), 1, [&](int64_t lo, int64_t hi) {
      for (int64_t g = lo; g < hi; ++g) {
        const int64_t p = positions[g];
        const int64_t j = key_index.coord(rows.kv_rows[p]).i;
        const auto k = kv_rows(s, index, seed, kTensorK, b, kvh, {j, j + 1}, false);
        const auto v = kv_rows(s, index, seed, kTensorV, b, kvh, {j, j + 1}, false);
        std::vector<double> dk_ref(static_cast<size_t>(s.hdim), 0.0), dv_ref(static_cast<size_t>(dv), 0.0);
        std::vector<float> dk_naive(static_cast<size_t>(s.hdim), 0.0f), dv_naive(static_cast<size_t>(dv), 0.0f);
        for (int64_t t = 0; t < group * rows_per_head; ++t) {
          const core::KeyRange visible = seq.keys_of_row(t % rows_per_head);
          if (j < visible.begin || j >= visible.end) continue;
          const float* q = q_all.data() + t * s.hdim;
          const float* d_o = do_all.data() + t * dv;
          const ScoreGrad sg = score_grad(s, q, d_o, deltas[t], lse_all[flat[t]], k.data(), v.data());
          for (int64_t d = 0; d < s.hdim; ++d) {
            dk_ref[d] += sg.ds * double(q[d]);
            dk_naive[d] += sg.ds_lp * q[d];
          }
          for (int64_t d = 0; d < dv; ++d) {
            dv_ref[d] += sg.p * double(d_o[d]);
            dv_naive[d] += sg.p_lp * d_o[d];
          }
        }
        for (int64_t d = 0; d < s.hdim; ++d)
          dk_err[p].add(dk_rows[p * s.hdim + d], scale * dk_ref[d], round_to(s.dtype, scale_f * dk_naive[d]));
        for (int64_t d = 0; d < dv; ++d) dv_err[p].add(dv_rows[p * dv + d], dv_ref[d], round_to(s.dtype, dv_naive[d]));
      }
    });
  }

  auto reduce = [](const std::vector<GradErrors>& parts) {
    GradErrors all;
    for (const GradErrors& e : parts) all.merge(e);
    return all;
  };
  core::Verification v;
  v.checked = true;
  v.seed = seed;
  v.unwritten = unwritten;
  v.grads["dq"] = reduce(dq_err).check(s.dtype, n_q, s.lse_elems());
  v.grads["dk"] = reduce(dk_err).check(s.dtype, n_kv, key_shape.lse_elems());
  v.grads["dv"] = reduce(dv_err).check(s.dtype, n_kv, key_shape.lse_elems());
  v.passed = unwritten == 0;
  for (const auto& [name, g] : v.grads) v.passed = v.passed && g.passed;
  return v;
}

void merge_grad_checks(core::Verification& forward, const core::Verification& grads) {
  forward.grads = grads.grads;
  forward.unwritten += grads.unwritten;
  forward.passed = forward.passed && grads.passed;
}

}  // namespace attnprof::kernels
