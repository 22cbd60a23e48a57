// core/shape.cpp: dtype names, the label that keys every point, validate's refusals, the packed batch's
// token counts and prefix sums, the keys each row sees under the masks, the JSON round trip, a
// quantized KV cache's names, label, sizes, refusals and JSON fields, and fp8 prefill's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/shape.hpp"

using namespace attnprof::core;

namespace {

Shape packed(std::vector<int64_t> lens, const std::string& lengths = "list:test") {
  Shape s{static_cast<int64_t>(lens.size()), 4, 2, 1, 1, 64, true, DType::bf16};
  s.seq_q = s.seq_k = *std::max_element(lens.begin(), lens.end());
  s.seq_lens = std::move(lens);
  s.lengths = lengths;
  return s;
}

// The shape with its KV cache stored as `t`, with scales `g`.
Shape quantized(Shape s, KvDType t, KvScale g) {
  s.kv_dtype = t;
  s.kv_scale = g;
  return s;
}

}  // namespace

TEST_CASE("dtypes: names, spellings read back, sizes; an unknown one named in the error") {
  CHECK(to_string(DType::fp32) == "fp32");
  CHECK(to_string(DType::fp16) == "fp16");
  CHECK(to_string(DType::bf16) == "bf16");
  CHECK(parse_dtype("bfloat16") == DType::bf16);
  CHECK(parse_dtype("half") == DType::fp16);
  CHECK(parse_dtype("f32") == DType::fp32);
  CHECK(dtype_bytes(DType::fp32) == 4);
  CHECK(dtype_bytes(DType::bf16) == 2);
  CHECK_THROWS_WITH(parse_dtype("int8"), Catch::Contains("'int8'"));
}

TEST_CASE("label: every field that makes a point distinct, in a stable order") {
  CHECK(Shape{8, 16, 16, 2048, 2048, 128, true, DType::bf16}.label() == "b8 h16/16 s2048x2048 d128 causal bf16");
  Shape s{1, 16, 16, 4096, 4096, 192, false, DType::fp16};
  s.hdim_v = 128;
  s.window = 512;
  CHECK(s.label() == "b1 h16/16 s4096x4096 d192v128 fp16 win512");
  Shape paged{4, 8, 1, 1, 8192, 128, false, DType::bf16};
  paged.page_size = 64;
  paged.kv_splits = 4;
  CHECK(paged.label() == "b4 h8/1 s1x8192 d128 bf16 page64 splits4");
  CHECK(packed({8, 16}).label() == "b2 h4/2 s16x16 d64 causal bf16 varlen list:8/16");
  Shape drawn = packed({100, 300}, "uniform:64:512");
  drawn.lengths_seed = 7;
  CHECK(drawn.label() == "b2 h4/2 s300x300 d64 causal bf16 varlen uniform:64:512 seed7 tokens400");
}

TEST_CASE("validate: possible shapes pass, impossible ones are InputErrors") {
  CHECK_NOTHROW(Shape{2, 8, 2, 100, 300, 64, true, DType::bf16}.validate());
  CHECK_NOTHROW(packed({3, 9, 1}).validate());
  const auto refused = [](Shape s) { CHECK_THROWS_AS(s.validate(), attnprof::InputError); };
  refused(Shape{0, 8, 8, 64, 64, 64, false, DType::bf16});
  refused(Shape{1, 8, 3, 64, 64, 64, false, DType::bf16});  // kv_heads does not divide heads
  Shape s{1, 8, 8, 64, 64, 64, false, DType::bf16};
  s.window = -1;
  refused(s);
  s.window = 0;
  s.hdim_v = 12;  // not a multiple of 8
  refused(s);
  s.hdim_v = 1024;  // above kMaxHdimV
  refused(s);
  refused(Shape{1, 1 << 20, 1 << 20, 1 << 22, 1 << 22, 256, false, DType::bf16});  // past 2^48 elements
  Shape wrong_longest = packed({3, 9});
  wrong_longest.seq_q = wrong_longest.seq_k = 10;
  refused(wrong_longest);
  Shape zero_length = packed({3, 9});
  zero_length.seq_lens[0] = 0;
  refused(zero_length);
  Shape paged_packed = packed({3, 9});
  paged_packed.page_size = 16;
  refused(paged_packed);
}

