#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cost_model.hpp"
#include "core/results.hpp"

using namespace attnprof::core;

namespace {
Shape shape(int64_t b, int64_t h, int64_t kv, int64_t sq, int64_t sk, int64_t d, bool causal, DType t) {
  return Shape{b, h, kv, sq, sk, d, causal, t};
}
}  // namespace

TEST_CASE("unmasked scores: dense, square causal, bottom-right causal with seq_k != seq_q") {
  CHECK(unmasked_scores(shape(1, 1, 1, 5, 3, 64, false, DType::bf16)) == 15);
  // 4x4 causal: rows see 1, 2, 3, 4 keys.
  CHECK(unmasked_scores(shape(1, 1, 1, 4, 4, 64, true, DType::bf16)) == 10);
  // seq_q 3, seq_k 5: offset 2, rows see 3, 4, 5 keys.
  CHECK(unmasked_scores(shape(1, 1, 1, 3, 5, 64, true, DType::bf16)) == 12);
  // seq_q 5, seq_k 3: offset -2, rows see 0, 0, 1, 2, 3 keys.
  CHECK(unmasked_scores(shape(1, 1, 1, 5, 3, 64, true, DType::bf16)) == 6);
  // Decode: one query row sees every key.
  CHECK(unmasked_scores(shape(1, 1, 1, 1, 4096, 64, true, DType::bf16)) == 4096);
  // Square causal in general: n (n + 1) / 2.
  CHECK(unmasked_scores(shape(1, 1, 1, 2048, 2048, 64, true, DType::bf16)) == 2048.0 * 2049 / 2);
}

TEST_CASE("unmasked scores agree with counting row by row") {
  for (int64_t sq : {1, 2, 7, 64, 100})
    for (int64_t sk : {1, 3, 7, 64, 250}) {
      double counted = 0;
      for (int64_t i = 0; i < sq; ++i)
        for (int64_t j = 0; j < sk; ++j) counted += (j <= i + (sk - sq)) ? 1 : 0;
      INFO("seq_q " << sq << " seq_k " << sk);
      CHECK(unmasked_scores(shape(1, 1, 1, sq, sk, 64, true, DType::bf16)) == counted);
    }
}

TEST_CASE("FLOPs: exact for any seq_q and seq_k, FlashAttention's convention beside it") {
  const Shape dense = shape(8, 16, 16, 2048, 2048, 128, false, DType::bf16);
  const Cost c = cost_of(dense, KernelKind::fused);
  CHECK(c.flops_dense == 4.0 * 8 * 16 * 2048 * 2048 * 128);
  CHECK(c.flops == c.flops_dense);
  CHECK(c.flops_fa_convention == c.flops_dense);

  const Shape causal = shape(2, 4, 4, 3, 5, 16, true, DType::fp16);
  for (auto kind : {KernelKind::fused, KernelKind::materialized}) {
    const Cost cc = cost_of(causal, kind);
    CHECK(cc.flops_dense == 4.0 * 2 * 4 * 3 * 5 * 16);        // 7680
    CHECK(cc.flops_fa_convention == 3840);                     // halved by convention
    CHECK(cc.flops == 4.0 * 2 * 4 * 16 * 12);                  // 12 unmasked entries: 6144
  }
}

TEST_CASE("causal FLOPs where the convention is wrong: decode, seq_q > seq_k, square") {
  // Decode: one query row sees every key, so causal changes nothing; the convention halves it.
  const Cost decode = cost_of(shape(1, 32, 8, 1, 4096, 128, true, DType::bf16), KernelKind::fused);
  CHECK(decode.flops == decode.flops_dense);
  CHECK(decode.flops == 2 * decode.flops_fa_convention);
  // seq_q 4096 over seq_k 1024: the first 3072 rows see no key, the rest 1..1024.
  const Cost tall = cost_of(shape(1, 1, 1, 4096, 1024, 64, true, DType::bf16), KernelKind::fused);
  CHECK(tall.flops == 4.0 * 64 * (1024.0 * 1025 / 2));
  CHECK(tall.flops_fa_convention / tall.flops == Approx(4.0 * 1024 / 1025));
  // Square: N (N + 1) / 2 scores, within 1/N of the convention.
  const Cost square = cost_of(shape(1, 1, 1, 1024, 1024, 64, true, DType::bf16), KernelKind::fused);
  CHECK(square.flops / square.flops_fa_convention == Approx(1025.0 / 1024));
}

TEST_CASE("rows with keys; a query row that sees no key needs no Q") {
  CHECK(rows_with_keys(shape(1, 1, 1, 5, 3, 64, false, DType::bf16)) == 5);
  CHECK(rows_with_keys(shape(1, 1, 1, 5, 3, 64, true, DType::bf16)) == 3);
  CHECK(rows_with_keys(shape(1, 1, 1, 3, 5, 64, true, DType::bf16)) == 3);
  // b1 h2 s_q 8 s_k 2 d16 bf16 causal: 2 of 8 rows see a key; K and V are read whole.
  const Shape tall = shape(1, 2, 2, 8, 2, 16, true, DType::bf16);
  const Cost f = cost_of(tall, KernelKind::fused);
  CHECK(f.min_bytes_read == (2.0 * 2 * 16 + 2 * 2.0 * 2 * 16) * 2);
  CHECK(f.min_bytes_write == 2.0 * 8 * 16 * 2 + 2 * 8 * 4);  // O written whole (zeros), LSE too
  // The reference's dense GEMM reads all of Q.
  const Cost m = cost_of(tall, KernelKind::materialized);
  CHECK(m.min_bytes_read == (2.0 * 8 * 16 + 2 * 2.0 * 2 * 16) * 2 + 2 * 3 * 4.0 + 2 * 8 * 2 * 2.0);
}

