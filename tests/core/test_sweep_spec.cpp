#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/lengths.hpp"
#include "core/sweep_spec.hpp"

using namespace attnprof;
using namespace attnprof::core;

namespace {

// The spec must be rejected with InputError whose one-line message quotes `token`.
void require_rejected(const std::string& spec, const std::string& token) {
  INFO("spec: " << spec);
  try {
    parse_axes(spec);
    FAIL("no InputError for '" << spec << "'");
  } catch (const InputError& e) {
    const std::string msg = e.what();
    INFO("message: " << msg);
    CHECK(msg.find(token) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
}

std::vector<int64_t> seqs(const SweepSpec& s) {
  std::vector<int64_t> out;
  for (const auto& sh : s.shapes) out.push_back(sh.seq_q);
  return out;
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("a full spec expands as a Cartesian product, first axis slowest") {
  const auto s = parse_axes("batch=1,4;heads=16;seq=512:16384:x2;hdim=64,128;causal=0,1;dtype=bf16,fp16");
  REQUIRE(s.shapes.size() == 2 * 6 * 2 * 2 * 2);
  CHECK(s.text == "batch=1,4;heads=16;seq=512:16384:x2;hdim=64,128;causal=0,1;dtype=bf16,fp16");
  CHECK(s.preset.empty());
  CHECK(s.shapes[0] == Shape{1, 16, 16, 512, 512, 64, false, DType::bf16});
  CHECK(s.shapes[1] == Shape{1, 16, 16, 512, 512, 64, false, DType::fp16});
  CHECK(s.shapes[2] == Shape{1, 16, 16, 512, 512, 64, true, DType::bf16});
  CHECK(s.shapes.back() == Shape{4, 16, 16, 16384, 16384, 128, true, DType::fp16});
}

TEST_CASE("ranges: geometric and arithmetic, inclusive of the end only when reached") {
  CHECK(seqs(parse_axes("seq=100:1000:x3")) == std::vector<int64_t>{100, 300, 900});
  CHECK(seqs(parse_axes("seq=100:1000:+300")) == std::vector<int64_t>{100, 400, 700, 1000});
  CHECK(seqs(parse_axes("seq=100:1000:+301")) == std::vector<int64_t>{100, 401, 702});
  CHECK(seqs(parse_axes("seq=128:128:x2")) == std::vector<int64_t>{128});
  CHECK(seqs(parse_axes("seq=512:4096:x2")) == std::vector<int64_t>{512, 1024, 2048, 4096});
  CHECK(seqs(parse_axes("seq=64, 128:512:x4")) == std::vector<int64_t>{64, 128, 512});
  // Near the top of int64 the geometric guard stops before multiplying past it, and the element
  // limit rejects the shapes before any int64 product can overflow.
  require_rejected("seq=1:9223372036854775807:x1000000000", "2^48");
}

TEST_CASE("defaults: kv_heads = heads, seq_k = seq_q; seq_k overrides when given") {
  const auto a = parse_axes("heads=8;seq=256").shapes.at(0);
  CHECK(a.kv_heads == 8);
  CHECK(a.seq_k == 256);
  const auto b = parse_axes("heads=8;kv_heads=2;seq=256;seq_k=1024").shapes.at(0);
  CHECK(b.kv_heads == 2);
  CHECK(b.seq_q == 256);
  CHECK(b.seq_k == 1024);
  const auto c = parse_axes("seq_q=1;seq_k=4096").shapes.at(0);
  CHECK(c.seq_q == 1);
  CHECK(c.seq_k == 4096);
}

TEST_CASE("booleans and dtype names") {
  const auto s = parse_axes("seq=64;causal=false,TRUE;dtype=bfloat16");
  REQUIRE(s.shapes.size() == 2);
  CHECK_FALSE(s.shapes[0].causal);
  CHECK(s.shapes[1].causal);
  CHECK(s.shapes[0].dtype == DType::bf16);
}

TEST_CASE("tokens ties batch = tokens / seq, dim ties heads = dim / hdim") {
  const auto t = parse_axes("tokens=8192;seq=512,1024,8192");
  REQUIRE(t.shapes.size() == 3);
  CHECK(t.shapes[0].batch == 16);
  CHECK(t.shapes[1].batch == 8);
  CHECK(t.shapes[2].batch == 1);
  const auto d = parse_axes("dim=2048;hdim=64,128;seq=128;kv_heads=4");
  REQUIRE(d.shapes.size() == 2);
  CHECK(d.shapes[0].heads == 32);
  CHECK(d.shapes[1].heads == 16);
  CHECK(d.shapes[1].kv_heads == 4);
  // Without kv_heads the tied heads is also kv_heads.
  CHECK(parse_axes("dim=1024;hdim=128;seq=64").shapes.at(0).kv_heads == 8);
}

TEST_CASE("'|' joins products; a point may not repeat") {
  const auto s = parse_axes("seq=128;causal=0,1 | seq=256;heads=4;kv_heads=1");
  REQUIRE(s.shapes.size() == 3);
  CHECK(s.shapes[2].kv_heads == 1);
  require_rejected("seq=128 | seq=128", "b1 h1/1 s128x128 d64 bf16");
  require_rejected("seq=128 |", "stray '|'");
}

TEST_CASE("every malformed spec is an InputError naming the bad token") {
  require_rejected("bach=1;seq=128", "bach");
  require_rejected("seq=128;hdim=64;seq=256", "duplicate axis 'seq'");
  require_rejected("seq=", "seq=");
  require_rejected("seq=128;hdim= ", "hdim");
  require_rejected("seq=12a", "12a");
  require_rejected("seq=1.5", "1.5");
  require_rejected("seq=99999999999999999999", "99999999999999999999");
  require_rejected("seq=0", "'0'");
  require_rejected("seq=128;batch=-4", "-4");
  require_rejected("seq=512:128:x2", "512:128:x2");
  require_rejected("seq=1:8:x1", "1:8:x1");
  require_rejected("seq=1:8:x0", "1:8:x0");
  require_rejected("seq=1:8:+0", "1:8:+0");
  require_rejected("seq=1:8:+-2", "1:8:+-2");
  require_rejected("seq=1:8", "1:8");
  require_rejected("seq=1:8:y2", "1:8:y2");
  require_rejected("seq=0:8:x2", "0");
  require_rejected("tokens=1000;seq=512", "tokens=1000");
  require_rejected("tokens=256;seq=512", "tokens=256");
  require_rejected("dim=1000;hdim=128;seq=128", "dim=1000");
  require_rejected("tokens=4096;batch=2;seq=512", "tokens");
  require_rejected("dim=2048;heads=16;seq=512", "dim");
  require_rejected("seq=128;seq_q=64", "seq_q");
  require_rejected("heads=6;kv_heads=4;seq=128", "kv_heads=4");
  require_rejected("batch=1:100000:+1;seq=1,2", "100000");
  require_rejected("seq=1:1000000:+1", "1:1000000:+1");
  require_rejected("", "empty");
  require_rejected("   ", "empty");
  require_rejected("causal=2;seq=128", "'2'");
  require_rejected("causal=yes;seq=128", "yes");
  require_rejected("dtype=fp8_e5m2;seq=128", "fp8_e5m2");
  require_rejected("seq=128,,256", "seq=128,,256");
  require_rejected("seq=128,128", "128");
  require_rejected("causal=1,true;seq=128", "true");
  require_rejected("batch=4", "seq");
  require_rejected("seq128", "seq128");
  require_rejected("seq=128;;hdim=64", "seq=128;;hdim=64");
  require_rejected("=128", "''");
}

TEST_CASE("expanded shapes are validated") {
  // Each size is fine on its own; together Q holds more than 2^48 elements.
  require_rejected("batch=65536;heads=1024;seq=65536;hdim=128", "2^48");
  // 2^31 elements and more are a real serving shape (64 sequences of 32k keys): it parses, and the
  // device decides whether it fits.
  const auto big = parse_axes("batch=64;heads=32;kv_heads=8;seq_q=1;seq_k=32768;hdim=128").shapes.at(0);
  CHECK(big.kv_elems() == int64_t{1} << 31);
}

TEST_CASE("page_size and kv_splits: 0 is off, positive values label the point") {
  const auto s = parse_axes("batch=2;heads=8;kv_heads=2;seq_q=1;seq_k=1000;page_size=0,16;kv_splits=0,3").shapes;
  REQUIRE(s.size() == 4);
  CHECK(s[0].page_size == 0);
  CHECK(s[0].kv_splits == 0);
  CHECK(s[0].label() == "b2 h8/2 s1x1000 d64 bf16");
  CHECK(s[3].label() == "b2 h8/2 s1x1000 d64 bf16 page16 splits3");
  CHECK(s[3].pages_per_seq() == 63);  // 1000 keys in pages of 16: the last page holds 8
  CHECK(s[3].block_table_elems() == 2 * 63);
  CHECK(s[3].kv_buffer_elems() == 2 * 63 * 2 * 16 * 64);
  CHECK(s[0].kv_buffer_elems() == s[0].kv_elems());
  require_rejected("seq=128;page_size=-16", "page_size");
  require_rejected("seq=128;kv_splits=x", "kv_splits");
  // Round trip through JSON; files without the fields read as contiguous, heuristic split.
  nlohmann::json j = s[3];
  CHECK(j.at("page_size") == 16);
  CHECK(j.get<Shape>() == s[3]);
  nlohmann::json plain = s[0];
  CHECK_FALSE(plain.contains("page_size"));
  CHECK(plain.get<Shape>() == s[0]);
}

TEST_CASE("window: 0 is no window, positive values label the point, JSON round trip") {
  const auto s = parse_axes("batch=1;heads=8;kv_heads=2;seq=4096;hdim=128;causal=0,1;window=0,1,1024:4096:x2").shapes;
  REQUIRE(s.size() == 10);
  CHECK(s[0].window == 0);
  CHECK(s[0].label() == "b1 h8/2 s4096x4096 d128 bf16");
  CHECK(s[1].window == 1);
  CHECK(s[4].window == 4096);
  CHECK(s[9].label() == "b1 h8/2 s4096x4096 d128 causal bf16 win4096");
  require_rejected("seq=128;window=-1", "window");
  require_rejected("seq=128;window=1k", "window");
  require_rejected("seq=128;window=0,0", "repeats");
  // A negative window from a sweep file or a results file is an impossible shape.
  Shape bad = s[0];
  bad.window = -4;
  CHECK_THROWS_AS(bad.validate(), InputError);
  nlohmann::json j = s[9];
  CHECK(j.at("window") == 4096);
  CHECK(j.get<Shape>() == s[9]);
  nlohmann::json plain = s[0];
  CHECK_FALSE(plain.contains("window"));  // files before 1.7 have none: no window
  CHECK(plain.get<Shape>().window == 0);
  // Single shapes and sweep files take the axis too.
  CHECK(parse_shape("seq=64,window=16,causal=1").window == 16);
  const auto file = parse_sweep_file(R"({"shapes": [{"seq": 64, "window": 8}, {"seq": 64}]})", "w.json");
  REQUIRE(file.shapes.size() == 2);
  CHECK(file.shapes[0].window == 8);
  CHECK(file.shapes[1].window == 0);
  CHECK_THROWS_AS(parse_sweep_file(R"({"shapes": [{"seq": 64, "window": "8"}]})", "w.json"), InputError);
}

TEST_CASE("hdim_v: the value head dim, labelled and written only when it differs from hdim") {
  const auto s = parse_axes("batch=1;heads=16;seq=4096;hdim=192;hdim_v=128,192;causal=1").shapes;
  REQUIRE(s.size() == 2);
  CHECK(s[0].hdim_v == 128);
  CHECK(s[0].value_hdim() == 128);
  CHECK(s[0].distinct_hdim_v());
  CHECK(s[0].label() == "b1 h16/16 s4096x4096 d192v128 causal bf16");
  // hdim_v = hdim is the point without the axis: one shape, one label, one key.
  CHECK(s[1].hdim_v == 0);
  CHECK(s[1].value_hdim() == 192);
  CHECK_FALSE(s[1].distinct_hdim_v());
  CHECK(s[1] == parse_axes("batch=1;heads=16;seq=4096;hdim=192;causal=1").shapes.at(0));
  CHECK(s[1].label() == "b1 h16/16 s4096x4096 d192 causal bf16");
  require_rejected("seq=128;hdim=64;hdim_v=64,64", "repeats");
  require_rejected("seq=128;hdim=128;hdim_v=128 | seq=128;hdim=128", "appears twice");
  // Wider than Q and K is fine; the elements of V and O follow it.
  const Shape wide = parse_shape("batch=2,heads=4,kv_heads=2,seq_q=3,seq_k=5,hdim=64,hdim_v=128");
  CHECK(wide.label() == "b2 h4/2 s3x5 d64v128 bf16");
  CHECK(wide.q_elems() == 2 * 4 * 3 * 64);
  CHECK(wide.o_elems() == 2 * 4 * 3 * 128);
  CHECK(wide.kv_elems() == 2 * 2 * 5 * 64);
  CHECK(wide.v_elems() == 2 * 2 * 5 * 128);
  CHECK(wide.v_buffer_elems() == wide.v_elems());
  // Paged: V's pages are hdim_v wide.
  const Shape paged = parse_shape("batch=2,heads=4,kv_heads=2,seq_q=1,seq_k=33,hdim=64,hdim_v=32,page_size=16");
  CHECK(paged.kv_buffer_elems() == 2 * 3 * 2 * 16 * 64);
  CHECK(paged.v_buffer_elems() == 2 * 3 * 2 * 16 * 32);
  // Validated at parse time: positive, a multiple of 8, at most 512; one line naming the value.
  require_rejected("seq=128;hdim_v=0", "hdim_v");
  require_rejected("seq=128;hdim_v=-8", "-8");
  require_rejected("seq=128;hdim_v=100", "100");
  require_rejected("seq=128;hdim_v=520", "520");
  require_rejected("seq=128;hdim_v=64:1024:x2", "1024");
  require_rejected("seq=128;hdim_v=x", "'x'");
  CHECK(parse_axes("seq=128;hdim_v=8,512").shapes.size() == 2);
  CHECK_THROWS_AS(parse_shape("seq=64,hdim_v=12"), InputError);
  Shape bad = s[0];
  bad.hdim_v = 130;
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("hdim_v 130"));
  // JSON: written only when it differs; absent (files before 1.9) reads as hdim; equal reads as absent.
  nlohmann::json j = s[0];
  CHECK(j.at("hdim_v") == 128);
  CHECK(j.get<Shape>() == s[0]);
  nlohmann::json same = s[1];
  CHECK_FALSE(same.contains("hdim_v"));
  CHECK(same.get<Shape>().value_hdim() == 192);
  same["hdim_v"] = 192;
  CHECK(same.get<Shape>() == s[1]);
  // Sweep files take it, and a results file's shape object comes back as the same point.
  const auto file = parse_sweep_file(
      fmt::format(R"({{"shapes": [{}, {{"seq": 64, "hdim": 64, "hdim_v": 32}}, {{"seq": 64}}]}})", j.dump()), "v.json");
  REQUIRE(file.shapes.size() == 3);
  CHECK(file.shapes[0] == s[0]);
  CHECK(file.shapes[1].value_hdim() == 32);
  CHECK(file.shapes[2].hdim_v == 0);
  CHECK_THROWS_AS(parse_sweep_file(R"({"shapes": [{"seq": 64, "hdim_v": "32"}]})", "v.json"), InputError);
  CHECK_THROWS_WITH(parse_sweep_file(R"({"shapes": [{"seq": 64, "hdim_v": 33}]})", "v.json"), Catch::Contains("33"));
}

TEST_CASE("lengths: a packed batch from a distribution, a list or a tokens budget") {
  const auto s = parse_axes("heads=8;hdim=64;causal=1;batch=4;lengths=uniform:16:64,zipf:1.1:8:32").shapes;
  REQUIRE(s.size() == 2);
  CHECK(s[0].varlen());
  CHECK(s[0].batch == 4);
  CHECK(s[0].seq_lens.size() == 4);
  CHECK(s[0].seq_lens == draw_lengths(parse_lengths("uniform:16:64"), 4, 1));  // lengths_seed 1 by default
  CHECK(s[0].seq_q == *std::max_element(s[0].seq_lens.begin(), s[0].seq_lens.end()));
  CHECK(s[0].seq_k == s[0].seq_q);
  CHECK(s[0].lengths == "uniform:16:64");
  CHECK(s[0].lengths_seed == 1);
  CHECK(s[0].label() == fmt::format("b4 h8/8 s{0}x{0} d64 causal bf16 varlen uniform:16:64 seed1 tokens{1}", s[0].seq_q,
                                    s[0].tokens_q()));
  CHECK(s[1].lengths == "zipf:1.1:8:32");
  // A list sets the batch; its label lists the lengths.
  const auto l = parse_axes("heads=2;hdim=32;lengths=list:5/1/9").shapes.at(0);
  CHECK(l.batch == 3);
  CHECK(l.seq_lens == std::vector<int64_t>{5, 1, 9});
  CHECK(l.seq_q == 9);
  CHECK(l.tokens_q() == 15);
  CHECK(l.cu_seqlens() == std::vector<int64_t>{0, 5, 6, 15});
  CHECK(l.q_elems() == 2 * 15 * 32);
  CHECK(l.label() == "b3 h2/2 s9x9 d32 bf16 varlen list:5/1/9");
  // tokens=N draws until N tokens; seeds differ.
  const auto t = parse_axes("heads=2;hdim=32;tokens=4096;lengths=uniform:100:900;lengths_seed=1,2").shapes;
  REQUIRE(t.size() == 2);
  CHECK(t[0].tokens_q() == 4096);
  CHECK(t[1].tokens_q() == 4096);
  CHECK(t[0].seq_lens == draw_lengths_to_tokens(parse_lengths("uniform:100:900"), 4096, 1));
  CHECK(t[0].seq_lens != t[1].seq_lens);
  CHECK(t[0].label() != t[1].label());
  CHECK(t[1].label().find("varlen uniform:100:900 seed2 tokens4096") != std::string::npos);
  // Beside a dense batch of the same tokens.
  const auto both = parse_axes("heads=2;hdim=32;tokens=4096;seq=1024 | heads=2;hdim=32;tokens=4096;lengths=uniform:512:1536").shapes;
  REQUIRE(both.size() == 2);
  CHECK(both[0].tokens_q() == both[1].tokens_q());
  // Single shapes take it too.
  CHECK(parse_shape("heads=2,hdim=32,lengths=list:3/4").seq_lens == std::vector<int64_t>{3, 4});
}

TEST_CASE("lengths: grammar errors are one line naming the token") {
  require_rejected("batch=2;lengths=uniform:9:3", "greater than");
  require_rejected("batch=2;lengths=uniform:a:3", "not an integer");
  require_rejected("batch=2;lengths=zipf:0:1:8", "must be positive");
  require_rejected("batch=2;lengths=list:", "at least one length");
  require_rejected("lengths=list:4/0", "below 1");
  require_rejected("lengths=gauss:1:2", "unknown distribution");
  require_rejected("batch=2;lengths=list:4/8", "sets the batch");
  require_rejected("tokens=64;lengths=list:4/8", "sets the batch");
  require_rejected("batch=2;seq=64;lengths=uniform:1:8", "cannot be combined");
  require_rejected("batch=2;seq_k=64;lengths=uniform:1:8", "cannot be combined");
  require_rejected("batch=2;lengths=uniform:1:8,uniform:1:8", "repeats");
  require_rejected("batch=2;seq=64;lengths_seed=3", "needs a 'lengths' axis");
  require_rejected("batch=2;lengths=uniform:1:8;lengths_seed=-1", "lengths_seed");
  require_rejected("batch=2;lengths=uniform:1:8;page_size=16", "page_size");
  require_rejected("batch=100000;lengths=uniform:1:8", "more than");
  require_rejected("tokens=4000000000;lengths=uniform:100000:200000", "2^31");
  require_rejected("batch=60000,60001,60002,60003,60004,60005,60006,60007,60008,60009,60010,60011,60012,60013,60014,60015,60016,60017,60018,60019,60020,60021,60022,60023,60024,60025,60026,60027,60028,60029,60030,60031,60032,60033,60034,60035,60036,60037,60038,60039,60040,60041,60042,60043,60044,60045,60046,60047,60048,60049,60050,60051,60052,60053,60054,60055,60056,60057,60058,60059,60060,60061,60062,60063,60064,60065,60066,60067,60068,60069,60070;lengths=uniform:1:2", "sequence lengths in all");
}

TEST_CASE("lengths: shape JSON round trip; a results file's shape object is accepted back") {
  const Shape s = parse_axes("heads=4;hdim=64;tokens=1000;lengths=uniform:100:300;lengths_seed=5;window=64").shapes.at(0);
  nlohmann::json j = s;
  CHECK(j.at("seq_lens").size() == s.seq_lens.size());
  CHECK(j.at("lengths") == "uniform:100:300");
  CHECK(j.at("lengths_seed") == 5);
  CHECK(j.get<Shape>() == s);
  // A dense shape's object has no varlen field, and one without them reads as dense (files before 1.8).
  nlohmann::json dense = parse_shape("seq=64");
  CHECK_FALSE(dense.contains("seq_lens"));
  CHECK_FALSE(dense.get<Shape>().varlen());
  // The tokens budget clipped the last length: the file's seq_lens are taken as they are.
  const auto file = parse_sweep_file(nlohmann::json{{"shapes", {j}}}.dump(), "r.json");
  REQUIRE(file.shapes.size() == 1);
  CHECK(file.shapes[0] == s);
  CHECK(file.shapes[0].label() == s.label());
  nlohmann::json wrong = j;
  wrong["batch"] = 99;
  CHECK_THROWS_AS(parse_sweep_file(nlohmann::json{{"shapes", {wrong}}}.dump(), "r.json"), InputError);
  wrong = j;
  wrong["seq_lens"] = {1, "2"};
  CHECK_THROWS_AS(parse_sweep_file(nlohmann::json{{"shapes", {wrong}}}.dump(), "r.json"), InputError);
  // seq_lens that no draw of the named distribution gives would run under its label: refused, one line
  // naming the shape and both sides.
  const auto contradiction = [](const nlohmann::json& shape, const std::string& token) {
    try {
      parse_sweep_file(nlohmann::json{{"shapes", {shape}}}.dump(), "r.json");
      FAIL("no InputError for " << shape.dump());
    } catch (const InputError& e) {
      const std::string why = e.what();
      INFO("message: " << why);
      CHECK(why.find("r.json' shapes[0]: shape 'b") != std::string::npos);
      CHECK(why.find("contradict lengths") != std::string::npos);
      CHECK(why.find(token) != std::string::npos);
      CHECK(why.find('\n') == std::string::npos);
    }
  };
  nlohmann::json edited = j;
  edited["seq_lens"][0] = edited["seq_lens"][0].get<int64_t>() + 1;  // no longer the seed's draw
  contradiction(edited, "'uniform:100:300' seed 5");
  edited = j;
  edited["lengths_seed"] = 6;  // another seed's label for seed 5's lengths
  contradiction(edited, "seed 6");
  contradiction({{"heads", 2}, {"hdim", 32}, {"seq_lens", {500, 7}}, {"lengths", "uniform:100:300"}}, "seq_lens 500/7");
  contradiction({{"heads", 2}, {"hdim", 32}, {"seq_lens", {4, 8}}, {"lengths", "list:4/9"}}, "which lists 4/9");
  // Lengths that are the distribution's draw, with a batch or a tokens budget, or its list, are taken.
  const auto drawn = draw_lengths(parse_lengths("zipf:1.2:8:64"), 5, 3);
  CHECK(parse_sweep_file(nlohmann::json{{"shapes", {{{"heads", 2}, {"hdim", 32}, {"seq_lens", drawn},
                                                     {"lengths", "zipf:1.2:8:64"}, {"lengths_seed", 3}}}}}.dump(),
                         "r.json").shapes.at(0).seq_lens == drawn);
  // Without lengths_seed the seed is the grammar's default, 1.
  const auto seed1 = draw_lengths(parse_lengths("uniform:4:8"), 3, 1);
  const auto defaulted = parse_sweep_file(nlohmann::json{{"shapes", {{{"heads", 2}, {"hdim", 32}, {"seq_lens", seed1},
                                                                      {"lengths", "uniform:4:8"}}}}}.dump(), "r.json");
  CHECK(defaulted.shapes.at(0).lengths_seed == 1);
  CHECK_NOTHROW(parse_sweep_file(R"({"shapes": [{"heads": 2, "hdim": 32, "seq_lens": [4, 9], "lengths": "list:4/9"}]})", "r.json"));
  // A sweep file may name the distribution as the axes do.
  const auto named = parse_sweep_file(R"({"shapes": [{"batch": 3, "heads": 2, "lengths": "uniform:4:8", "lengths_seed": 2}]})", "n.json");
  CHECK(named.shapes.at(0).seq_lens == draw_lengths(parse_lengths("uniform:4:8"), 3, 2));
  CHECK_THROWS_AS(parse_sweep_file(R"({"shapes": [{"batch": 3, "lengths": "uniform:4:8;seq=9"}]})", "n.json"), InputError);
  CHECK_THROWS_AS(parse_sweep_file(R"({"shapes": [{"batch": 3, "lengths": 8}]})", "n.json"), InputError);
  // padded() is the shape without its lengths (every other field kept).
  Shape unpacked = s;
  unpacked.seq_lens.clear();
  unpacked.lengths.clear();
  unpacked.lengths_seed = 0;
  CHECK(s.padded() == unpacked);
  CHECK(s.sequence(0).seq_q == s.seq_lens[0]);
  CHECK(s.sequence(0).batch == 1);
  CHECK(s.sequence(0).window == 64);
  // validate() refuses seq_lens that disagree with the shape.
  Shape bad = s;
  bad.seq_lens.push_back(4);
  CHECK_THROWS_AS(bad.validate(), InputError);
  bad = s;
  bad.seq_q += 1;
  CHECK_THROWS_AS(bad.validate(), InputError);
  bad = s;
  bad.seq_lens[0] = 0;
  CHECK_THROWS_AS(bad.validate(), InputError);
}

TEST_CASE("preset quick: CI-sized, causal and non-causal, one GQA point") {
  const auto s = preset("quick");
  CHECK(s.preset == "quick");
  REQUIRE(s.shapes.size() == 5);
  int gqa = 0, causal = 0;
  for (const auto& sh : s.shapes) {
    CHECK(sh.seq_q <= 512);
    CHECK(sh.batch * sh.heads <= 8);
    gqa += sh.kv_heads < sh.heads;
    causal += sh.causal;
  }
  CHECK(gqa == 1);
  CHECK(causal == 3);
  CHECK(parse_axes(s.text).shapes == s.shapes);
}

TEST_CASE("preset fa-bench: 48 shapes at 16k tokens and model dim 2048") {
  const auto s = preset("fa-bench");
  REQUIRE(s.shapes.size() == 48);
  for (const auto& sh : s.shapes) {
    CHECK(sh.batch * sh.seq_q == 16384);
    CHECK(sh.heads * sh.hdim == 2048);
    CHECK(sh.kv_heads == sh.heads);
    CHECK(sh.seq_k == sh.seq_q);
  }
  // Order: dtype, hdim, causal, seq (seq fastest).
  CHECK(s.shapes[0] == Shape{32, 32, 32, 512, 512, 64, false, DType::bf16});
  CHECK(s.shapes[5] == Shape{1, 32, 32, 16384, 16384, 64, false, DType::bf16});
  CHECK(s.shapes[6].causal);
  CHECK(s.shapes[12].hdim == 128);
  CHECK(s.shapes[23].dtype == DType::bf16);
  CHECK(s.shapes[24].dtype == DType::fp16);
  CHECK(parse_axes(s.text).shapes == s.shapes);
}

TEST_CASE("preset long-context: GQA, batch 1, 16k to 128k, causal") {
  const auto s = preset("long-context");
  REQUIRE(s.shapes.size() == 4);
  CHECK(seqs(s) == std::vector<int64_t>{16384, 32768, 65536, 131072});
  for (const auto& sh : s.shapes) {
    CHECK(sh.batch == 1);
    CHECK(sh.heads == 16);
    CHECK(sh.kv_heads == 2);
    CHECK(sh.hdim == 128);
    CHECK(sh.causal);
    CHECK(sh.dtype == DType::bf16);
  }
}

TEST_CASE("preset decode: seq_q 1, GQA 32/8 and 64/8, contiguous and paged, batch 1-256, KV 1k-128k, bf16/fp8/int8") {
  const auto s = preset("decode");
  REQUIRE(s.shapes.size() == 180);
  std::map<KvDType, int> by_kv_dtype;
  double largest_kv_bytes = 0;
  for (const Shape& sh : s.shapes) {
    CHECK(sh.seq_q == 1);
    CHECK(sh.kv_heads == 8);
    CHECK((sh.heads == 32 || sh.heads == 64));
    CHECK((sh.page_size == 0 || sh.page_size == 64));
    CHECK(sh.seq_k >= 1024);
    CHECK(sh.seq_k <= 131072);
    ++by_kv_dtype[sh.kv_dtype];
    if (sh.quantized_kv()) CHECK(sh.kv_scale == KvScale::head);
    largest_kv_bytes = std::max(largest_kv_bytes, 2.0 * static_cast<double>(sh.kv_elems()) * sh.kv_elem_bytes());
  }
  CHECK(by_kv_dtype == std::map<KvDType, int>{{KvDType::none, 60}, {KvDType::fp8_e4m3, 60}, {KvDType::int8, 60}});
  CHECK(largest_kv_bytes <= 40e9);  // every point fits a 80 GB GPU
  CHECK(s.shapes.front().label() == "b1 h32/8 s1x1024 d128 bf16");
  CHECK(s.shapes.back().label() == "b256 h64/8 s1x32768 d128 bf16 kv-int8/head page64");
}

TEST_CASE("preset serving: prefill and decode of real model configurations") {
  const auto s = preset("serving");
  REQUIRE(s.shapes.size() == 20);
  // DeepSeek-V3's MLA prefill per GPU at tensor parallel 8: 128 / 8 heads, K 192 and V 128 wide.
  const Shape& mla = s.shapes.back();
  CHECK(mla.label() == "b1 h16/16 s4096x4096 d192v128 causal bf16");
  int prefill = 0, decode = 0;
  for (const Shape& sh : s.shapes) {
    CHECK(sh.causal);
    CHECK(sh.hdim == (&sh == &mla ? 192 : 128));
    CHECK(sh.value_hdim() == 128);
    if (sh.seq_q == sh.seq_k) ++prefill;
    if (sh.seq_q <= 4) {
      ++decode;
      CHECK(sh.page_size == 16);
    } else {
      CHECK(!sh.quantized_kv());
    }
  }
  CHECK(prefill == 5);
  CHECK(decode == 15);  // five decode configurations, each with a bf16, fp8 E4M3 and int8 KV cache
}

TEST_CASE("preset fa-bench-train: fa-bench's 48 shapes for each pass, the forward's first") {
  const auto train = preset("fa-bench-train");
  const auto fwd = preset("fa-bench");
  REQUIRE(train.shapes.size() == 3 * fwd.shapes.size());
  const Pass passes[] = {Pass::fwd, Pass::bwd, Pass::fwd_bwd};
  for (size_t p = 0; p < 3; ++p)
    for (size_t i = 0; i < fwd.shapes.size(); ++i) {
      Shape expected = fwd.shapes[i];
      expected.pass = passes[p];
      CHECK(train.shapes[p * fwd.shapes.size() + i] == expected);
    }
  CHECK(train.shapes[48].label() == fwd.shapes[0].label() + " bwd");
  CHECK(parse_axes(train.text).shapes == train.shapes);
}

TEST_CASE("preset training: the serving preset's models in a training step, each model's passes adjacent") {
  const auto t = preset("training");
  const auto serving = preset("serving");
  REQUIRE(t.shapes.size() == 15);
  const Pass passes[] = {Pass::fwd, Pass::bwd, Pass::fwd_bwd};
  for (size_t i = 0; i < t.shapes.size(); ++i) {
    const Shape& sh = t.shapes[i];
    INFO(sh.label());
    CHECK(sh.pass == passes[i % 3]);
    CHECK(sh.causal);
    CHECK(sh.dtype == DType::bf16);
    CHECK(sh.seq_q == sh.seq_k);
    CHECK(sh.batch * sh.seq_q == 16384);  // 16k tokens per call, as fa-bench
    // Each model is a prefill point of the serving preset: the same heads and head dims.
    bool in_serving = false;
    for (const Shape& p : serving.shapes)
      in_serving |= p.seq_q == p.seq_k && p.heads == sh.heads && p.kv_heads == sh.kv_heads && p.hdim == sh.hdim &&
                    p.value_hdim() == sh.value_hdim();
    CHECK(in_serving);
  }
  CHECK(t.shapes[1].label() == "b2 h32/8 s8192x8192 d128 causal bf16 bwd");
  CHECK(t.shapes.back().label() == "b4 h16/16 s4096x4096 d192v128 causal bf16 fwd_bwd");
  CHECK(parse_axes(t.text).shapes == t.shapes);
}

TEST_CASE("the pass axis: every pass of one shape, labels apart; a backward over a paged cache is refused") {
  const auto s = parse_axes("batch=1;heads=2;seq=64;hdim=32;pass=fwd,bwd,fwd_bwd");
  REQUIRE(s.shapes.size() == 3);
  CHECK(s.shapes[0].pass == Pass::fwd);
  CHECK(s.shapes[1].pass == Pass::bwd);
  CHECK(s.shapes[2].pass == Pass::fwd_bwd);
  CHECK(s.shapes[0].label() != s.shapes[1].label());
  CHECK(s.shapes[1].label() != s.shapes[2].label());
  CHECK_THROWS_AS(parse_axes("batch=1;heads=2;seq=64;pass=backward"), InputError);
  CHECK_THROWS_AS(parse_axes("batch=1;heads=2;seq_q=1;seq_k=64;page_size=16;pass=bwd"), InputError);
}

TEST_CASE("preset names; an unknown preset is an InputError naming it") {
  CHECK(preset_names() ==
        std::vector<std::string>{"quick", "fa-bench", "fa-bench-train", "fa-bench-fp8", "long-context", "decode",
                                 "serving", "training"});
  CHECK_THROWS_AS(preset("fast"), InputError);
  CHECK_THROWS_WITH(preset("fast"), Catch::Contains("'fast'"));
}

TEST_CASE("parse_shape: one shape, comma-separated") {
  CHECK(parse_shape("batch=8,heads=16,seq=2048,hdim=128,dtype=bf16") ==
        Shape{8, 16, 16, 2048, 2048, 128, false, DType::bf16});
  CHECK(parse_shape(" batch=2, heads=8, kv_heads=2, seq=1, seq_k=4096, hdim=64, causal=1, dtype=fp16 ") ==
        Shape{2, 8, 2, 1, 4096, 64, true, DType::fp16});
  CHECK(parse_shape("tokens=16384,dim=2048,seq=4096,hdim=128") == Shape{4, 16, 16, 4096, 4096, 128, false, DType::bf16});
  CHECK_THROWS_WITH(parse_shape("seq=512:2048:x2"), Catch::Contains("512:2048:x2"));
  CHECK_THROWS_WITH(parse_shape("batch=8,sequence=2048"), Catch::Contains("sequence"));
  CHECK_THROWS_WITH(parse_shape("batch=8,seq=2048,batch=4"), Catch::Contains("batch"));
  CHECK_THROWS_WITH(parse_shape("batch=8"), Catch::Contains("seq"));
  CHECK_THROWS_WITH(parse_shape("heads=16,kv_heads=3,seq=64"), Catch::Contains("kv_heads=3"));
  CHECK_THROWS_AS(parse_shape(""), InputError);
}

TEST_CASE("load_sweep_file: axes, preset or explicit shapes") {
  write_file("sweep_axes.json", R"({"axes": "seq=128,256;causal=0,1"})");
  const auto a = load_sweep_file("sweep_axes.json");
  CHECK(a.shapes.size() == 4);
  CHECK(a.text == "seq=128,256;causal=0,1");

  write_file("sweep_preset.json", R"({"preset": "fa-bench"})");
  const auto p = load_sweep_file("sweep_preset.json");
  CHECK(p.preset == "fa-bench");
  CHECK(p.shapes.size() == 48);

  write_file("sweep_shapes.json", R"({"shapes": [
      {"batch": 2, "heads": 8, "kv_heads": 2, "seq_q": 100, "seq_k": 300, "hdim": 128, "causal": true, "dtype": "fp16"},
      {"seq": 64, "causal": 0}]})");
  const auto s = load_sweep_file("sweep_shapes.json");
  REQUIRE(s.shapes.size() == 2);
  CHECK(s.shapes[0] == Shape{2, 8, 2, 100, 300, 128, true, DType::fp16});
  CHECK(s.shapes[1] == Shape{1, 1, 1, 64, 64, 64, false, DType::bf16});
  CHECK(s.text.find("shapes") == std::string::npos);  // the array itself, compact
  for (const char* f : {"sweep_axes.json", "sweep_preset.json", "sweep_shapes.json"}) std::remove(f);
}

TEST_CASE("load_sweep_file: unreadable or invalid files are InputErrors naming the problem") {
  const auto rejected = [](const std::string& text, const std::string& token) {
    INFO("file: " << text);
    write_file("sweep_bad.json", text);
    try {
      load_sweep_file("sweep_bad.json");
      FAIL("no InputError");
    } catch (const InputError& e) {
      INFO("message: " << e.what());
      CHECK(std::string(e.what()).find(token) != std::string::npos);
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
    }
    std::remove("sweep_bad.json");
  };
  CHECK_THROWS_AS(load_sweep_file("no/such/sweep.json"), InputError);
  rejected("{not json", "not valid JSON");
  rejected(R"({"axes": "seq=1", "preset": "quick"})", "exactly one");
  rejected(R"({"grid": "seq=1"})", "'grid'");
  rejected(R"({"axes": 5})", "\"axes\"");
  rejected(R"({"axes": "seq=0"})", "'0'");
  rejected(R"({"preset": "slow"})", "'slow'");
  rejected(R"({"shapes": []})", "non-empty");
  rejected(R"({"shapes": [{"seq": 64}, {"seq": 64.5}]})", "shapes[1]");
  rejected(R"({"shapes": [{"seq": 64, "heads": 6, "kv_heads": 4}]})", "kv_heads=4");
  rejected(R"({"shapes": [{"seq": 64, "colour": 1}]})", "colour");
  rejected(R"({"shapes": [{"seq": 64}, {"seq": 64}]})", "appears twice");
  rejected(R"({"shapes": [7]})", "shapes[0]");
}

TEST_CASE("kv_dtype and kv_scale: quantized points at each scale, the unquantized one once") {
  const auto s = parse_axes("batch=2;heads=8;kv_heads=2;seq_q=1;seq_k=512;kv_dtype=bf16,fp8_e4m3,int8;kv_scale=tensor,token");
  REQUIRE(s.shapes.size() == 5);
  const std::vector<std::pair<KvDType, KvScale>> want = {{KvDType::none, KvScale::tensor},
                                                         {KvDType::fp8_e4m3, KvScale::tensor},
                                                         {KvDType::fp8_e4m3, KvScale::token},
                                                         {KvDType::int8, KvScale::tensor},
                                                         {KvDType::int8, KvScale::token}};
  for (size_t i = 0; i < want.size(); ++i) {
    INFO(s.shapes[i].label());
    CHECK(s.shapes[i].kv_dtype == want[i].first);
    CHECK(s.shapes[i].kv_scale == want[i].second);
  }
  CHECK(s.shapes[0].label() == "b2 h8/2 s1x512 d64 bf16");
  CHECK(s.shapes[4].label() == "b2 h8/2 s1x512 d64 bf16 kv-int8/token");
  // The dtype axis may come after kv_dtype; each float name must be the point's dtype.
  const auto fp16 = parse_axes("seq=64;kv_dtype=fp16,int8;kv_scale=head;dtype=fp16");
  REQUIRE(fp16.shapes.size() == 2);
  CHECK_FALSE(fp16.shapes[0].quantized_kv());
  CHECK(fp16.shapes[1].kv_dtype == KvDType::int8);
  CHECK(fp16.shapes[1].kv_scale == KvScale::head);
  CHECK(parse_axes("seq=64;kv_dtype=fp8;kv_scale=head").shapes[0].kv_dtype == KvDType::fp8_e4m3);
  CHECK(parse_shape("seq_q=1,seq_k=256,kv_dtype=int8,kv_scale=token").kv_scale == KvScale::token);
  // A preset's text is its expansion, kv_dtype included.
  CHECK(parse_axes(preset("decode").text).shapes == preset("decode").shapes);
  CHECK(parse_axes(preset("serving").text).shapes == preset("serving").shapes);
}

TEST_CASE("kv_dtype and kv_scale: unknown values, a float name other than the dtype, impossible points") {
  require_rejected("seq=64;kv_dtype=int4", "int4");
  require_rejected("seq=64;kv_dtype=int8;kv_scale=channel", "channel");
  require_rejected("seq=64;dtype=bf16;kv_dtype=fp16", "kv_dtype=fp16 with dtype=bf16");
  require_rejected("seq=64;kv_dtype=bf16;dtype=bf16,fp16", "kv_dtype=bf16 with dtype=fp16");
  require_rejected("seq=64;kv_dtype=int8,int8", "int8");
  require_rejected("seq=64;kv_dtype=", "kv_dtype");
  require_rejected("seq=64;kv_dtype=int8;dtype=fp32", "fp16 or bf16");
  require_rejected("seq=64;kv_dtype=int8;pass=bwd", "forward pass only");
}

TEST_CASE("kv_dtype, kv_scale and pass in a sweep file's shapes: strings; a results file's shape object read back") {
  const auto file = parse_sweep_file(
      R"({"shapes": [{"seq_q": 1, "seq_k": 256, "kv_dtype": "fp8_e4m3", "kv_scale": "token", "page_size": 16, "pass": "fwd"},
                     {"seq_q": 1, "seq_k": 256, "kv_dtype": "bf16"}]})",
      "q.json");
  REQUIRE(file.shapes.size() == 2);
  CHECK(file.shapes[0].kv_dtype == KvDType::fp8_e4m3);
  CHECK(file.shapes[0].kv_scale == KvScale::token);
  CHECK(file.shapes[0].page_size == 16);
  CHECK(file.shapes[0].pass == Pass::fwd);
  CHECK_FALSE(file.shapes[1].quantized_kv());
  Shape s{4, 8, 2, 1, 300, 64, true, DType::fp16};
  s.kv_dtype = KvDType::int8;
  s.kv_scale = KvScale::head;
  const nlohmann::json j = s;
  CHECK(parse_sweep_file(nlohmann::json{{"shapes", {j}}}.dump(), "r.json").shapes[0] == s);
  const auto refused = [](const std::string& text, const std::string& token) {
    INFO(text);
    CHECK_THROWS_AS(parse_sweep_file(text, "q.json"), InputError);
    CHECK_THROWS_WITH(parse_sweep_file(text, "q.json"), Catch::Contains(token));
  };
  refused(R"({"shapes": [{"seq": 64, "kv_dtype": 8}]})", "is not a dtype name");
  refused(R"({"shapes": [{"seq": 64, "kv_dtype": "int8", "kv_scale": 1}]})", "is not a scale granularity");
  refused(R"({"shapes": [{"seq": 64, "kv_dtype": "int8", "kv_scale": "row"}]})", "row");
  refused(R"({"shapes": [{"seq": 64, "kv_dtype": "int8;seq=9"}]})", "kv_dtype");
  refused(R"({"shapes": [{"seq": 64, "pass": 1}]})", "is not a pass name");
  refused(R"({"shapes": [{"seq": 64, "dtype": "bf16", "kv_dtype": "fp16"}]})", "kv_dtype=fp16 with dtype=bf16");
}