TEST_CASE("tokens, prefix sums, sequences and element counts of dense and packed batches") {
  const Shape dense{3, 8, 2, 100, 300, 64, false, DType::bf16};
  CHECK(dense.tokens_q() == 300);
  CHECK(dense.tokens_k() == 900);
  CHECK(dense.cu_seqlens().empty());
  CHECK(dense.q_elems() == 8 * 300 * 64);
  CHECK(dense.kv_elems() == 2 * 900 * 64);
  CHECK(dense.lse_elems() == 8 * 300);
  CHECK(dense.sequence(0) == dense);
  const Shape p = packed({5, 1, 12});
  CHECK(p.tokens_q() == 18);
  CHECK(p.tokens_k() == 18);
  CHECK(p.cu_seqlens() == std::vector<int64_t>{0, 5, 6, 18});
  const Shape second = p.sequence(1);
  CHECK((second.batch == 1 && second.seq_q == 1 && second.seq_k == 1 && !second.varlen()));
  CHECK(p.padded().tokens_q() == 3 * 12);
  Shape wide{1, 4, 4, 10, 20, 192, false, DType::bf16};
  wide.hdim_v = 128;
  CHECK(wide.v_elems() == 4 * 20 * 128);
  CHECK(wide.o_elems() == 4 * 10 * 128);
  Shape paged{2, 4, 2, 1, 100, 64, false, DType::bf16};
  paged.page_size = 32;
  CHECK(paged.pages_per_seq() == 4);
  CHECK(paged.block_table_elems() == 8);
  CHECK(paged.kv_buffer_elems() == 8 * 2 * 32 * 64);
}

TEST_CASE("keys_of_row: bottom-right causal alignment and the sliding window") {
  Shape s{1, 1, 1, 4, 10, 64, true, DType::bf16};
  CHECK(s.keys_of_row(0) == KeyRange{0, 7});
  CHECK(s.keys_of_row(3) == KeyRange{0, 10});
  s.window = 3;
  CHECK(s.keys_of_row(0) == KeyRange{4, 7});
  s.causal = false;
  CHECK(s.keys_of_row(0) == KeyRange{4, 9});
  const Shape more_rows{1, 1, 1, 10, 4, 64, true, DType::bf16};
  CHECK(more_rows.keys_of_row(0).size() == 0);  // sees no key
  CHECK(more_rows.keys_of_row(6) == KeyRange{0, 1});
  CHECK(softmax_scale(Shape{1, 1, 1, 1, 1, 128, false, DType::bf16}) == Approx(1.0 / std::sqrt(128.0)));
}

TEST_CASE("JSON: optional fields only when set, and back to an equal shape") {
  const Shape dense{2, 8, 2, 100, 300, 64, true, DType::fp16};
  const nlohmann::json j = dense;
  CHECK(j.at("dtype") == "fp16");
  CHECK_FALSE(j.contains("window"));
  CHECK_FALSE(j.contains("hdim_v"));
  CHECK(j.get<Shape>() == dense);
  Shape p = packed({5, 1, 12});
  p.window = 4;
  const nlohmann::json pj = p;
  CHECK(pj.at("seq_lens") == nlohmann::json({5, 1, 12}));
  CHECK(pj.get<Shape>() == p);
}

TEST_CASE("quantized KV cache: names, spellings, the label, bytes and scales as allocated") {
  CHECK(to_string(KvDType::fp8_e4m3) == "fp8_e4m3");
  CHECK(to_string(KvDType::int8) == "int8");
  CHECK(to_string(KvScale::tensor) == "tensor");
  CHECK(to_string(KvScale::head) == "head");
  CHECK(to_string(KvScale::token) == "token");
  CHECK(parse_kv_dtype("fp8", DType::bf16) == KvDType::fp8_e4m3);
  CHECK(parse_kv_dtype("e4m3", DType::fp16) == KvDType::fp8_e4m3);
  CHECK(parse_kv_dtype("int8", DType::bf16) == KvDType::int8);
  CHECK(parse_kv_dtype("bf16", DType::bf16) == KvDType::none);  // the dtype's own name: not quantized
  CHECK(parse_kv_dtype("half", DType::fp16) == KvDType::none);
  CHECK_THROWS_WITH(parse_kv_dtype("fp16", DType::bf16), Catch::Contains("kv_dtype fp16 with dtype bf16"));
  CHECK_THROWS_WITH(parse_kv_dtype("int4", DType::bf16), Catch::Contains("unknown kv_dtype 'int4'"));
  CHECK_THROWS_WITH(parse_kv_scale("channel"), Catch::Contains("unknown kv_scale 'channel'"));
  CHECK(kv_quant_max(KvDType::fp8_e4m3) == 448);
  CHECK(kv_quant_max(KvDType::int8) == 127);
  CHECK(kv_quant_max(KvDType::none) == 0);

  const Shape s = quantized(Shape{64, 32, 8, 1, 8192, 128, true, DType::bf16}, KvDType::int8, KvScale::head);
  CHECK(s.label() == "b64 h32/8 s1x8192 d128 causal bf16 kv-int8/head");
  Shape paged = quantized(Shape{4, 8, 2, 1, 100, 64, false, DType::fp16}, KvDType::fp8_e4m3, KvScale::token);
  paged.page_size = 16;
  paged.window = 32;
  CHECK(paged.label() == "b4 h8/2 s1x100 d64 fp16 kv-fp8_e4m3/token page16 win32");
  CHECK(Shape{1, 1, 1, 1, 100, 64, false, DType::bf16}.kv_elem_bytes() == 2);
  CHECK(paged.kv_elem_bytes() == 1);
  // Scales: one per tensor, one per kv head, one per row of the buffer per token (pad rows of a pool
  // included: 4 sequences x 7 pages x 2 kv heads x 16 keys).
  CHECK(paged.kv_scale_elems() == 4 * 7 * 2 * 16);
  paged.page_size = 0;
  CHECK(paged.kv_scale_elems() == 4 * 2 * 100);
  CHECK(quantized(paged, KvDType::int8, KvScale::head).kv_scale_elems() == 2);
  CHECK(quantized(paged, KvDType::int8, KvScale::tensor).kv_scale_elems() == 1);
  CHECK(quantized(paged, KvDType::none, KvScale::tensor).kv_scale_elems() == 0);
}