TEST_CASE("minimum bytes with GQA, fused and materialized") {
  // b2 h8 kv2 s128 d64 fp16: Q, O 131072 elements; K, V 32768 each; LSE 2048 fp32; S/P 262144.
  const Shape s = shape(2, 8, 2, 128, 128, 64, false, DType::fp16);
  const Cost f = cost_of(s, KernelKind::fused);
  CHECK(f.min_bytes_read == (131072 + 2 * 32768) * 2);   // 393216
  CHECK(f.min_bytes_write == 131072 * 2 + 2048 * 4);     // 270336
  CHECK(f.sp_bytes == 0);
  CHECK(f.workspace_bytes == 0);
  CHECK(f.intensity == Approx(f.flops / (393216.0 + 270336.0)));

  const Cost m = cost_of(s, KernelKind::materialized);
  // S fp32 + P fp16 = 6 bytes per score, written once and read once.
  CHECK(m.min_bytes_read == 393216 + 262144 * 6);
  CHECK(m.min_bytes_write == 270336 + 262144 * 6);
  CHECK(m.sp_bytes == 2 * 262144 * 6);
  CHECK(m.workspace_bytes == 262144 * 6);
  CHECK(m.flops == f.flops);
  CHECK(m.intensity < f.intensity);

  CHECK(footprint_bytes(s, KernelKind::fused) == (2 * 131072 + 2 * 32768) * 2 + 2048 * 4);  // 663552
  CHECK(footprint_bytes(s, KernelKind::materialized) == 663552 + 262144 * 6);
}

TEST_CASE("the causal reference: S written whole, read where unmasked; P written and read whole") {
  const Shape c = shape(1, 2, 2, 64, 64, 32, true, DType::fp32);
  const Cost m = cost_of(c, KernelKind::materialized);
  const double scores = 2.0 * 64 * 64, unmasked = 2.0 * 64 * 65 / 2;
  CHECK(m.sp_bytes == scores * 4 + unmasked * 4 + 2 * scores * 4);
  CHECK(m.workspace_bytes == scores * (4 + 4));
  CHECK(m.min_bytes_write == 2.0 * 64 * 32 * 4 + 2 * 64 * 4 + scores * (4 + 4));
  const Cost dense = cost_of(shape(1, 2, 2, 64, 64, 32, false, DType::fp32), KernelKind::materialized);
  CHECK(dense.sp_bytes == 2 * scores * (4 + 4));
  CHECK(m.sp_bytes < dense.sp_bytes);
  const Cost f = cost_of(c, KernelKind::fused);
  CHECK(f.min_bytes_read == 3.0 * 2 * 64 * 32 * 4);
  CHECK(f.min_bytes_write == 2.0 * 64 * 32 * 4 + 2 * 64 * 4);
  CHECK(f.intensity == Approx(f.flops / (f.min_bytes_read + f.min_bytes_write)));
}

TEST_CASE("intensity of the worked example in docs/cost-model.md") {
  // b8 h16 s2048 d128 bf16, non-causal: 2^38 FLOP; Q, K, V, O 64 MiB each, LSE 1 MiB.
  const Shape s = shape(8, 16, 16, 2048, 2048, 128, false, DType::bf16);
  const Cost f = cost_of(s, KernelKind::fused);
  CHECK(f.flops == 274877906944.0);
  CHECK(f.min_bytes_read == 201326592.0);
  CHECK(f.min_bytes_write == 67108864.0 + 1048576.0);
  CHECK(f.intensity == Approx(274877906944.0 / 269484032.0));
  const Cost m = cost_of(s, KernelKind::materialized);
  CHECK(m.workspace_bytes == 3221225472.0);
}

TEST_CASE("the minimum bytes are a lower bound of what the H200 measured, within 1% at causal reference points") {
  // reports/h200-fa-bench/results.json: 144 points measured with DRAM counters. The minimum must not
  // exceed the traffic (counters plus the L2 write-back tail the ranges miss) of any point; at the
  // causal reference, whose S/P traffic dominates, it must also be tight.
  const attnprof::core::Results h200 = read_results(ATTNPROF_SOURCE_DIR "/reports/h200-fa-bench/results.json");
  int checked = 0, causal_reference = 0;
  for (const Record& r : h200.records) {
    const auto rd = r.counters.total.find("dram__bytes_read.sum"), wr = r.counters.total.find("dram__bytes_write.sum");
    if (r.status != Status::ok || rd == r.counters.total.end() || wr == r.counters.total.end()) continue;
    const KernelKind kind = r.kernel == "reference" ? KernelKind::materialized : KernelKind::fused;
    const Cost c = cost_of(r.shape, kind);
    const double moved = rd->second + wr->second + r.counters.dram_write_tail_bytes.value_or(0);
    const double ratio = moved / (c.min_bytes_read + c.min_bytes_write);
    INFO(point_key(r) << ": moved " << moved << " B = " << ratio << "x the minimum");
    CHECK(ratio >= 0.999);
    if (r.kernel == "reference" && r.shape.causal) {
      CHECK(ratio <= 1.02);
      ++causal_reference;
    }
    ++checked;
  }
  CHECK(checked == 144);
  CHECK(causal_reference == 24);
}

namespace {
Shape windowed(int64_t sq, int64_t sk, bool causal, int64_t window) {
  Shape s = shape(1, 1, 1, sq, sk, 64, causal, DType::bf16);
  s.window = window;
  return s;
}
// The definition, element by element: p = i + seq_k - seq_q; p - W < j, and j <= p (causal) or
// j < p + W (not causal).
bool sees(int64_t i, int64_t j, int64_t sq, int64_t sk, bool causal, int64_t window) {
  const int64_t p = i + sk - sq;
  if (causal && j > p) return false;
  if (window > 0 && !(p - window < j)) return false;
  if (window > 0 && !causal && !(j < p + window)) return false;
  return true;
}
}  // namespace

