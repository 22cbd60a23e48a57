// One point of a sweep: the attention problem's shape and element type.
// Layout convention for every kernel: Q is [batch, heads, seq_q, hdim], K [batch, kv_heads, seq_k,
// hdim], V [batch, kv_heads, seq_k, hdim_v] and O [batch, heads, seq_q, hdim_v], row-major and
// contiguous; LSE is [batch, heads, seq_q] in fp32. hdim_v is the value head dim (DeepSeek's MLA
// prefill: hdim 192, hdim_v 128); 0, the default, is hdim itself (value_hdim() gives the width).
// Query head h reads kv head h / (heads / kv_heads) (grouped-query attention).
// Masks, with p = i + (seq_k - seq_q) the aligned position of query row i (bottom-right alignment,
// FlashAttention >= 2.1):
//   causal          row i sees key j iff j <= p.
//   window W >= 1   sliding-window (local) attention as Mistral and Gemma use it: row i sees key j iff
//                   p - W < j, and also j <= p when causal, or j < p + W when not (FlashAttention's
//                   window_size = (W-1, 0) causal, (W-1, W-1) not). window 0 (the default) is no window.
// A row that sees no key has O = 0 and LSE = -inf. Shape::keys_of_row gives the keys a row sees.
// Pass (training's backward): fwd computes O and LSE; bwd computes dQ, dK, dV (shaped as Q, K and V,
// dense) from Q, K, V, O, dO (shaped as O) and LSE, the forward's outputs given as inputs; fwd_bwd
// computes both, the forward first. dS = P * (dP - D) with D = rowsum(dO * O), FlashAttention's
// formulation; a row that sees no key contributes nothing to dK and dV and has dQ = 0.
// Paged KV cache (page_size > 0): K and V live in pools of pages [pages, kv_heads, page_size, hdim]
// (hdim_v for V; one page of one kv head is contiguous) and an int32 block table [batch, pages_per_seq] maps
// sequence b's logical page p to its physical page; the pages are shuffled as an allocator leaves
// them (kernels/common/paged.hpp). Logical element (b, kv head, j, d) is the same value either way.
// Quantized KV cache (kv_dtype fp8_e4m3 or int8; core::KvDType): K and V hold one byte per element, and
// element x is q * scale with q the stored fp8 (OCP E4M3, saturating) or int8 (symmetric, [-127, 127])
// value. Q, O (and LSE) keep the dtype. kv_scale says how many scales: one per tensor, one per kv head,
// or one per token (one per row of K and one per row of V, in the row's own place: the scale of the K
// row that starts at element e of K's buffer, page pool or packed tensor is k_scale[e / hdim], V's
// v_scale[e / value_hdim()]). The scales are float32 (AttentionArgs::k_scale, v_scale). A forward pass
// only; kernels/common/quant.hpp has the quantizer every backend and the float64 reference share.
// fp8 prefill (dtype fp8_e4m3; Shape::quantized_q): attention on fp8 tensor cores. Q, K and V are stored
// as OCP E4M3 bytes, each tensor with ONE float32 scale (AttentionArgs::q_scale, k_scale, v_scale; the
// static scale of quant.hpp, the inputs' range over 448): a stored element x is
// decode(encode(x / scale)) * scale. O is written in bf16 (Shape::out_dtype), LSE in fp32. Its K and V
// are a quantized KV cache of kv_dtype fp8_e4m3 and kv_scale tensor, which the shape holds
// (imply_fp8_kv_format), so everything said above of a quantized cache applies to them; the label names
// no " kv-..." (the format is the dtype's). A forward pass only.
// kv_splits: how many parts a split-KV kernel cuts each sequence's keys into; 0 = its heuristic.
// Variable-length batch (seq_lens not empty; FlashAttention's varlen API, cuDNN's ragged layout): batch
// sequences of seq_lens[b] tokens each, packed end to end, self-attention (sequence b has seq_q = seq_k =
// seq_lens[b]; the shape's seq_q and seq_k hold the longest). The masks above apply per sequence. Packed
// layout, head-major like the dense one: Q and O are [heads, total_tokens, hdim], K and V [kv_heads,
// total_tokens, hdim] (V and O hdim_v wide), LSE [heads, total_tokens]; sequence b's rows of head h start at token
// cu_seqlens[b], where cu_seqlens is the int32 [batch + 1] prefix sum of seq_lens (AttentionArgs
// carries it). Head-major keeps a head's rows hdim apart, as in the dense layout, so the dense kernels'
// tile loads carry over (FlashAttention packs token-major, [total_tokens, heads, hdim]: the bshd layout
// of a batch of one). A packed batch of one sequence is the dense layout of batch 1.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace attnprof::core {

// fp8_e4m3 (prefill on fp8 tensor cores, above): Q, K and V are stored as OCP E4M3 bytes with one
// float32 scale per tensor each (AttentionArgs::q_scale, k_scale, v_scale); O is bf16 (Shape::out_dtype).
enum class DType { fp32, fp16, bf16, fp8_e4m3 };

