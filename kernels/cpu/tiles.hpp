// Building blocks of the CPU attention kernels, fp32 throughout. Tensor layout as in core/shape.hpp.
// A key block holds kBlockKeys keys: QK^T works on K transposed into a (hdim, kBlockKeys) panel so that
// its innermost loop runs over keys with unit stride and vectorises without reassociating a sum.
// The tile functions are compiled for several x86-64 levels and picked at load time (AVX-512, AVX2+FMA,
// baseline), so one binary uses the vector width of the machine it runs on.
#pragma once
#include <cstdint>
#include <vector>

#include "core/shape.hpp"

namespace attnprof::kernels::cpu {

inline constexpr int64_t kBlockKeys = 64;   // keys per block: 4 AVX-512 / 8 AVX2 registers a row
inline constexpr int64_t kBlockRows = 32;   // query rows one task owns (the unit of parallelism)

// Where a (batch, head) finds its Q/O rows and its K/V (grouped-query: head h reads h / group). Of a
// packed batch (core/shape.hpp), sequence b's rows at head h; Q and K rows are hdim apart, V and O rows
// value_hdim() apart, in both layouts.
struct HeadView {
  int64_t q_offset = 0;   // element offset of row 0 of this head in Q
  int64_t o_offset = 0;   // ... in O
  int64_t kv_offset = 0;  // element offset of key 0 of its kv head in K
  int64_t v_offset = 0;   // ... in V
  int64_t lse_offset = 0; // offset of row 0 in LSE
};
HeadView head_view(const core::Shape&, int64_t batch_head);

// The units of work of a CPU kernel: kBlockRows query rows of one (sequence, head). `shape` is the
// sequence's own shape (core::Shape::sequence: dense, batch 1, for a packed batch; the whole shape
// otherwise), whose keys_of_row gives its rows' masks; score_offset is where the (seq_q, seq_k) score
// block of its (sequence, head) starts in a materialised S of every head, packed one after another.
struct RowBlock {
  const core::Shape* shape = nullptr;
  HeadView view;
  int64_t i0 = 0, rows = 0;
  int64_t score_offset = 0;
};
struct RowBlocks {
  std::vector<core::Shape> sequences;  // one per sequence of a packed batch; the shape itself when dense
  std::vector<RowBlock> blocks;        // every (sequence, head)'s row blocks, in memory order
  int64_t score_elems = 0;             // sum over (sequence, head) of seq_q * seq_k
};
RowBlocks row_blocks(const core::Shape&);
// RowBlocks::score_elems without building the blocks: batch * heads * seq_q * seq_k dense, heads * the
// sum of len^2 packed.
int64_t score_elems(const core::Shape&);

// Key blocks of kBlockKeys keys of one kv head of one sequence, with the row blocks of every query head
// of its group whose keys reach the block: the unit of the backward's dK and dV (GQA's reduction over
// the group's heads and rows stays inside one task).
struct KeyBlock {
  const core::Shape* shape = nullptr;
  int64_t kv_offset = 0, v_offset = 0;  // key 0 of the kv head in K (dK) and V (dV)
  int64_t j0 = 0, keys = 0;
  std::vector<const RowBlock*> rows;    // the group's row blocks whose keys reach this block
};
// Every key of every (sequence, kv head) in one block: the blocks point into `work`.
std::vector<KeyBlock> key_blocks(const RowBlocks& work);

// The keys any of query rows i0 .. i0 + rows - 1 sees (core::Shape::keys_of_row: bottom-right causal
// mask, sliding window): one range, from the first row's begin to the last row's end.
core::KeyRange block_keys(const core::Shape&, int64_t i0, int64_t rows);

// Packs keys [0, keys) of k (row stride hdim) into kt (hdim, kBlockKeys), zero-filling the unused
// columns so tile loops can always run over kBlockKeys.
void pack_keys_transposed(const float* k, int64_t keys, int64_t hdim, float* kt);

// s[r * ld_s + j] = scale * q[r] . k[j] for r < rows, j < keys (keys <= kBlockKeys); kt from
// pack_keys_transposed, q rows with stride hdim.
void qk_tile(const float* q, int64_t rows, const float* kt, int64_t keys, int64_t hdim, float scale,
             float* s, int64_t ld_s);

// acc[r * hdim + d] += sum_{j < keys} p[r * ld_p + j] * v[j * hdim + d] for r < rows.
void pv_tile(const float* p, int64_t ld_p, int64_t rows, const float* v, int64_t keys, int64_t hdim,
             float* acc);

// x[i] = exp(x[i] - shift) for i < n, with x[i] <= shift; returns the sum of the results (fp32).
// A vectorisable exp (Cody-Waite reduction, degree-7 polynomial; within 2 fp32 ulps of std::exp,
// results below 2^-126 flushed to 0): a scalar std::exp call per score would cost as much as the two
// GEMMs' arithmetic for that score.
float exp_shifted_sum(float* x, int64_t n, float shift);

// D = rowsum(dO * O) of one query row (n = hdim_v): the backward's softmax-gradient term.
float row_delta(const float* d_o, const float* o, int64_t n);

// An accumulator written once: out[i] = round_to(dtype, acc[i] * scale) for i < n (acc is scaled and
// rounded in place on the way).
void write_accumulator(core::DType dtype, float* acc, int64_t n, float scale, float* out);

// x[i] = kernels::round_to(dtype, x[i]) for i < n, in a form that vectorises (the scalar function is
// out of line in verify.cpp, shared with the GPU side). tests/kernels/cpu/test_tiles.cpp checks the
// two agree.
void round_in_place(core::DType, float* x, int64_t n);

}  // namespace attnprof::kernels::cpu