TEST_CASE("preset fa-bench-fp8: each fp8 prefill point right after its bf16 twin, at fa-bench's 16k tokens") {
  const auto spec = preset("fa-bench-fp8");
  REQUIRE(spec.shapes.size() == 2 * 2 * 3 * 2);  // hdim x causal x seq x dtype
  std::map<std::string, int> seen;
  for (size_t i = 0; i < spec.shapes.size(); i += 2) {
    const Shape& bf16 = spec.shapes[i];
    const Shape& fp8 = spec.shapes[i + 1];
    INFO(bf16.label());
    CHECK(bf16.dtype == DType::bf16);
    CHECK_FALSE(bf16.quantized_kv());
    CHECK(fp8.dtype == DType::fp8_e4m3);
    CHECK(fp8.kv_dtype == KvDType::fp8_e4m3);
    CHECK(fp8.kv_scale == KvScale::tensor);
    Shape twin = fp8;
    twin.dtype = DType::bf16;
    twin.kv_dtype = KvDType::none;
    CHECK(twin == bf16);
    CHECK(bf16.batch * bf16.seq_q == 16384);
    CHECK(bf16.heads * bf16.hdim == 2048);
    CHECK(bf16.kv_heads == bf16.heads);
    CHECK((bf16.hdim == 128 || bf16.hdim == 256));
    CHECK((bf16.seq_q == 4096 || bf16.seq_q == 8192 || bf16.seq_q == 16384));
    CHECK(fp8.label() == fmt::format("b{} h{}/{} s{}x{} d{}{} fp8_e4m3", fp8.batch, fp8.heads, fp8.kv_heads, fp8.seq_q,
                                     fp8.seq_k, fp8.hdim, fp8.causal ? " causal" : ""));
    ++seen[fmt::format("{}/{}", bf16.hdim, bf16.causal)];
  }
  CHECK(seen == std::map<std::string, int>{{"128/false", 3}, {"128/true", 3}, {"256/false", 3}, {"256/true", 3}});
  CHECK(parse_axes(spec.text).shapes == spec.shapes);
}