// How K and V are stored (see above): in the dtype (none), or quantized to one byte per element.
enum class KvDType { none, fp8_e4m3, int8 };
// One scale for all of K (of V), one per kv head, or one per token.
enum class KvScale { tensor, head, token };

// Which pass of attention a point measures (see above).
enum class Pass { fwd, bwd, fwd_bwd };

// Largest tensor a shape may name (2^48 elements, 512 TiB in bf16): kernels index in 64 bits, and a
// shape that does not fit the device is that point's `oom`, not an input error.
inline constexpr int64_t kMaxTensorElems = int64_t{1} << 48;

// A value head dim is a multiple of kHdimVStep (16-byte rows in fp16/bf16, as every tensor-core kernel
// loads them) and at most kMaxHdimV (twice the largest head dim any built-in kernel tiles).
inline constexpr int64_t kHdimVStep = 8;
inline constexpr int64_t kMaxHdimV = 512;

std::string_view to_string(DType);
DType parse_dtype(std::string_view);  // throws InputError naming the token
int dtype_bytes(DType);  // 4, 2, 2, 1: an element of Q, K and V as stored (O's: Shape::out_dtype)
std::string_view to_string(Pass);  // "fwd", "bwd", "fwd_bwd"
Pass parse_pass(std::string_view);  // throws InputError naming the token
// "fp8_e4m3", "int8"; none has no name of its own (it is the dtype's: Shape::kv_dtype_name).
std::string_view to_string(KvDType);
// fp8_e4m3 (also "fp8", "e4m3") or int8; a float dtype name is none when it names `dtype`. Throws
// InputError naming the token otherwise (an unknown name, or a float dtype other than the point's:
// with dtype fp8_e4m3, whose K and V are fp8, any float name).
KvDType parse_kv_dtype(std::string_view, DType dtype);
// The quantized format a name gives (fp8_e4m3, fp8, e4m3, int8); nullopt for any other name.
std::optional<KvDType> quantized_kv_dtype_named(std::string_view);
std::string_view to_string(KvScale);  // "tensor", "head", "token"
KvScale parse_kv_scale(std::string_view);  // throws InputError naming the token
// The largest magnitude a quantized element holds: 448 for fp8 E4M3, 127 for int8; 0 for none.
double kv_quant_max(KvDType);

// Keys [begin, end) one query row sees; begin == end when it sees none.
struct KeyRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
  friend bool operator==(const KeyRange&, const KeyRange&) = default;
};

struct Shape {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t kv_heads = 1;
  int64_t seq_q = 1;
  int64_t seq_k = 1;
  int64_t hdim = 64;
  bool causal = false;
  DType dtype = DType::bf16;
  int64_t page_size = 0;  // keys per KV page; 0 = contiguous K and V
  int64_t kv_splits = 0;  // split-KV parts; 0 = the kernel's heuristic
  int64_t window = 0;     // sliding-window width in keys (see above); 0 = no window
  // Variable-length batch (see above): the length of each sequence; empty = dense. `lengths` is the
  // distribution they were drawn from as the sweep spec wrote it ("uniform:512:4096", "list:8/16"),
  // `lengths_seed` the draw's seed (core/lengths.hpp).
  std::vector<int64_t> seq_lens{};
  std::string lengths{};
  int64_t lengths_seed = 0;
  // The value head dim (V's and O's rows); 0 = hdim. A shape whose hdim_v equals hdim holds 0 (the
  // sweep grammar and from_json write it so), so that the two spellings are one point.
  int64_t hdim_v = 0;
  Pass pass = Pass::fwd;
  // Quantized KV cache (see above); kv_scale is tensor whenever kv_dtype is none.
  KvDType kv_dtype = KvDType::none;
  KvScale kv_scale = KvScale::tensor;

