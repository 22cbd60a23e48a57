// The sweep grammar (docs/sweep-spec.md): parsing, range expansion, axis ties, presets, sweep files.
// Every error is an InputError whose one-line message quotes the offending token.
#include "core/sweep_spec.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/escape.hpp"
#include "core/files.hpp"
#include "core/lengths.hpp"
#include "core/strings.hpp"

namespace attnprof::core {

namespace {

enum class Axis {
  batch, heads, kv_heads, seq, seq_q, seq_k, hdim, hdim_v, causal, dtype, tokens, dim, page_size, kv_splits,
  window, lengths, lengths_seed, pass, kv_dtype, kv_scale
};

struct AxisName {
  std::string_view name;
  Axis axis;
};

constexpr std::array<AxisName, 20> kAxes{{
    {"batch", Axis::batch},
    {"heads", Axis::heads},
    {"kv_heads", Axis::kv_heads},
    {"seq", Axis::seq},
    {"seq_q", Axis::seq_q},
    {"seq_k", Axis::seq_k},
    {"hdim", Axis::hdim},
    {"hdim_v", Axis::hdim_v},
    {"causal", Axis::causal},
    {"dtype", Axis::dtype},
    {"tokens", Axis::tokens},
    {"dim", Axis::dim},
    {"page_size", Axis::page_size},
    {"kv_splits", Axis::kv_splits},
    {"window", Axis::window},
    {"lengths", Axis::lengths},
    {"lengths_seed", Axis::lengths_seed},
    {"pass", Axis::pass},
    {"kv_dtype", Axis::kv_dtype},
    {"kv_scale", Axis::kv_scale},
}};

// kv_dtype's values: KvDType's, or kKvDTypeNamed + a DType for a float dtype name, which must be the
// point's dtype (checked when the shape is built, since the dtype axis may come later).
constexpr int64_t kKvDTypeNamed = 100;

// Axes whose value 0 means "off" (contiguous KV, the kernel's own split count, no window), and the
// draw's seed, which any value is.
constexpr bool allows_zero(Axis a) {
  return a == Axis::page_size || a == Axis::kv_splits || a == Axis::window || a == Axis::lengths_seed;
}

// A packed batch's lengths when the sweep names no seed.
constexpr int64_t kDefaultLengthsSeed = 1;

// Pairs of axes that set the same field and so cannot both be given.
constexpr std::array<std::pair<Axis, Axis>, 6> kExclusive{{
    {Axis::tokens, Axis::batch},
    {Axis::dim, Axis::heads},
    {Axis::seq, Axis::seq_q},
    {Axis::lengths, Axis::seq},
    {Axis::lengths, Axis::seq_q},
    {Axis::lengths, Axis::seq_k},
}};

std::string_view name_of(Axis a) {
  for (const auto& n : kAxes)
    if (n.axis == a) return n.name;
  return "?";
}

std::string known_axes() {
  std::vector<std::string_view> names;
  for (const auto& axis : kAxes) names.push_back(axis.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// One axis as written: "seq=512:4096:x2" -> axis seq, values {512, 1024, 2048, 4096}.
// causal is stored as 0/1, dtype, pass and kv_scale as their enums' underlying values, kv_dtype as above,
// so every axis is a list of ints;
// lengths stores the index of its distribution in `lengths`.
struct AxisValues {
  Axis axis;
  std::string token;  // the whole "name=values" text, for messages
  std::vector<int64_t> values;
  std::vector<LengthDistribution> lengths{};
};

// `what` prefixes every message: "sweep spec" or "shape".
struct Parser {
  std::string what;

  [[noreturn]] void fail(const std::string& message) const {
    throw InputError(fmt::format("{}: {}", what, message));
  }

  int64_t parse_int(std::string_view text, std::string_view axis, std::string_view token) const {
    int64_t v = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || ptr != end)
      fail(fmt::format("value '{}' of axis '{}' in '{}' is not an integer", text, axis, token));
    return v;
  }

  int64_t parse_positive(std::string_view text, std::string_view axis, std::string_view token) const {
    const int64_t v = parse_int(text, axis, token);
    if (v <= 0) fail(fmt::format("value '{}' of axis '{}' must be positive", text, axis));
    return v;
  }

  // "a:b:xk" (a, a*k, a*k^2, ... <= b) or "a:b:+k" (a, a+k, ... <= b).
  void expand_range(std::string_view item, std::string_view axis, std::vector<int64_t>& out) const {
    const auto parts = split(item, ':');
    const auto bad = [&](std::string_view why) {
      fail(fmt::format("bad range '{}' for axis '{}': {}", item, axis, why));
    };
    if (parts.size() != 3) bad("expected a:b:xk or a:b:+k");
    const int64_t a = parse_positive(trim(parts[0]), axis, item);
    const int64_t b = parse_positive(trim(parts[1]), axis, item);
    const std::string_view step = trim(parts[2]);
    if (a > b) bad(fmt::format("start {} is greater than end {}", a, b));
    if (step.empty() || (step[0] != 'x' && step[0] != '+')) bad("step must be xK or +K");
    const int64_t k = parse_int(step.substr(1), axis, item);
    const size_t first = out.size();
    const auto push = [&](int64_t v) {
      if (static_cast<int64_t>(out.size() - first) >= kMaxSweepPoints)
        bad(fmt::format("more than {} values", kMaxSweepPoints));
      out.push_back(v);
    };
    if (step[0] == 'x') {
      if (k <= 1) bad(fmt::format("factor {} must be greater than 1", k));
      for (int64_t v = a;; v *= k) {
        push(v);
        if (v > b / k) break;  // the next value passes b (and this guard keeps v * k from overflowing)
      }
    } else {
      if (k <= 0) bad(fmt::format("increment {} must be positive", k));
      for (int64_t v = a;; v += k) {
        push(v);
        if (v > b - k) break;
      }
    }
  }

  // A value head dim: what Shape::validate accepts, refused here with the token that gave it.
  void check_hdim_v(int64_t v, std::string_view token) const {
    if (v % kHdimVStep != 0 || v > kMaxHdimV)
      fail(fmt::format("value {} of axis 'hdim_v' in '{}' is not a multiple of {} up to {}", v, token, kHdimVStep,
                       kMaxHdimV));
  }

  int64_t parse_causal(std::string_view item) const {
    std::string lower(item);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower == "0" || lower == "false") return 0;
    if (lower == "1" || lower == "true") return 1;
    fail(fmt::format("value '{}' of axis 'causal' is not 0, 1, true or false", item));
  }

  // "name=values"; `allow_lists` is false for a single shape, where each key takes exactly one value.
  // `context` is the text the segment came from, quoted when the segment itself is empty.
  AxisValues parse_axis(std::string_view segment, bool allow_lists, std::string_view context) const {
    const std::string_view token = trim(segment);
    if (token.empty()) fail(fmt::format("empty axis (a stray separator) in '{}'", trim(context)));
    const size_t eq = token.find('=');
    if (eq == std::string_view::npos) fail(fmt::format("'{}' is not name=values", token));
    const std::string_view name = trim(token.substr(0, eq));
    const auto found = std::find_if(kAxes.begin(), kAxes.end(), [&](const AxisName& n) { return n.name == name; });
    if (found == kAxes.end()) fail(fmt::format("unknown axis '{}' (known: {})", name, known_axes()));
    AxisValues av{found->axis, std::string(token), {}};
    const std::string_view values = trim(token.substr(eq + 1));
    if (values.empty()) fail(fmt::format("empty value for axis '{}' in '{}'", name, token));
    for (std::string_view raw : split(values, ',')) {
      const std::string_view item = trim(raw);
      if (item.empty()) fail(fmt::format("empty value in '{}'", token));
      const size_t before = av.values.size();
      if (av.axis == Axis::lengths) {
        LengthDistribution d;
        try {
          d = parse_lengths(item);
        } catch (const InputError& e) {
          fail(e.what());
        }
        for (const auto& earlier : av.lengths)
          if (earlier.text == d.text) fail(fmt::format("value '{}' repeats in '{}'", item, token));
        av.values.push_back(static_cast<int64_t>(av.lengths.size()));
        av.lengths.push_back(std::move(d));
        continue;
      }
      if (av.axis == Axis::causal) {
        av.values.push_back(parse_causal(item));
      } else if (av.axis == Axis::dtype) {
        av.values.push_back(static_cast<int64_t>(parse_dtype(item)));
      } else if (av.axis == Axis::pass) {
        av.values.push_back(static_cast<int64_t>(parse_pass(item)));
      } else if (av.axis == Axis::kv_dtype) {
        // A quantized name gives the same value for every dtype; a float name is checked against the
        // point's dtype when the shape is built.
        const std::string name(item);
        if (const auto quantized = quantized_kv_dtype_named(name)) {
          av.values.push_back(static_cast<int64_t>(*quantized));
        } else {
          DType named{};
          try {
            named = parse_dtype(name);
          } catch (const InputError&) {
            parse_kv_dtype(name, DType::bf16);  // throws: an unknown kv_dtype, named
          }
          av.values.push_back(kKvDTypeNamed + static_cast<int64_t>(named));
        }
      } else if (av.axis == Axis::kv_scale) {
        av.values.push_back(static_cast<int64_t>(parse_kv_scale(item)));
      } else if (item.find(':') != std::string_view::npos) {
        if (!allow_lists) fail(fmt::format("'{}' is a range; a single shape takes one value per axis", token));
        expand_range(item, name, av.values);
      } else if (allows_zero(av.axis) && item == "0") {
        av.values.push_back(0);
      } else {
        av.values.push_back(parse_positive(item, name, token));
      }
      if (av.axis == Axis::hdim_v)
        for (size_t i = before; i < av.values.size(); ++i) check_hdim_v(av.values[i], token);
      for (size_t i = before; i < av.values.size(); ++i)
        if (std::find(av.values.begin(), av.values.begin() + static_cast<std::ptrdiff_t>(before),
                      av.values[i]) != av.values.begin() + static_cast<std::ptrdiff_t>(before))
          fail(fmt::format("value '{}' repeats in '{}'", item, token));
    }
    return av;
  }

  // Checks the axes of one product against each other.
  void check_axes(const std::vector<AxisValues>& axes) const {
    const auto has = [&](Axis a) {
      return std::any_of(axes.begin(), axes.end(), [&](const AxisValues& v) { return v.axis == a; });
    };
    for (size_t i = 0; i < axes.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (axes[i].axis == axes[j].axis)
          fail(fmt::format("duplicate axis '{}' in '{}'", name_of(axes[i].axis), axes[i].token));
    for (const auto& [a, b] : kExclusive)
      if (has(a) && has(b))
        fail(fmt::format("axis '{}' cannot be combined with '{}' (it sets the same field)", name_of(a),
                         name_of(b)));
    if (!has(Axis::seq) && !has(Axis::seq_q) && !has(Axis::lengths)) fail("missing axis 'seq' (or 'seq_q', or 'lengths')");
    if (has(Axis::lengths_seed) && !has(Axis::lengths)) fail("axis 'lengths_seed' needs a 'lengths' axis");
  }

  // Builds the shape for one combination of values (one index per axis) and checks the ties.
  Shape make_shape(const std::vector<AxisValues>& axes, const std::vector<size_t>& index) const {
    Shape s;
    std::optional<int64_t> kv_heads, seq_k, tokens, dim, batch;
    const LengthDistribution* lengths = nullptr;
    int64_t lengths_seed = kDefaultLengthsSeed;
    int64_t kv_dtype = static_cast<int64_t>(KvDType::none);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t v = axes[i].values[index[i]];
      switch (axes[i].axis) {
        case Axis::batch: batch = v; break;
        case Axis::heads: s.heads = v; break;
        case Axis::kv_heads: kv_heads = v; break;
        case Axis::seq: s.seq_q = v; break;
        case Axis::seq_q: s.seq_q = v; break;
        case Axis::seq_k: seq_k = v; break;
        case Axis::hdim: s.hdim = v; break;
        case Axis::hdim_v: s.hdim_v = v; break;
        case Axis::causal: s.causal = v != 0; break;
        case Axis::dtype: s.dtype = static_cast<DType>(v); break;
        case Axis::tokens: tokens = v; break;
        case Axis::dim: dim = v; break;
        case Axis::page_size: s.page_size = v; break;
        case Axis::kv_splits: s.kv_splits = v; break;
        case Axis::window: s.window = v; break;
        case Axis::lengths: lengths = &axes[i].lengths[static_cast<size_t>(v)]; break;
        case Axis::lengths_seed: lengths_seed = v; break;
        case Axis::pass: s.pass = static_cast<Pass>(v); break;
        case Axis::kv_dtype: kv_dtype = v; break;
        case Axis::kv_scale: s.kv_scale = static_cast<KvScale>(v); break;
      }
    }
    if (kv_dtype >= kKvDTypeNamed) {
      const auto named = static_cast<DType>(kv_dtype - kKvDTypeNamed);
      if (s.quantized_q())
        fail(fmt::format("kv_dtype={} with dtype=fp8_e4m3: fp8 prefill stores K and V in fp8 E4M3 (kv_dtype=fp8_e4m3, "
                         "or no kv_dtype)", to_string(named)));
      if (named != s.dtype)
        fail(fmt::format("kv_dtype={} with dtype={}: K and V are stored in the dtype or quantized (fp8_e4m3, int8)",
                         to_string(named), to_string(s.dtype)));
      s.kv_scale = KvScale::tensor;  // an unquantized point's (expand makes it once)
    } else {
      s.kv_dtype = static_cast<KvDType>(kv_dtype);
      if (!s.quantized_kv() && !s.quantized_q()) s.kv_scale = KvScale::tensor;
    }
    try {
      imply_fp8_kv_format(s);  // dtype=fp8_e4m3: K and V in fp8 per tensor
    } catch (const InputError& e) {
      fail(e.what());
    }
    s.batch = batch.value_or(s.batch);
    s.seq_k = seq_k.value_or(s.seq_q);
    if (lengths) {
      if (lengths->is_list() && (batch || tokens))
        fail(fmt::format("lengths={} sets the batch ({} sequences): drop '{}'", lengths->text, lengths->list.size(),
                         batch ? "batch" : "tokens"));
      try {
        s.seq_lens = tokens ? draw_lengths_to_tokens(*lengths, *tokens, static_cast<uint64_t>(lengths_seed))
                            : draw_lengths(*lengths, s.batch, static_cast<uint64_t>(lengths_seed));
      } catch (const InputError& e) {
        fail(e.what());
      }
      s.lengths = lengths->text;
      s.lengths_seed = lengths->is_list() ? 0 : lengths_seed;
      s.batch = static_cast<int64_t>(s.seq_lens.size());
      s.seq_q = s.seq_k = *std::max_element(s.seq_lens.begin(), s.seq_lens.end());
      tokens.reset();
    }
    if (tokens) {
      if (*tokens % s.seq_q != 0) fail(fmt::format("tokens={} is not divisible by seq={}", *tokens, s.seq_q));
      s.batch = *tokens / s.seq_q;
    }
    if (dim) {
      if (*dim % s.hdim != 0) fail(fmt::format("dim={} is not divisible by hdim={}", *dim, s.hdim));
      s.heads = *dim / s.hdim;
    }
    if (kv_heads && s.heads % *kv_heads != 0)
      fail(fmt::format("kv_heads={} does not divide heads={}", *kv_heads, s.heads));
    s.kv_heads = kv_heads.value_or(s.heads);
    if (s.hdim_v == s.hdim) s.hdim_v = 0;  // one point, however it is spelled (Shape::hdim_v)
    s.validate();
    return s;
  }

  // Cartesian product, first axis slowest. `points_so_far` counts earlier products of a '|' union.
  void expand(const std::vector<AxisValues>& axes, std::string_view product, int64_t points_so_far,
              std::vector<Shape>& out) const {
    int64_t points = 1;
    for (const auto& a : axes) {
      points *= static_cast<int64_t>(a.values.size());  // each factor <= kMaxSweepPoints: no overflow
      if (points + points_so_far > kMaxSweepPoints)
        fail(fmt::format("'{}' has more than {} points", trim(product), kMaxSweepPoints));
    }
    std::vector<size_t> index(axes.size(), 0);
    int64_t sequences = 0;
    for (const Shape& s : out) sequences += static_cast<int64_t>(s.seq_lens.size());
    // kv_scale applies to quantized points only: an unquantized one is made once, at its first value.
    const auto scale_axis = std::find_if(axes.begin(), axes.end(), [](const AxisValues& a) { return a.axis == Axis::kv_scale; });
    const auto scale_index = static_cast<size_t>(scale_axis - axes.begin());
    for (int64_t p = 0; p < points; ++p) {
      Shape shape = make_shape(axes, index);
      const bool repeat = !shape.quantized_kv() && scale_axis != axes.end() && index[scale_index] != 0;
      if (!repeat) {
        sequences += static_cast<int64_t>(shape.seq_lens.size());
        out.push_back(std::move(shape));
      }
      if (sequences > kMaxSweepSequences)
        fail(fmt::format("'{}' draws more than {} sequence lengths in all", trim(product), kMaxSweepSequences));
      for (size_t i = axes.size(); i-- > 0;) {
        if (++index[i] < axes[i].values.size()) break;
        index[i] = 0;
      }
    }
  }
};

void reject_repeats(const std::vector<Shape>& shapes, const Parser& parser) {
  std::set<std::string> seen;
  for (const auto& s : shapes)
    if (!seen.insert(s.label()).second) parser.fail(fmt::format("point '{}' appears twice", s.label()));
}

// Lengths as a label writes them (5/1/9), the first few only: a packed batch may hold 65536.
std::string lengths_text(const std::vector<int64_t>& lens) {
  constexpr size_t kShown = 8;
  std::string out = fmt::format("{}", fmt::join(lens.begin(), lens.begin() + std::min(lens.size(), kShown), "/"));
  if (lens.size() > kShown) out += fmt::format("/... ({} lengths)", lens.size());
  return out;
}

// A file's packed shape carries the lengths it runs (seq_lens) and the distribution its label names
// (lengths, lengths_seed); they must agree, or its points are labelled with a draw they did not run.
// They agree when seq_lens are the list, or the seed's draw of as many lengths (a batch), or its draw
// to their sum (a tokens budget, the last length clipped).
void check_drawn_from(const Shape& shape, const LengthDistribution& d) {
  const std::vector<int64_t>& lens = shape.seq_lens;
  std::vector<int64_t> drawn;
  if (d.is_list()) {
    if (lens == d.list) return;
    drawn = d.list;
  } else {
    const auto seed = static_cast<uint64_t>(shape.lengths_seed);
    drawn = draw_lengths(d, static_cast<int64_t>(lens.size()), seed);
    if (lens == drawn) return;
    try {
      if (lens == draw_lengths_to_tokens(d, shape.tokens_q(), seed)) return;
    } catch (const InputError&) {
      // a budget the distribution cannot fill within the sequence limit: not its draw either
    }
  }
  throw InputError(fmt::format(
      "shape '{}': seq_lens {} contradict lengths '{}'{} (which {} {}): drop \"lengths\" to run these lengths "
      "as a list, or \"seq_lens\" to draw them",
      shape.label(), lengths_text(lens), d.text, d.is_list() ? "" : fmt::format(" seed {}", shape.lengths_seed),
      d.is_list() ? "lists" : fmt::format("draws, for {} sequences,", lens.size()), lengths_text(drawn)));
}

struct PresetDef {
  std::string_view name;
  std::string_view axes;
};

// quick: small enough for the CPU backend on a 2-core CI machine; covers causal and GQA.
// fa-bench: the FlashAttention-2 paper's forward benchmark (16k tokens, model dim 2048).
// fa-bench-train: fa-bench's 48 shapes for each pass, forward, backward and both (the paper's backward
//   and forward + backward benchmarks); pass slowest, so its first 48 points are fa-bench's.
// fa-bench-fp8: fp8 prefill beside bf16 at fa-bench's 16k tokens and model dim 2048, the head dims and
//   lengths FlashAttention-3's fp8 benchmark reports (hdim 128 and 256, 4k-16k); dtype fastest, so each
//   fp8 point follows its bf16 twin.
// long-context: a GQA model (16 query heads, 2 kv heads, hdim 128) at 16k-128k context, batch 1.
// decode: one new token per sequence against a KV cache of 1k-128k tokens, batch 1-256, GQA 32/8 and
//   64/8, contiguous and paged (64-token pages); batch 256 stops at 32k (128k would need 137 GB); the KV
//   cache in bf16 and quantized to fp8 E4M3 and int8 with one scale per kv head.
// serving: prefill and decode of real models (docs/sweep-spec.md names the model of each point; decode's
//   KV cache in bf16, fp8 E4M3 and int8 with a scale per kv head); the
//   last is DeepSeek-V3's MLA prefill per GPU at tensor parallel 8 (hdim 192, hdim_v 128).
// training: the serving preset's models in a training step, 16k tokens per call at their pretraining
//   context (8k; Mistral-7B and DeepSeek-V3 4k), causal, bf16, each model's forward, backward and both
//   adjacent (pass fastest).
constexpr std::array<PresetDef, 8> kPresets{{
    {"quick",
     "batch=2;heads=4;seq=128,512;hdim=64;causal=0,1;dtype=bf16"
     " | batch=2;heads=4;kv_heads=2;seq=256;hdim=64;causal=1;dtype=bf16"},
    {"fa-bench", "tokens=16384;dim=2048;dtype=bf16,fp16;hdim=64,128;causal=0,1;seq=512:16384:x2"},
    {"fa-bench-train",
     "pass=fwd,bwd,fwd_bwd;tokens=16384;dim=2048;dtype=bf16,fp16;hdim=64,128;causal=0,1;seq=512:16384:x2"},
    {"fa-bench-fp8", "tokens=16384;dim=2048;hdim=128,256;causal=0,1;seq=4096,8192,16384;dtype=bf16,fp8_e4m3"},
    {"long-context", "batch=1;dim=2048;kv_heads=2;hdim=128;causal=1;dtype=bf16;seq=16384:131072:x2"},
    {"decode",
     "heads=32,64;kv_heads=8;hdim=128;dtype=bf16;kv_dtype=bf16,fp8_e4m3,int8;kv_scale=head;seq_q=1;page_size=0,64;"
     "batch=1,16,64;seq_k=1024,8192,32768,131072"
     " | heads=32,64;kv_heads=8;hdim=128;dtype=bf16;kv_dtype=bf16,fp8_e4m3,int8;kv_scale=head;seq_q=1;page_size=0,64;"
     "batch=256;seq_k=1024,8192,32768"},
    {"serving",
     "batch=1;heads=32;kv_heads=8;hdim=128;causal=1;dtype=bf16;seq=8192"
     " | batch=64;heads=32;kv_heads=8;hdim=128;causal=1;dtype=bf16;kv_dtype=bf16,fp8_e4m3,int8;kv_scale=head;seq_q=1;seq_k=8192;page_size=16"
     " | batch=16;heads=32;kv_heads=8;hdim=128;causal=1;dtype=bf16;kv_dtype=bf16,fp8_e4m3,int8;kv_scale=head;seq_q=4;seq_k=8192;page_size=16"
     " | batch=1;heads=8;kv_heads=1;hdim=128;causal=1;dtype=bf16;seq=8192"
     " | batch=64;heads=8;kv_heads=1;hdim=128;causal=1;dtype=bf16;kv_dtype=bf16,fp8_e4m3,int8;kv_scale=head;seq_q=1;seq_k=8192;page_size=16"
     " | batch=1;heads=32;kv_heads=8;hdim=128;causal=1;dtype=bf16;seq=4096"
     " | batch=32;heads=32;kv_heads=8;hdim=128;causal=1;dtype=bf16;kv_dtype=bf16,fp8_e4m3,int8;kv_scale=head;seq_q=1;seq_k=32768;page_size=16"
     " | batch=1;heads=28;kv_heads=4;hdim=128;causal=1;dtype=bf16;seq=8192"
     " | batch=64;heads=28;kv_heads=4;hdim=128;causal=1;dtype=bf16;kv_dtype=bf16,fp8_e4m3,int8;kv_scale=head;seq_q=1;seq_k=8192;page_size=16"
     " | batch=1;heads=16;kv_heads=16;hdim=192;hdim_v=128;causal=1;dtype=bf16;seq=4096"},
    {"training",
     "batch=2;heads=32;kv_heads=8;hdim=128;causal=1;dtype=bf16;seq=8192;pass=fwd,bwd,fwd_bwd"
     " | batch=2;heads=8;kv_heads=1;hdim=128;causal=1;dtype=bf16;seq=8192;pass=fwd,bwd,fwd_bwd"
     " | batch=4;heads=32;kv_heads=8;hdim=128;causal=1;dtype=bf16;seq=4096;pass=fwd,bwd,fwd_bwd"
     " | batch=2;heads=28;kv_heads=4;hdim=128;causal=1;dtype=bf16;seq=8192;pass=fwd,bwd,fwd_bwd"
     " | batch=4;heads=16;kv_heads=16;hdim=192;hdim_v=128;causal=1;dtype=bf16;seq=4096;pass=fwd,bwd,fwd_bwd"},
}};

}  // namespace

SweepSpec parse_axes(std::string_view spec) {
  const Parser parser{"sweep spec"};
  if (trim(spec).empty()) parser.fail("the spec is empty");
  SweepSpec out;
  out.text = std::string(trim(spec));
  for (std::string_view product : split(spec, '|')) {
    if (trim(product).empty()) parser.fail("empty product (a stray '|')");
    std::vector<AxisValues> axes;
    for (std::string_view segment : split(product, ';')) axes.push_back(parser.parse_axis(segment, true, product));
    parser.check_axes(axes);
    parser.expand(axes, product, static_cast<int64_t>(out.shapes.size()), out.shapes);
  }
  reject_repeats(out.shapes, parser);
  return out;
}

Shape parse_shape(std::string_view text) {
  const Parser parser{"shape"};
  if (trim(text).empty()) parser.fail("the shape is empty");
  std::vector<AxisValues> axes;
  for (std::string_view segment : split(text, ',')) axes.push_back(parser.parse_axis(segment, false, text));
  parser.check_axes(axes);
  return parser.make_shape(axes, std::vector<size_t>(axes.size(), 0));
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : kPresets) names.emplace_back(p.name);
  return names;
}