TEST_CASE("keys_of_row: the window's range, row by row") {
  // seq_q 4 = seq_k 4, causal, window 2: row i sees keys i - 1 .. i.
  CHECK(windowed(4, 4, true, 2).keys_of_row(0) == KeyRange{0, 1});
  CHECK(windowed(4, 4, true, 2).keys_of_row(3) == KeyRange{2, 4});
  // Not causal, window 2: i - 1 .. i + 1.
  CHECK(windowed(4, 4, false, 2).keys_of_row(0) == KeyRange{0, 2});
  CHECK(windowed(4, 4, false, 2).keys_of_row(2) == KeyRange{1, 4});
  // Window 1, causal: the diagonal only.
  CHECK(windowed(5, 5, true, 1).keys_of_row(3) == KeyRange{3, 4});
  // seq_q 6 over seq_k 3, not causal, window 2: p = i - 3; rows 0 and 1 see nothing (p + 2 <= 0).
  CHECK(windowed(6, 3, false, 2).keys_of_row(1).size() == 0);
  CHECK(windowed(6, 3, false, 2).keys_of_row(2) == KeyRange{0, 1});
  // A window wider than everything, even one near int64's limit, is no window.
  CHECK(windowed(3, 5, true, int64_t{1} << 62).keys_of_row(0) == windowed(3, 5, true, 0).keys_of_row(0));
  CHECK(windowed(3, 5, false, INT64_MAX).keys_of_row(0) == KeyRange{0, 5});
}

TEST_CASE("window: unmasked scores, rows with keys and the keys seen agree with brute-force counting") {
  for (int64_t sq : {1, 2, 3, 7, 16, 33})
    for (int64_t sk : {1, 2, 5, 16, 40})
      for (bool causal : {false, true})
        for (int64_t w : {0, 1, 2, 3, 7, 16, 39, 40, 41, 100}) {
          const Shape s = windowed(sq, sk, causal, w);
          double counted = 0;
          int64_t rows = 0, lo = sk, hi = 0;
          for (int64_t i = 0; i < sq; ++i) {
            int64_t row = 0;
            for (int64_t j = 0; j < sk; ++j)
              if (sees(i, j, sq, sk, causal, w)) {
                ++row;
                lo = std::min(lo, j);
                hi = std::max(hi, j + 1);
              }
            const KeyRange r = s.keys_of_row(i);
            INFO("seq_q " << sq << " seq_k " << sk << " causal " << causal << " window " << w << " row " << i);
            REQUIRE(r.size() == row);
            if (row > 0) {
              CHECK(sees(i, r.begin, sq, sk, causal, w));
              CHECK(sees(i, r.end - 1, sq, sk, causal, w));
            }
            counted += static_cast<double>(row);
            rows += row > 0 ? 1 : 0;
          }
          INFO("seq_q " << sq << " seq_k " << sk << " causal " << causal << " window " << w);
          CHECK(unmasked_scores(s) == counted);
          CHECK(rows_with_keys(s) == rows);
          const KeyRange seen = keys_seen(s);
          CHECK(seen.size() == (rows > 0 ? hi - lo : 0));
          if (rows > 0) CHECK(seen.begin == lo);
          // Every key seen lies in the union of the rows' ranges: the range has no gap.
          for (int64_t j = seen.begin; j < seen.end; ++j) {
            bool any = false;
            for (int64_t i = 0; i < sq && !any; ++i) any = sees(i, j, sq, sk, causal, w);
            CHECK(any);
          }
        }
}

TEST_CASE("window: a window of seq_k or more changes nothing; the convention ignores the window") {
  for (bool causal : {false, true}) {
    const Shape none = windowed(100, 300, causal, 0);
    for (int64_t w : {int64_t{300 + 100}, int64_t{1000}, int64_t{1} << 40}) {
      const Shape wide = windowed(100, 300, causal, w);
      CHECK(cost_of(wide, KernelKind::fused).flops == cost_of(none, KernelKind::fused).flops);
      CHECK(cost_of(wide, KernelKind::fused).min_bytes_read == cost_of(none, KernelKind::fused).min_bytes_read);
    }
  }
  // Causal square with window W: row i sees min(i + 1, W) keys.
  const Shape local = windowed(4096, 4096, true, 1024);
  const double scores = 1024.0 * 1025 / 2 + (4096.0 - 1024) * 1024;
  const Cost c = cost_of(local, KernelKind::fused);
  CHECK(c.flops == 4.0 * 64 * scores);
  CHECK(c.flops_dense == 4.0 * 64 * 4096 * 4096);
  CHECK(c.flops_fa_convention == c.flops_dense / 2);  // as defined: dense, halved when causal
}