TEST_CASE("dtype fp8_e4m3: K and V fp8 per tensor implied; kv_dtype=fp8 with a float dtype still a quantized cache") {
  const auto s = parse_axes("batch=2;heads=8;kv_heads=2;seq=256;hdim=64;causal=1;dtype=bf16,fp8_e4m3");
  REQUIRE(s.shapes.size() == 2);
  CHECK(s.shapes[1].quantized_q());
  CHECK(s.shapes[1].kv_dtype == KvDType::fp8_e4m3);
  CHECK(s.shapes[1].label() == "b2 h8/2 s256x256 d64 causal fp8_e4m3");
  // Written out in full it is the same point; a quantized KV cache of a bf16 point stays one.
  CHECK(parse_shape("seq=64,dtype=fp8,kv_dtype=fp8_e4m3,kv_scale=tensor") == parse_shape("seq=64,dtype=e4m3"));
  const auto kv = parse_axes("seq=64;dtype=bf16;kv_dtype=fp8_e4m3;kv_scale=head");
  REQUIRE(kv.shapes.size() == 1);
  CHECK(kv.shapes[0].dtype == DType::bf16);
  CHECK(kv.shapes[0].kv_dtype == KvDType::fp8_e4m3);
  CHECK(kv.shapes[0].kv_scale == KvScale::head);
  // kv_scale applies to the quantized points: a bf16 point is made once, an fp8 one at tensor.
  const auto mixed = parse_axes("seq=64;dtype=bf16,fp8_e4m3;kv_scale=tensor");
  REQUIRE(mixed.shapes.size() == 2);
  // A sweep file's shape, and the shape of a results file read back.
  const auto file = parse_sweep_file(R"({"shapes": [{"seq": 64, "dtype": "fp8_e4m3"}]})", "f.json");
  REQUIRE(file.shapes.size() == 1);
  CHECK(file.shapes[0] == mixed.shapes[1]);
  const nlohmann::json j = mixed.shapes[1];
  CHECK(parse_sweep_file(nlohmann::json{{"shapes", {j}}}.dump(), "r.json").shapes[0] == mixed.shapes[1]);
}