SweepSpec preset(std::string_view name) {
  for (const auto& p : kPresets) {
    if (p.name != name) continue;
    SweepSpec spec = parse_axes(p.axes);
    spec.preset = std::string(p.name);
    return spec;
  }
  throw InputError(fmt::format("unknown preset '{}' (known: {})", name, fmt::join(preset_names(), ", ")));
}

SweepSpec load_sweep_file(const std::string& path) {
  return parse_sweep_file(read_file(path, "sweep file", kMaxSpecFileBytes), path);
}

SweepSpec parse_sweep_file(std::string_view text, const std::string& name) {
  using nlohmann::json;
  const std::string path = escape::one_line(name);  // for messages only
  json doc;
  try {
    doc = parse_json(text);
  } catch (const InputError& e) {
    throw InputError(fmt::format("sweep file '{}': {}", path, e.what()));
  } catch (const json::exception& e) {
    throw InputError(fmt::format("sweep file '{}' is not valid JSON ({})", path, e.what()));
  }
  if (!doc.is_object() || doc.size() != 1)
    throw InputError(fmt::format("sweep file '{}' must hold exactly one of \"axes\", \"preset\", \"shapes\"", path));
  // Not a structured binding of *doc.items().begin(): that binds to a temporary proxy (ASan:
  // stack-use-after-scope).
  const std::string key = doc.begin().key();
  const json& value = doc.begin().value();
  if (key == "axes" || key == "preset") {
    if (!value.is_string())
      throw InputError(fmt::format("sweep file '{}': \"{}\" must be a string", path, key));
    return key == "axes" ? parse_axes(value.get<std::string>()) : preset(value.get<std::string>());
  }
  if (key != "shapes")
    throw InputError(fmt::format("sweep file '{}': unknown key '{}' (expected axes, preset or shapes)", path, key));
  if (!value.is_array() || value.empty())
    throw InputError(fmt::format("sweep file '{}': \"shapes\" must be a non-empty array", path));
  if (static_cast<int64_t>(value.size()) > kMaxSweepPoints)
    throw InputError(fmt::format("sweep file '{}' has more than {} shapes", path, kMaxSweepPoints));

  // Each shape object is turned into the single-shape text form so it gets the very same checks.
  SweepSpec out;
  out.text = dump_json(value);
  for (size_t i = 0; i < value.size(); ++i) {
    const json& obj = value[i];
    const auto where = fmt::format("sweep file '{}' shapes[{}]", path, i);
    if (!obj.is_object() || obj.empty()) throw InputError(fmt::format("{}: not a non-empty object", where));
    // A results file's packed batch carries the lengths it ran (seq_lens), which a redraw need not give
    // back (a tokens budget clipped the last one): they become the list, and the spec text and seed
    // they came from are kept for the label. batch, seq_q and seq_k then follow from them.
    const bool packed = obj.contains("seq_lens");
    std::vector<std::string> axes;  // "name=value", joined into the shape's text form
    if (packed) {
      const json& lens = obj.at("seq_lens");
      if (!lens.is_array() || lens.empty() || static_cast<int64_t>(lens.size()) > kMaxVarlenSequences)
        throw InputError(fmt::format("{}: \"seq_lens\" must be an array of 1 to {} lengths", where, kMaxVarlenSequences));
      for (size_t b = 0; b < lens.size(); ++b)
        if (!lens[b].is_number_integer())
          throw InputError(fmt::format("{}: seq_lens[{}] {} is not an integer", where, b, dump_json(lens[b])));
      axes.push_back(fmt::format("lengths=list:{}", fmt::join(lens.get<std::vector<int64_t>>(), "/")));
    }
    for (const auto& [k, v] : obj.items()) {
      if (packed && (k == "seq_lens" || k == "lengths" || k == "lengths_seed" || k == "batch" || k == "seq_q" ||
                     k == "seq_k"))
        continue;
      // A key is an axis name and nothing more: "seq=16,hdim" would otherwise smuggle a second
      // axis into the text form.
      if (k.empty() || k.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string::npos)
        throw InputError(fmt::format("{}: '{}' is not an axis name", where, escape::one_line(k)));
      // Each axis takes the JSON type of its values: a boolean for causal, a dtype name for dtype,
      // an integer for every size ("128" as a string is refused, not read as 128).
      std::string item;
      if (k == "causal" && (v.is_boolean() || v == 0 || v == 1)) {
        item = v == true || v == 1 ? "1" : "0";
      } else if ((k == "dtype" || k == "pass" || k == "kv_dtype" || k == "kv_scale") && v.is_string() &&
                 v.get<std::string>().find_first_of(",=:;| ") == std::string::npos) {
        item = v.get<std::string>();
      } else if (k == "lengths" && v.is_string() && v.get<std::string>().find_first_of(",=;|") == std::string::npos) {
        item = v.get<std::string>();
      } else if (k != "causal" && k != "dtype" && k != "pass" && k != "kv_dtype" && k != "kv_scale" && k != "lengths" &&
                 (v.is_number_integer() || v.is_number_unsigned()) &&
                 !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX})) {
        item = std::to_string(v.get<int64_t>());
      } else {
        const char* expected = k == "causal"    ? "a boolean or 0/1"
                               : k == "dtype" || k == "kv_dtype" ? "a dtype name"
                               : k == "pass"    ? "a pass name"
                               : k == "kv_scale" ? "a scale granularity"
                               : k == "lengths" ? "a length distribution"
                                                : "an integer";
        throw InputError(fmt::format("{}: value {} of '{}' is not {}", where, dump_json(v), k, expected));
      }
      axes.push_back(fmt::format("{}={}", k, item));
    }
    const std::string text = fmt::format("{}", fmt::join(axes, ","));
    try {
      Shape shape = parse_shape(text);
      if (packed) {
        const auto same = [&](const char* key, int64_t value) {
          if (obj.contains(key) && obj.at(key) != value)
            throw InputError(fmt::format("{} {} does not match seq_lens (which give {})", key, dump_json(obj.at(key)), value));
        };
        same("batch", shape.batch);
        same("seq_q", shape.seq_q);
        same("seq_k", shape.seq_k);
        if (obj.contains("lengths_seed")) shape.lengths_seed = json_int<int64_t>(obj.at("lengths_seed"), "lengths_seed");
        if (obj.contains("lengths")) {
          if (!obj.at("lengths").is_string()) throw InputError("\"lengths\" is not a length distribution");
          const LengthDistribution d = parse_lengths(obj.at("lengths").get<std::string>());
          shape.lengths = d.text;
          if (!d.is_list() && !obj.contains("lengths_seed")) shape.lengths_seed = kDefaultLengthsSeed;
          check_drawn_from(shape, d);
        }
      }
      out.shapes.push_back(std::move(shape));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", where, e.what()));
    }
  }
  reject_repeats(out.shapes, Parser{fmt::format("sweep file '{}'", path)});
  return out;
}

}  // namespace attnprof::core