TEST_CASE("window: fused minimum bytes read only the K and V rows some query row sees") {
  // Decode against a 4096-key cache with a 1024-key window: only the last 1024 keys are read.
  Shape decode = shape(2, 8, 2, 1, 4096, 64, true, DType::bf16);
  decode.window = 1024;
  const Cost f = cost_of(decode, KernelKind::fused);
  const double q = 2.0 * 8 * 64 * 2, kv = 2.0 * 2 * 1024 * 2 * 64 * 2;
  CHECK(keys_seen(decode) == KeyRange{3072, 4096});
  CHECK(f.min_bytes_read == q + kv);
  CHECK(f.flops == 4.0 * 2 * 8 * 64 * 1024);
  // Paged: the block-table entries of the pages holding keys 3072 .. 4095 (16-key pages: 64 of 256).
  decode.page_size = 16;
  CHECK(cost_of(decode, KernelKind::fused).min_bytes_read == q + kv + 2.0 * 64 * 4);
  // A window whose keys straddle pages: keys 4091 .. 4095 of 4096 (window 5) touch one page of 16,
  // keys 4080 - 1 = 4079 .. 4095 (window 17) touch two.
  decode.window = 5;
  CHECK(cost_of(decode, KernelKind::fused).min_bytes_read == q + 2.0 * 2 * 5 * 2 * 64 * 2 + 2.0 * 1 * 4);
  decode.window = 17;
  CHECK(cost_of(decode, KernelKind::fused).min_bytes_read == q + 2.0 * 2 * 17 * 2 * 64 * 2 + 2.0 * 2 * 4);
  // The materialized reference's dense GEMMs still read all of K and V.
  decode.page_size = 0;
  decode.window = 1024;
  const Cost m = cost_of(decode, KernelKind::materialized);
  CHECK(m.min_bytes_read >= q + 2.0 * 2 * 4096 * 2 * 64 * 2);
}

namespace {
// A packed batch of these lengths (validated).
Shape packed(std::vector<int64_t> lens, int64_t heads, int64_t kv_heads, int64_t hdim, bool causal, int64_t window) {
  Shape s{static_cast<int64_t>(lens.size()), heads, kv_heads, 1, 1, hdim, causal, DType::bf16};
  s.seq_q = s.seq_k = *std::max_element(lens.begin(), lens.end());
  s.window = window;
  s.seq_lens = std::move(lens);
  s.lengths = "list:test";
  s.validate();
  return s;
}
}  // namespace

TEST_CASE("varlen: FLOPs and minimum bytes are the sums over sequences, checked by brute force") {
  for (bool causal : {false, true})
    for (int64_t window : {0, 1, 5}) {
      const Shape s = packed({1, 7, 3, 16, 7}, 4, 2, 64, causal, window);
      INFO("causal " << causal << " window " << window);
      // Brute force: every sequence's rows, every key each row sees, counted one by one.
      double scores = 0, rows_seen = 0, keys_seen_total = 0;
      for (int64_t len : s.seq_lens) {
        Shape one{1, 1, 1, len, len, 64, causal, DType::bf16};
        one.window = window;
        int64_t lo = len, hi = 0;
        for (int64_t i = 0; i < len; ++i) {
          const KeyRange r = one.keys_of_row(i);
          for (int64_t j = 0; j < len; ++j) scores += (j >= r.begin && j < r.end) ? 1 : 0;
          if (r.size() > 0) {
            rows_seen += 1;
            lo = std::min(lo, r.begin);
            hi = std::max(hi, r.end);
          }
        }
        keys_seen_total += hi > lo ? static_cast<double>(hi - lo) : 0;
      }
      const double per_score = 4.0 * 64;  // two GEMMs, 2 FLOPs per multiply-add, hdim 64
      const Cost fused = cost_of(s, KernelKind::fused);
      CHECK(fused.flops == Approx(per_score * 4 * scores));
      double square = 0;
      for (int64_t len : s.seq_lens) square += static_cast<double>(len * len);
      CHECK(fused.flops_dense == Approx(per_score * 4 * square));
      const double bytes = 2;  // bf16
      CHECK(fused.min_bytes_read == Approx(4 * rows_seen * 64 * bytes + 2 * keys_seen_total * 2 * 64 * bytes));
      CHECK(fused.min_bytes_write == Approx(4 * 34 * 64 * bytes + 4 * 34 * 4.0));  // O and LSE of 34 tokens
      // The materialized cost is the sum of the sequences' too.
      const Cost mat = cost_of(s, KernelKind::materialized);
      double sp = 0;
      for (int64_t b = 0; b < s.batch; ++b) sp += cost_of(s.sequence(b), KernelKind::materialized).sp_bytes;
      CHECK(mat.sp_bytes == Approx(sp));
      CHECK(mat.workspace_bytes == Approx(4 * square * (4 + 2)));
      // What padding to the longest (16) would cost.
      const Cost pad = cost_of(s.padded(), KernelKind::fused);
      CHECK(fused.padded_flops == pad.flops);
      CHECK(fused.padded_min_bytes == pad.min_bytes_read + pad.min_bytes_write);
      CHECK(fused.padded_flops > fused.flops);
    }
}

TEST_CASE("varlen: a dense shape has no padded cost; equal lengths cost what the dense batch costs") {
  const Shape dense{3, 8, 8, 128, 128, 64, true, DType::bf16};
  CHECK(cost_of(dense, KernelKind::fused).padded_flops == 0);
  const Shape same = packed({128, 128, 128}, 8, 8, 64, true, 0);
  const Cost a = cost_of(same, KernelKind::fused), b = cost_of(dense, KernelKind::fused);
  CHECK(a.flops == b.flops);
  CHECK(a.min_bytes_read == b.min_bytes_read);
  CHECK(a.min_bytes_write == b.min_bytes_write);
  CHECK(a.padded_flops == a.flops);  // nothing to pad
  CHECK(footprint_bytes(same, KernelKind::materialized) == footprint_bytes(dense, KernelKind::materialized));
}

namespace {
Shape with_hdim_v(Shape s, int64_t hdim_v) {
  s.hdim_v = hdim_v;
  return s;
}
}  // namespace