TEST_CASE("dtype fp8_e4m3: another KV format, a float kv_dtype and a backward pass are one-line errors") {
  require_rejected("seq=64;dtype=bf16,fp8_e4m3,fp8", "repeats");  // two spellings of one dtype
  require_rejected("seq=64;dtype=fp8_e4m3;kv_dtype=int8", "kv_dtype int8 with dtype fp8_e4m3");
  require_rejected("seq=64;dtype=fp8_e4m3;kv_dtype=fp8;kv_scale=head", "kv_scale head with dtype fp8_e4m3");
  require_rejected("seq=64;kv_scale=token;dtype=fp8_e4m3", "kv_scale token with dtype fp8_e4m3");
  require_rejected("seq=64;dtype=fp8_e4m3;kv_dtype=bf16", "kv_dtype=bf16 with dtype=fp8_e4m3");
  require_rejected("seq=64;kv_dtype=fp8_e4m3,bf16;dtype=fp8_e4m3", "kv_dtype=bf16 with dtype=fp8_e4m3");
  require_rejected("seq=64;dtype=fp8_e4m3;pass=bwd", "forward pass only");
  require_rejected("seq=64;dtype=fp8_e4m3;pass=fwd_bwd", "forward pass only");
  require_rejected("seq=64;dtype=fp8_e5m2", "fp8_e5m2");
  CHECK_THROWS_WITH(parse_sweep_file(R"({"shapes": [{"seq": 64, "dtype": "fp8", "kv_dtype": "int8"}]})", "f.json"),
                    Catch::Contains("kv_dtype int8 with dtype fp8_e4m3"));
}
