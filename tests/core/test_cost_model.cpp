#include <catch2/catch.hpp>

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