TEST_CASE("hdim_v: FLOPs and minimum bytes split Q.K at hdim from P.V at hdim_v, counted by hand") {
  // b1 h2 kv1 s3x5 d16 dv8 bf16, no mask: 15 scores a head, each 2*16 FLOPs of Q.K and 2*8 of P.V.
  const Shape s = with_hdim_v(shape(1, 2, 1, 3, 5, 16, false, DType::bf16), 8);
  const Cost f = cost_of(s, KernelKind::fused);
  CHECK(f.flops == 2 * 15 * (32 + 16));  // 1440
  CHECK(f.flops_dense == 1440);
  CHECK(f.flops_fa_convention == 1440);
  // Read: Q 2*3*16, K 5*16, V 5*8 elements of 2 bytes; written: O 2*3*8 of 2 bytes and LSE 2*3 fp32.
  CHECK(f.min_bytes_read == (96 + 80 + 40) * 2);  // 432
  CHECK(f.min_bytes_write == 48 * 2 + 6 * 4);     // 120
  CHECK(f.intensity == Approx(1440.0 / (432 + 120)));
  const Cost m = cost_of(s, KernelKind::materialized);
  CHECK(m.flops == 1440);
  // S (fp32) and P (bf16) are seq_q x seq_k whatever the head dims: 30 scores.
  CHECK(m.min_bytes_read == 432 + 30 * 4 + 30 * 2);
  CHECK(m.min_bytes_write == 120 + 30 * 4 + 30 * 2);
  CHECK(m.workspace_bytes == 30 * 6);
  CHECK(footprint_bytes(s, KernelKind::fused) == (96 + 48 + 80 + 40) * 2 + 6 * 4);  // 552
  CHECK(footprint_bytes(s, KernelKind::materialized) == 552 + 180);

  // Causal (offset 2: rows see 3, 4 and 5 keys): 12 scores a head; the convention halves the dense 1440.
  const Shape c = with_hdim_v(shape(1, 2, 1, 3, 5, 16, true, DType::bf16), 8);
  CHECK(cost_of(c, KernelKind::fused).flops == 2 * 12 * 48);
  CHECK(cost_of(c, KernelKind::fused).flops_fa_convention == 720);

  // Paged: V's pool is hdim_v wide (b1 kv1, 5 keys in pages of 4: 2 pages).
  Shape p = with_hdim_v(shape(1, 2, 1, 1, 5, 16, false, DType::bf16), 8);
  p.page_size = 4;
  CHECK(cost_of(p, KernelKind::fused).min_bytes_read == (2 * 16 + 5 * 16 + 5 * 8) * 2 + 2 * 4);
  CHECK(footprint_bytes(p, KernelKind::fused) == (2 * 16 + 2 * 8 + 8 * 16 + 8 * 8) * 2 + 2 * 4 + 2 * 4);
}

TEST_CASE("hdim_v: at and around hdim the figures are linear in each head dim") {
  for (const bool causal : {false, true})
    for (const int64_t d : {64, 128, 192})
      for (const int64_t dv : {d - 8, d, d + 8, int64_t{128}}) {
        INFO("hdim " << d << " hdim_v " << dv << " causal " << causal);
        const Shape base = shape(2, 8, 2, 300, 700, d, causal, DType::bf16);
        const Shape s = with_hdim_v(base, dv == d ? 0 : dv);
        const Cost c = cost_of(s, KernelKind::fused);
        const double scores = 2.0 * 8 * unmasked_scores(s);
        CHECK(c.flops == 2 * scores * static_cast<double>(d + dv));
        // The same count as two half-calls: one at (d, d), one at (dv, dv).
        const Cost qk = cost_of(base, KernelKind::fused);
        const Cost pv = cost_of(with_hdim_v(shape(2, 8, 2, 300, 700, dv, causal, DType::bf16), 0), KernelKind::fused);
        CHECK(c.flops == Approx((qk.flops + pv.flops) / 2));
        CHECK(c.flops_fa_convention == Approx((qk.flops_fa_convention + pv.flops_fa_convention) / 2));
        // Q and K at hdim, V and O at hdim_v (the rows that see a key, keys seen: every one here).
        const double q = 2.0 * 8 * rows_with_keys(s) * d * 2, k = 2.0 * 2 * 700 * d * 2, v = 2.0 * 2 * 700 * dv * 2;
        CHECK(c.min_bytes_read == q + k + v);
        CHECK(c.min_bytes_write == 2.0 * 8 * 300 * dv * 2 + 2.0 * 8 * 300 * 4);
        if (dv == d) CHECK(c.flops == 4 * 2.0 * 8 * unmasked_scores(s) * d);  // the equal-dims formula
      }
}

TEST_CASE("hdim_v: DeepSeek-V3's MLA prefill per GPU (serving preset)") {
  // b1 h16 s4096 causal, hdim 192, hdim_v 128: 4096 * 4097 / 2 scores a head.
  const Shape s = with_hdim_v(shape(1, 16, 16, 4096, 4096, 192, true, DType::bf16), 128);
  const Cost c = cost_of(s, KernelKind::fused);
  CHECK(c.flops == 16.0 * 8390656 * 2 * (192 + 128));  // 85,920,317,440
  CHECK(c.flops_fa_convention == 16.0 * 4096 * 4096 * 2 * 320 / 2);
  CHECK(c.min_bytes_read == 16.0 * 4096 * (192 + 192 + 128) * 2);
  CHECK(c.min_bytes_write == 16.0 * 4096 * 128 * 2 + 16.0 * 4096 * 4);
}

namespace {
Shape with_pass(Shape s, Pass pass) {
  s.pass = pass;
  return s;
}
}  // namespace

