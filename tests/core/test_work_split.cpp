// core/work_split.cpp: the tiling of a record's main kernel (launch records first, then the occupancy's
// kernel name), and the persistent grid's split of work tiles over CTAs with its idle share. The names
// read by tiling_of_kernel are tested with the diagnosis that uses them (test_diagnosis.cpp).
#include <catch2/catch.hpp>

#include "core/results.hpp"
#include "core/work_split.hpp"

using namespace attnprof::core;

TEST_CASE("tiling_of_record: the first launch attnprof built, else the occupancy's kernel") {
  Record r;
  CHECK_FALSE(tiling_of_record(r));
  r.occupancy.kernel = "fused_attention_kernel<bf16, d128, small>";
  r.occupancy.grid_blocks = 96;
  auto t = tiling_of_record(r);
  REQUIRE(t);
  CHECK(t->tiling.family == "fused");
  CHECK(t->grid_ctas == 96);

  r.launches.resize(2);
  r.launches[0].name = "void at::native::fill_kernel<float>()";  // not attnprof's: skipped
  r.launches[0].grid = {1000, 1, 1};
  r.launches[1].name = "fused_sm90_kernel<bf16, d128, overlap>";
  r.launches[1].grid = {66, 2, 1};
  t = tiling_of_record(r);
  REQUIRE(t);
  CHECK(t->tiling.family == "fused-sm90");
  CHECK(t->tiling.variant == "overlap");
  CHECK(t->tiling.hdim == 128);
  // The tile headers are the forward kernels': a backward point has no known tiling.
  r.shape.pass = Pass::bwd;
  CHECK_FALSE(tiling_of_record(r));
  r.shape.pass = Pass::fwd;
  CHECK(t->grid_ctas == 132);
}

TEST_CASE("persistent_split: round-robin tiles of a non-causal shape, and when there is no split") {
  const auto sm90 = tiling_of_kernel("fused_sm90_kernel<bf16, d128, overlap>");
  REQUIRE(sm90);
  // 1024 query rows are 8 tiles of 128 per (batch, head): 160 tiles over 132 CTAs, 28 of them take two.
  const Shape s{1, 20, 20, 1024, 1024, 128, false, DType::bf16};
  const auto split = persistent_split(*sm90, s, 132);
  REQUIRE(split);
  CHECK(split->tiles == 160);
  CHECK(split->grid == 132);
  CHECK(split->tiles_per_cta_max == 2);
  CHECK(split->tiles_per_cta_mean == Approx(160.0 / 132));
  CHECK(split->work_max == 2);
  CHECK(split->work_mean == Approx(160.0 / 132));
  CHECK(split->idle_share == Approx(1 - 160.0 / 132 / 2));
  CHECK_FALSE(split->rotated);
  // Evenly divided: no idle share.
  const auto even = persistent_split(*sm90, s, 80);
  REQUIRE(even);
  CHECK(even->idle_share == Approx(0).margin(1e-12));
  CHECK_FALSE(persistent_split(*sm90, s, 160));  // one CTA per tile: not persistent
  CHECK_FALSE(persistent_split(*sm90, s, 0));
  const auto fused = tiling_of_kernel("fused_attention_kernel<bf16, d128, fast>");
  REQUIRE(fused);
  CHECK_FALSE(persistent_split(*fused, s, 132));  // one query tile per CTA
}

TEST_CASE("persistent_split: with a causal mask, work counts key tiles and the busiest CTA sets the idle share") {
  const auto sm90 = tiling_of_kernel("fused_sm90_kernel<bf16, d128, overlap>");
  REQUIRE(sm90);
  const Shape s{2, 16, 16, 4096, 4096, 128, true, DType::bf16};
  const auto split = persistent_split(*sm90, s, 132);
  REQUIRE(split);
  CHECK(split->tiles == 32 * 32);
  CHECK(split->work_max >= split->work_mean);
  CHECK(split->work_mean > split->tiles_per_cta_mean);  // a tile costs more than one key tile on average
  CHECK(split->idle_share >= 0);
  CHECK(split->idle_share < 1);
  CHECK(split->idle_share == Approx(1 - split->work_mean / split->work_max));
}

TEST_CASE("persistent_split: an fp8 point's key tiles are fp8's 128 keys at hdim 256") {
  const auto sm90 = tiling_of_kernel("fused_sm90_kernel<fp8_e4m3, d256, serial>");
  REQUIRE(sm90);
  CHECK(sm90->hdim == 256);
  Shape s{2, 16, 16, 4096, 4096, 256, true, DType::fp8_e4m3};
  s.kv_dtype = KvDType::fp8_e4m3;
  const auto fp8 = persistent_split(*sm90, s, 132);
  REQUIRE(fp8);
  // The costs count 128-key tiles, not the 80-key tiles of the 16-bit kernel at 256 columns.
  Shape s16 = s;
  s16.dtype = DType::bf16;
  s16.kv_dtype = KvDType::none;
  const auto bf16 = persistent_split(*sm90, s16, 132);
  REQUIRE(bf16);
  CHECK(fp8->work_mean < bf16->work_mean);  // fewer, wider key tiles per work tile
}