TEST_CASE("quantized KV cache: validate refuses a scale without quantization, a backward and fp32") {
  const Shape base{1, 8, 2, 1, 512, 64, false, DType::bf16};
  CHECK_NOTHROW(quantized(base, KvDType::fp8_e4m3, KvScale::token).validate());
  const auto refused = [](const Shape& s, const std::string& why) {
    INFO(s.label());
    CHECK_THROWS_AS(s.validate(), attnprof::InputError);
    CHECK_THROWS_WITH(s.validate(), Catch::Contains(why));
  };
  refused(quantized(base, KvDType::none, KvScale::head), "kv_scale head applies to a quantized KV cache");
  Shape backward = quantized(base, KvDType::int8, KvScale::head);
  backward.pass = Pass::bwd;
  refused(backward, "forward pass only");
  Shape fp32 = quantized(base, KvDType::int8, KvScale::head);
  fp32.dtype = DType::fp32;
  refused(fp32, "fp16 or bf16");
}

TEST_CASE("quantized KV cache: JSON carries kv_dtype and kv_scale only when quantized, and reads back") {
  const Shape plain{2, 8, 2, 4, 300, 64, true, DType::fp16};
  const nlohmann::json pj = plain;
  CHECK_FALSE(pj.contains("kv_dtype"));
  CHECK_FALSE(pj.contains("kv_scale"));
  for (KvDType t : {KvDType::fp8_e4m3, KvDType::int8})
    for (KvScale g : {KvScale::tensor, KvScale::head, KvScale::token}) {
      Shape s = quantized(plain, t, g);
      s.page_size = 16;
      const nlohmann::json j = s;
      CHECK(j.at("kv_dtype") == std::string(to_string(t)));
      CHECK(j.at("kv_scale") == std::string(to_string(g)));
      CHECK(j.get<Shape>() == s);
    }
  nlohmann::json named = pj;
  named["kv_dtype"] = "fp16";  // the dtype's own name: not quantized
  CHECK(named.get<Shape>() == plain);
  nlohmann::json unknown = pj;
  unknown["kv_dtype"] = "int4";
  CHECK_THROWS_AS(unknown.get<Shape>(), attnprof::InputError);
  unknown["kv_dtype"] = "int8";
  unknown["kv_scale"] = "block";
  CHECK_THROWS_AS(unknown.get<Shape>(), attnprof::InputError);
}

namespace {

// The fp8 prefill point of `s` (dtype fp8_e4m3 with its K and V format).
Shape fp8(Shape s) {
  s.dtype = DType::fp8_e4m3;
  imply_fp8_kv_format(s);
  return s;
}

}  // namespace

TEST_CASE("fp8 prefill: names, sizes, out_dtype, the label without a KV suffix") {
  CHECK(to_string(DType::fp8_e4m3) == "fp8_e4m3");
  for (const char* name : {"fp8_e4m3", "fp8", "e4m3"}) CHECK(parse_dtype(name) == DType::fp8_e4m3);
  CHECK(dtype_bytes(DType::fp8_e4m3) == 1);
  CHECK_THROWS_WITH(parse_dtype("fp8_e5m2"), Catch::Contains("fp8_e4m3"));  // the error lists it

  const Shape s = fp8(Shape{4, 16, 4, 4096, 4096, 128, true, DType::bf16});
  CHECK(s.quantized_q());
  CHECK(s.quantized_kv());
  CHECK(s.kv_dtype == KvDType::fp8_e4m3);
  CHECK(s.kv_scale == KvScale::tensor);
  CHECK(s.out_dtype() == DType::bf16);
  CHECK(s.kv_elem_bytes() == 1);
  CHECK(s.kv_scale_elems() == 1);
  CHECK(s.label() == "b4 h16/4 s4096x4096 d128 causal fp8_e4m3");
  CHECK_NOTHROW(s.validate());
  const Shape bf16{4, 16, 4, 4096, 4096, 128, true, DType::bf16};
  CHECK_FALSE(bf16.quantized_q());
  CHECK(bf16.out_dtype() == DType::bf16);
  CHECK(Shape{1, 1, 1, 8, 8, 64, false, DType::fp16}.out_dtype() == DType::fp16);
}