TEST_CASE("backward FLOPs: five products per unmasked score; FlashAttention's 2.5x beside them") {
  // b2 h4 s3x5 d16 causal fp16: 12 unmasked scores a head (see above); the backward's per score
  // products are S (16), dV (16), dP (16), dQ (16), dK (16) multiply-adds.
  const Shape fwd = shape(2, 4, 4, 3, 5, 16, true, DType::fp16);
  for (auto kind : {KernelKind::fused, KernelKind::materialized}) {
    const Cost b = cost_of(with_pass(fwd, Pass::bwd), kind);
    CHECK(b.flops == 2.0 * 2 * 4 * 5 * 16 * 12);          // 15360
    CHECK(b.flops_dense == 2.0 * 2 * 4 * 5 * 16 * 3 * 5);  // 19200
    CHECK(b.flops_fa_convention == 2.5 * 3840);            // the forward's convention, 2.5x
    const Cost fb = cost_of(with_pass(fwd, Pass::fwd_bwd), kind);
    CHECK(fb.flops == 6144 + 15360);
    CHECK(fb.flops_fa_convention == 3.5 * 3840);           // FlashAttention's fwd_bwd
  }
  // Square, no mask, D = Dv: exactly 2.5x the forward, as the convention says.
  const Shape sq = shape(1, 2, 2, 64, 64, 32, false, DType::bf16);
  CHECK(cost_of(with_pass(sq, Pass::bwd), KernelKind::fused).flops == 2.5 * cost_of(sq, KernelKind::fused).flops);
  // A value head dim of its own: S, dQ, dK are D wide, dV and dP Dv wide.
  const Shape v = with_hdim_v(shape(1, 2, 1, 3, 5, 16, false, DType::bf16), 8);
  CHECK(cost_of(with_pass(v, Pass::bwd), KernelKind::fused).flops == 2.0 * 2 * 15 * (3 * 16 + 2 * 8));
}

TEST_CASE("backward FLOPs count the mask element by element: windows, seq_q != seq_k") {
  for (int64_t sq : {1, 5, 16})
    for (int64_t sk : {3, 16})
      for (bool causal : {false, true})
        for (int64_t window : {0, 2, 7}) {
          Shape s = with_pass(shape(1, 2, 1, sq, sk, 16, causal, DType::bf16), Pass::bwd);
          s.window = window;
          double scores = 0;
          for (int64_t i = 0; i < sq; ++i) scores += static_cast<double>(s.keys_of_row(i).size());
          INFO(s.label());
          CHECK(cost_of(s, KernelKind::fused).flops == 2.0 * 2 * 5 * 16 * scores);
        }
}

TEST_CASE("backward minimum bytes, fused: rows that see a key, keys seen; gradients written whole") {
  // b1 h2 kv1 s_q8 s_k2 d16 bf16 causal: 2 of 8 rows a head see a key; both keys are seen.
  const Shape s = with_pass(shape(1, 2, 1, 8, 2, 16, true, DType::bf16), Pass::bwd);
  const Cost f = cost_of(s, KernelKind::fused);
  // Q, O, dO rows (16 each) and an fp32 LSE for 2 rows x 2 heads; K and V rows of 2 keys of 1 kv head.
  CHECK(f.min_bytes_read == 2 * 2 * (3 * 16 * 2.0 + 4) + 2 * (2 * 16 * 2.0));
  // dQ all 8 rows of 2 heads, dK and dV 2 keys of the kv head (GQA: summed over the group).
  CHECK(f.min_bytes_write == (2 * 8 * 16 + 2 * 2 * 16) * 2.0);
  CHECK(f.sp_bytes == 0);
  CHECK(f.workspace_bytes == 0);
  CHECK(f.intensity == Approx(f.flops / (f.min_bytes_read + f.min_bytes_write)));
  // fwd_bwd: the two minimums, the forward's O and LSE written and read back.
  const Cost fwd = cost_of(with_pass(s, Pass::fwd), KernelKind::fused);
  const Cost fb = cost_of(with_pass(s, Pass::fwd_bwd), KernelKind::fused);
  CHECK(fb.min_bytes_read == fwd.min_bytes_read + f.min_bytes_read);
  CHECK(fb.min_bytes_write == fwd.min_bytes_write + f.min_bytes_write);
}

TEST_CASE("backward minimum bytes, materialized: every pass of the reference counted by hand") {
  // b1 h4 kv2 s8 d16 fp16 causal: Q, O, dO 4*8*16 = 512 elements; K, V 2*8*16 = 256; LSE 32;
  // 256 scores, 144 unmasked (8*9/2 a head).
  const Shape s = with_pass(shape(1, 4, 2, 8, 8, 16, true, DType::fp16), Pass::bwd);
  const Cost m = cost_of(s, KernelKind::materialized);
  const double e = 2, scores = 256, unmasked = 144;
  // S: Q, K read, S written. P: S (unmasked) and LSE read, P written. dV: P, dO. dP: dO, V, dP
  // written. dS: O, dO, P, dP read, dS written. dQ: dS, K. dK: dS, Q. The GEMMs sum GQA's groups.
  const double read = (512 + 256) * e + (unmasked * 4 + 32 * 4) + (scores * e + 512 * e) + (512 + 256) * e +
                      (2 * 512 * e + scores * e + scores * 4) + (scores * e + 256 * e) + (scores * e + 512 * e);
  const double write = scores * 4 + scores * e + scores * 4 + scores * e + (512 + 256 + 256) * e;
  CHECK(m.min_bytes_read == read);
  CHECK(m.min_bytes_write == write);
  CHECK(m.sp_bytes == scores * 4 + unmasked * 4 + 3 * scores * e + 2 * scores * 4 + 3 * scores * e);
  // dP over S, dS over P: the forward's workspace.
  CHECK(m.workspace_bytes == scores * (4 + e));
  CHECK(m.workspace_bytes == cost_of(with_pass(s, Pass::fwd), KernelKind::materialized).workspace_bytes);
  // The reference moves more than the fused minimum; fwd_bwd's workspace serves both passes.
  CHECK(m.min_bytes_read > cost_of(s, KernelKind::fused).min_bytes_read);
  const Cost fb = cost_of(with_pass(s, Pass::fwd_bwd), KernelKind::materialized);
  CHECK(fb.workspace_bytes == m.workspace_bytes);
  CHECK(fb.sp_bytes == m.sp_bytes + cost_of(with_pass(s, Pass::fwd), KernelKind::materialized).sp_bytes);
}