  // "b8 h16/16 s2048x2048 d128 causal bf16": stable, human-readable, used as the point's key
  // ("d192v128" when the value head dim differs; " win4096" follows the dtype when a window is set; a packed batch ends in
  // " varlen uniform:512:4096 seed1 tokens16384", a list in " varlen list:512/1024"; then " bwd" or
  // " fwd_bwd" for a backward pass, nothing for the forward; " kv-int8/token" after the dtype for a
  // quantized KV cache, nothing for dtype fp8_e4m3, whose K and V are fp8 by definition).
  std::string label() const;
  // Throws InputError when the shape is impossible (non-positive sizes, kv_heads not dividing heads,
  // a negative window, an hdim_v other than 0 or a multiple of kHdimVStep up to kMaxHdimV; a packed
  // batch whose seq_lens disagree with batch, seq_q and seq_k, hold a
  // length below 1, more than 2^31 - 1 tokens (cu_seqlens is int32) or sit in a paged cache; a
  // backward pass over a paged cache or a split count, which are inference's; a quantized KV cache in
  // a backward pass, or a kv_scale set without one; dtype fp8_e4m3 in a backward pass or with a KV
  // format other than fp8_e4m3 per tensor).
  void validate() const;
  bool windowed() const { return window > 0; }
  // The point runs the backward pass (bwd or fwd_bwd).
  bool backward() const { return pass != Pass::fwd; }
  // The width of V's and O's rows: hdim_v, or hdim when it is 0.
  int64_t value_hdim() const { return hdim_v > 0 ? hdim_v : hdim; }
  // V and O are narrower or wider than Q and K (a kernel must say it runs this: kernels/registry.hpp).
  bool distinct_hdim_v() const { return value_hdim() != hdim; }
  bool varlen() const { return !seq_lens.empty(); }
  // K and V are stored quantized (kv_dtype fp8_e4m3 or int8).
  bool quantized_kv() const { return kv_dtype != KvDType::none; }
  // Q is stored quantized too (dtype fp8_e4m3, fp8 prefill), and O is then written in out_dtype().
  bool quantized_q() const { return dtype == DType::fp8_e4m3; }
  // The dtype O is written in: bf16 for fp8 prefill, else the dtype. The float references compute in it
  // too (P rounded to it; an fp8 point's dequantized Q, K and V held in it).
  DType out_dtype() const { return quantized_q() ? DType::bf16 : dtype; }
  // Bytes of one stored K or V element: 1 when quantized, else the dtype's.
  int kv_elem_bytes() const;
  // Scales of K (and of V) as allocated: 1 per tensor, kv_heads per head, one per row of the K buffer
  // per token (kv_buffer_elems() / hdim); 0 when K and V are not quantized.
  int64_t kv_scale_elems() const;
  // Query (key) tokens of the whole batch: batch * seq_q (seq_k) dense, the sum of seq_lens packed.
  int64_t tokens_q() const;
  int64_t tokens_k() const { return varlen() ? tokens_q() : batch * seq_k; }
  // The batch + 1 prefix sums of seq_lens (sequence b's first token); empty when dense.
  std::vector<int64_t> cu_seqlens() const;
  // Sequence b of a packed batch as a dense shape of batch 1 (seq_q = seq_k = seq_lens[b]); the shape
  // itself when dense.
  Shape sequence(int64_t b) const;
  // The dense batch a packed one pads to: every sequence at the longest length. Itself when dense.
  Shape padded() const;
  // The keys query row i (0 <= i < seq_q) sees under the causal mask and the window.
  KeyRange keys_of_row(int64_t i) const {
    const int64_t p = i + seq_k - seq_q;
    // A window of seq_q + seq_k keys or more lets every row see what it would without one; the clamp
    // keeps p + w from overflowing.
    const int64_t w = window < seq_q + seq_k ? window : seq_q + seq_k;
    int64_t end = seq_k;
    if (causal) end = p + 1;
    else if (windowed()) end = p + w;
    end = end < 0 ? 0 : (end > seq_k ? seq_k : end);
    int64_t begin = windowed() ? p - w + 1 : 0;
    begin = begin < 0 ? 0 : (begin > end ? end : begin);
    return {begin, end};
  }
  // Elements of each tensor: Q, K (kv_elems; also V's when hdim_v is hdim), V, O and LSE.
  int64_t q_elems() const { return heads * tokens_q() * hdim; }
  int64_t kv_elems() const { return kv_heads * tokens_k() * hdim; }
  int64_t v_elems() const { return kv_heads * tokens_k() * value_hdim(); }
  int64_t o_elems() const { return heads * tokens_q() * value_hdim(); }
  int64_t lse_elems() const { return heads * tokens_q(); }
  // The backward's tensors: dO as O, dQ as Q, dK as K and dV as V (kv_heads wide: GQA's gradients are
  // summed over each group's query heads).
  bool paged() const { return page_size > 0; }
  // Pages of one sequence, and entries of the block table (0 when contiguous).
  int64_t pages_per_seq() const { return paged() ? (seq_k + page_size - 1) / page_size : 0; }
  int64_t block_table_elems() const { return batch * pages_per_seq(); }
  // Elements of the K buffer as allocated: the page pool when paged (the last page of a sequence is
  // padded to page_size), else kv_elems(). v_buffer_elems: V's, hdim_v wide.
  int64_t kv_buffer_elems() const {
    return paged() ? block_table_elems() * kv_heads * page_size * hdim : kv_elems();
  }
  int64_t v_buffer_elems() const {
    return paged() ? block_table_elems() * kv_heads * page_size * value_hdim() : v_elems();
  }

  friend bool operator==(const Shape&, const Shape&) = default;
};

// The softmax scale every kernel uses: 1 / sqrt(hdim).
double softmax_scale(const Shape&);

// dtype fp8_e4m3 implies its KV format (fp8 prefill, above): kv_dtype none becomes fp8_e4m3, with
// kv_scale tensor. Throws InputError (naming the shape) when the shape names another format, kv_dtype
// int8 or kv_scale head or token. Nothing for any other dtype. The sweep grammar, single shapes and
// from_json call it, so an fp8 point reads the same however it was written.
void imply_fp8_kv_format(Shape&);

void to_json(nlohmann::json&, const Shape&);
void from_json(const nlohmann::json&, Shape&);
void to_json(nlohmann::json&, DType);
void from_json(const nlohmann::json&, DType&);

}  // namespace attnprof::core