TEST_CASE("fp8 prefill: the KV format is implied; another, a backward pass and a float kv_dtype are refused") {
  Shape s{2, 8, 2, 64, 64, 64, false, DType::fp8_e4m3};
  imply_fp8_kv_format(s);
  CHECK(s.kv_dtype == KvDType::fp8_e4m3);
  CHECK(s.kv_scale == KvScale::tensor);
  imply_fp8_kv_format(s);  // written already: unchanged
  CHECK(s.kv_dtype == KvDType::fp8_e4m3);
  Shape bf16{2, 8, 2, 64, 64, 64, false, DType::bf16};
  imply_fp8_kv_format(bf16);  // nothing for another dtype
  CHECK_FALSE(bf16.quantized_kv());

  Shape int8 = s;
  int8.kv_dtype = KvDType::int8;
  CHECK_THROWS_WITH(imply_fp8_kv_format(int8), Catch::Contains("kv_dtype int8 with dtype fp8_e4m3"));
  CHECK_THROWS_WITH(int8.validate(), Catch::Contains("dtype fp8_e4m3 stores K and V in fp8 E4M3"));
  Shape head = s;
  head.kv_scale = KvScale::head;
  CHECK_THROWS_WITH(imply_fp8_kv_format(head), Catch::Contains("kv_scale head with dtype fp8_e4m3"));
  CHECK_THROWS_AS(head.validate(), attnprof::InputError);
  Shape unset{2, 8, 2, 64, 64, 64, false, DType::fp8_e4m3};  // built without the format
  CHECK_THROWS_WITH(unset.validate(), Catch::Contains("not kv_dtype none"));
  unset.kv_scale = KvScale::token;
  CHECK_THROWS_WITH(imply_fp8_kv_format(unset), Catch::Contains("kv_scale token with dtype fp8_e4m3"));
  for (Pass p : {Pass::bwd, Pass::fwd_bwd}) {
    Shape backward = s;
    backward.pass = p;
    CHECK_THROWS_WITH(backward.validate(), Catch::Contains("fp8 prefill (dtype fp8_e4m3) is a forward pass only"));
  }
  CHECK(parse_kv_dtype("fp8", DType::fp8_e4m3) == KvDType::fp8_e4m3);
  CHECK(parse_kv_dtype("int8", DType::fp8_e4m3) == KvDType::int8);  // refused by the format check above
  CHECK_THROWS_WITH(parse_kv_dtype("bf16", DType::fp8_e4m3), Catch::Contains("kv_dtype bf16 with dtype fp8_e4m3"));
  CHECK_THROWS_WITH(parse_kv_dtype("fp8_e5m2", DType::fp8_e4m3), Catch::Contains("unknown kv_dtype"));
  CHECK(quantized_kv_dtype_named("e4m3") == KvDType::fp8_e4m3);
  CHECK(quantized_kv_dtype_named("int8") == KvDType::int8);
  CHECK_FALSE(quantized_kv_dtype_named("bf16").has_value());
}

TEST_CASE("fp8 prefill: JSON writes the dtype alone and reads the implied format back; a contradiction throws") {
  Shape s = fp8(Shape{3, 8, 2, 100, 100, 64, true, DType::bf16});
  s.window = 32;
  const nlohmann::json j = s;
  CHECK(j.at("dtype") == "fp8_e4m3");
  CHECK_FALSE(j.contains("kv_dtype"));
  CHECK_FALSE(j.contains("kv_scale"));
  CHECK(j.get<Shape>() == s);
  nlohmann::json spelled = j;  // written out in full: the same point
  spelled["kv_dtype"] = "fp8_e4m3";
  spelled["kv_scale"] = "tensor";
  CHECK(spelled.get<Shape>() == s);
  for (const auto& [key, value] : {std::pair{"kv_dtype", "int8"}, std::pair{"kv_dtype", "bf16"},
                                   std::pair{"kv_scale", "head"}}) {
    nlohmann::json bad = j;
    bad[key] = value;
    INFO(key << "=" << value);
    CHECK_THROWS_AS(bad.get<Shape>(), attnprof::InputError);
  }
}