TEST_CASE("backward of a packed batch: the sum over its sequences; footprint holds dO and the gradients") {
  for (auto kind : {KernelKind::fused, KernelKind::materialized}) {
    const Shape s = with_pass(packed({1, 7, 3, 16, 7}, 4, 2, 64, true, 5), Pass::bwd);
    const Cost c = cost_of(s, kind);
    Cost sum;
    for (int64_t b = 0; b < s.batch; ++b) {
      const Cost one = cost_of(s.sequence(b), kind);
      sum.flops += one.flops;
      sum.min_bytes_read += one.min_bytes_read;
      sum.min_bytes_write += one.min_bytes_write;
      sum.workspace_bytes += one.workspace_bytes;
    }
    CHECK(s.sequence(0).pass == Pass::bwd);
    CHECK(c.flops == Approx(sum.flops));
    CHECK(c.min_bytes_read == Approx(sum.min_bytes_read));
    CHECK(c.min_bytes_write == Approx(sum.min_bytes_write));
    CHECK(c.workspace_bytes == Approx(sum.workspace_bytes));
  }
  const Shape d = shape(2, 8, 2, 128, 128, 64, false, DType::fp16);
  const double grads = (2 * 8 * 128 * 64 + 2 * 8 * 128 * 64 + 2 * 2 * 2 * 128 * 64) * 2.0;  // dO, dQ, dK, dV
  CHECK(footprint_bytes(with_pass(d, Pass::bwd), KernelKind::fused) == footprint_bytes(d, KernelKind::fused) + grads);
}

TEST_CASE("the backward's worked example in docs/cost-model.md") {
  const Shape s = with_pass(shape(8, 16, 16, 2048, 2048, 128, false, DType::bf16), Pass::bwd);
  const Cost f = cost_of(s, KernelKind::fused);
  CHECK(f.flops == 687194767360.0);
  CHECK(f.flops == 2.5 * 274877906944.0);
  CHECK(f.min_bytes_read == 336592896.0);
  CHECK(f.min_bytes_write == 201326592.0);
  CHECK(f.intensity == Approx(1277.5).epsilon(1e-4));
  const Cost m = cost_of(s, KernelKind::materialized);
  CHECK(m.min_bytes_read == 9194962944.0);
  CHECK(m.min_bytes_write == 6643777536.0);
  CHECK(m.sp_bytes == 15032385536.0);
  CHECK(m.workspace_bytes == 3221225472.0);
  CHECK(m.intensity == Approx(43.4).epsilon(1e-3));
}

TEST_CASE("quantized KV cache, fused: one byte per K and V element; scales once, or 8 bytes per key row per token") {
  // b4 h32/8 s1x1000 d128 bf16: Q and O 4*32*128 elements, every key seen; K and V 4*8*1000*128 each.
  Shape s = shape(4, 32, 8, 1, 1000, 128, false, DType::bf16);
  const double q = 4.0 * 32 * 128 * 2, kv_elems = 2.0 * 4 * 8 * 1000 * 128, key_rows = 4.0 * 8 * 1000;
  const double write = 4.0 * 32 * 128 * 2 + 4.0 * 32 * 4;  // O in the dtype, LSE in fp32: unchanged
  CHECK(cost_of(s, KernelKind::fused).min_bytes_read == q + kv_elems * 2);
  for (KvDType t : {KvDType::fp8_e4m3, KvDType::int8}) {
    INFO(to_string(t));
    s.kv_dtype = t;
    s.kv_scale = KvScale::tensor;
    Cost c = cost_of(s, KernelKind::fused);
    CHECK(c.min_bytes_read == q + kv_elems + 2 * 4);  // one scale of K, one of V
    CHECK(c.min_bytes_write == write);
    s.kv_scale = KvScale::head;
    CHECK(cost_of(s, KernelKind::fused).min_bytes_read == q + kv_elems + 2 * 8 * 4);
    s.kv_scale = KvScale::token;
    CHECK(cost_of(s, KernelKind::fused).min_bytes_read == q + kv_elems + key_rows * 8);
    // Paged in 16-key pages: the 63 block-table entries of each sequence's pages on top.
    s.page_size = 16;
    CHECK(cost_of(s, KernelKind::fused).min_bytes_read == q + kv_elems + key_rows * 8 + 4.0 * 63 * 4);
    s.page_size = 0;
    // The same FLOPs: quantization changes the bytes only.
    CHECK(cost_of(s, KernelKind::fused).flops == cost_of(shape(4, 32, 8, 1, 1000, 128, false, DType::bf16),
                                                         KernelKind::fused).flops);
  }
  // A sliding window reads the window's key rows and their scales only.
  s.kv_scale = KvScale::token;
  s.window = 100;
  CHECK(cost_of(s, KernelKind::fused).min_bytes_read == q + 4.0 * 8 * 100 * (256 + 8));
}

