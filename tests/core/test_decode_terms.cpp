// core/decode_terms.cpp: which shapes are decode points, the tokens and KV-cache bytes a call moves,
// the combine stage's share of a split-KV call (from stages, else from launch records), the KV tile.
#include <catch2/catch.hpp>

#include <string>

#include "core/decode_terms.hpp"
#include "core/results.hpp"

using namespace attnprof::core;

TEST_CASE("is_decode: a few query rows per sequence against many keys per row") {
  CHECK(is_decode(Shape{64, 32, 8, 1, 4096, 128, false, DType::bf16}));
  CHECK(is_decode(Shape{8, 32, 8, kDecodeMaxSeqQ, kDecodeMaxSeqQ * kDecodeMinKeysPerQuery, 128, true, DType::bf16}));
  CHECK_FALSE(is_decode(Shape{8, 32, 8, kDecodeMaxSeqQ + 1, 8192, 128, true, DType::bf16}));  // a prefill chunk
  CHECK_FALSE(is_decode(Shape{8, 32, 8, 4, 63, 128, false, DType::bf16}));  // fewer than 16 keys per row
  Shape backward{64, 32, 8, 1, 4096, 128, false, DType::bf16};
  backward.pass = Pass::bwd;
  CHECK_FALSE(is_decode(backward));  // training's backward reads no KV cache
  CHECK(generated_tokens(Shape{64, 32, 8, 4, 4096, 128, false, DType::bf16}) == 256);
}

TEST_CASE("kv_cache_bytes: K and V rows of every key, of the window's keys with a window") {
  const Shape s{2, 32, 8, 1, 1000, 128, false, DType::bf16};
  CHECK(kv_cache_bytes(s) == 2.0 * 8 * 1000 * (128 + 128) * 2);
  Shape mla = s;
  mla.hdim = 192;
  mla.hdim_v = 128;
  CHECK(kv_cache_bytes(mla) == 2.0 * 8 * 1000 * (192 + 128) * 2);
  Shape windowed{1, 8, 8, 1, 1000, 64, true, DType::fp16};
  windowed.window = 100;
  CHECK(kv_cache_bytes(windowed) == 1.0 * 8 * 100 * (64 + 64) * 2);  // one row sees its last 100 keys
}

TEST_CASE("combine_share: the stage named combine, else the launch, by its function name") {
  Record staged;
  staged.stages = {Stage{"attention", {}, 90, 0, 0.75, 0}, Stage{"Combine", {}, 30, 0, 0.25, 0}};
  const auto share = combine_share(staged);
  REQUIRE(share);
  CHECK(share->name == "Combine");
  CHECK(share->time_share == 0.25);

  Record launched;
  launched.launches.resize(2);
  launched.launches[0].name = "void ns::flash_fwd_splitkv_kernel<Traits<128>>(Params)";
  launched.launches[0].duration_us = 30;
  launched.launches[1].name = "void ns::flash_fwd_splitkv_combine_kernel<Traits<128>, 4>(Params)";
  launched.launches[1].duration_us = 10;
  const auto from_launches = combine_share(launched);
  REQUIRE(from_launches);
  CHECK(from_launches->name == "flash_fwd_splitkv_combine_kernel");
  CHECK(from_launches->time_share == Approx(0.25));

  Record one_launch;
  one_launch.launches.resize(1);
  one_launch.launches[0].name = "combine";
  one_launch.launches[0].duration_us = 5;
  CHECK_FALSE(combine_share(one_launch));  // a single launch has no separate combine stage
  Record no_combine;
  no_combine.stages = {Stage{"qk", {}, 1, 0, 0.5, 0}, Stage{"pv", {}, 1, 0, 0.5, 0}};
  CHECK_FALSE(combine_share(no_combine));
}

TEST_CASE("kv_tile_keys: the plan's block_n when the kernel records one") {
  Record r;
  CHECK_FALSE(kv_tile_keys(r));
  r.plan["block_n"] = 0;
  CHECK_FALSE(kv_tile_keys(r));
  r.plan["block_n"] = 64;
  CHECK(kv_tile_keys(r) == 64);
}

TEST_CASE("kv_cache_bytes of a quantized cache: one byte per element, 8 bytes of scales per key row per token") {
  Shape s{2, 32, 8, 1, 1000, 128, false, DType::bf16};
  for (KvDType t : {KvDType::fp8_e4m3, KvDType::int8}) {
    s.kv_dtype = t;
    s.kv_scale = KvScale::head;
    CHECK(kv_cache_bytes(s) == 2.0 * 8 * 1000 * (128 + 128));
    s.kv_scale = KvScale::tensor;
    CHECK(kv_cache_bytes(s) == 2.0 * 8 * 1000 * (128 + 128));
    s.kv_scale = KvScale::token;
    CHECK(kv_cache_bytes(s) == 2.0 * 8 * 1000 * (128 + 128 + 8));
  }
  s.hdim_v = 64;  // a K row and a V row of their own widths, one scale each
  CHECK(kv_cache_bytes(s) == 2.0 * 8 * 1000 * (128 + 64 + 8));
}