TEST_CASE("quantized KV cache, materialized: the reference reads bytes and scales, writes the dequantized copy "
          "(its workspace) and its GEMMs read that") {
  Shape s = shape(2, 8, 2, 4, 300, 64, true, DType::fp16);
  const Cost plain = cost_of(s, KernelKind::materialized);
  s.kv_dtype = KvDType::int8;
  s.kv_scale = KvScale::token;
  const Cost m = cost_of(s, KernelKind::materialized);
  const double kv_elems = 2.0 * 2 * 2 * 300 * 64, key_rows = 2.0 * 2 * 300;
  const double copy = kv_elems * 2;  // K and V in fp16
  CHECK(m.min_bytes_read == plain.min_bytes_read + kv_elems * 1 + key_rows * 8);
  CHECK(m.min_bytes_write == plain.min_bytes_write + copy);
  CHECK(m.workspace_bytes == plain.workspace_bytes + copy);
  CHECK(m.sp_bytes == plain.sp_bytes);
  s.kv_scale = KvScale::head;
  CHECK(cost_of(s, KernelKind::materialized).min_bytes_read == plain.min_bytes_read + kv_elems + 2 * 2 * 4);
  // Footprint: K and V at one byte, their scales, the copy in the workspace.
  s.kv_scale = KvScale::token;
  const double q_o = 2.0 * 2 * 8 * 4 * 64 * 2, lse = 2.0 * 8 * 4 * 4;
  CHECK(footprint_bytes(s, KernelKind::fused) == q_o + kv_elems + key_rows * 8 + lse);
  CHECK(footprint_bytes(s, KernelKind::materialized) == q_o + kv_elems + key_rows * 8 + lse + m.workspace_bytes);
}

TEST_CASE("fp8 prefill, fused: Q, K and V at one byte with three scales, O in bf16, LSE in fp32; the same FLOPs") {
  // b2 h16/4 s512x512 d128 (not causal): every query row and key seen.
  Shape s = shape(2, 16, 4, 512, 512, 128, false, DType::bf16);
  const Cost bf16 = cost_of(s, KernelKind::fused);
  s.dtype = DType::fp8_e4m3;
  imply_fp8_kv_format(s);
  const Cost c = cost_of(s, KernelKind::fused);
  const double q = 2.0 * 16 * 512 * 128, kv = 2.0 * 2 * 4 * 512 * 128, o = 2.0 * 16 * 512 * 128, lse = 2.0 * 16 * 512;
  CHECK(c.min_bytes_read == q * 1 + kv * 1 + 3 * 4);  // Q, K, V one byte each; the scales of Q, K and V
  CHECK(c.min_bytes_write == o * 2 + lse * 4);        // O in bf16
  CHECK(bf16.min_bytes_read == q * 2 + kv * 2);
  CHECK(c.flops == bf16.flops);
  CHECK(c.flops_fa_convention == bf16.flops_fa_convention);
  CHECK(c.intensity > bf16.intensity);
  // Causal: the rows and keys seen are all of them still (bottom-right, seq_q = seq_k); FLOPs halve.
  s.causal = true;
  CHECK(cost_of(s, KernelKind::fused).min_bytes_read == q + kv + 12);
  // Footprint: Q, K, V one byte and the three scales, O bf16, LSE fp32.
  CHECK(footprint_bytes(s, KernelKind::fused) == q + kv + 12 + o * 2 + lse * 4);
}

TEST_CASE("fp8 prefill, materialized: bytes and scales read, bf16 copies of Q, K and V written and read, P in bf16") {
  Shape s = shape(2, 8, 2, 64, 96, 64, true, DType::bf16);
  const Cost plain = cost_of(s, KernelKind::materialized);  // the bf16 twin's
  s.dtype = DType::fp8_e4m3;
  imply_fp8_kv_format(s);
  const Cost m = cost_of(s, KernelKind::materialized);
  const double q = 2.0 * 8 * 64 * 64, kv = 2.0 * 2 * 2 * 96 * 64;
  const double copies = (q + kv) * 2;  // Q, K and V in bf16, the reference's workspace
  CHECK(m.min_bytes_read == plain.min_bytes_read + q + kv + 3 * 4);
  CHECK(m.min_bytes_write == plain.min_bytes_write + copies);
  CHECK(m.workspace_bytes == plain.workspace_bytes + copies);
  CHECK(m.sp_bytes == plain.sp_bytes);  // S fp32 and P bf16, as the twin's
  CHECK(m.flops == plain.flops);
  const double o = 2.0 * 8 * 64 * 64, lse = 2.0 * 8 * 64;
  CHECK(footprint_bytes(s, KernelKind::materialized) == q + kv + 12 + o * 2 + lse * 4 + m.workspace_bytes);
}

TEST_CASE("the fp8 prefill example in docs/cost-model.md") {
  Shape s = shape(4, 16, 16, 4096, 4096, 128, false, DType::bf16);
  const Cost bf16 = cost_of(s, KernelKind::fused);
  s.dtype = DType::fp8_e4m3;
  imply_fp8_kv_format(s);
  const Cost fp8 = cost_of(s, KernelKind::fused);
  CHECK(bf16.min_bytes_read == 201326592.0);
  CHECK(bf16.min_bytes_write == 67108864.0 + 1048576.0);
  CHECK(fp8.min_bytes_read == 100663296.0 + 12);
  CHECK(fp8.min_bytes_write == bf16.min_bytes_write);
  CHECK(fp8.flops == 4.0 * 4 * 16 * 4096 * 4096 * 128);
  CHECK((fp8.min_bytes_read + fp8.min_bytes_write) / (bf16.min_bytes_read + bf16.min_bytes_write) == Approx(0.6265).epsilon(1e-3));
  CHECK(std::round(bf16.intensity) == 2040);
  CHECK(std::round(fp8.intensity) == 3256);
}
